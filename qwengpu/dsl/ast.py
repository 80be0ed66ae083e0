"""The typed syntax tree of an HDL spec, as the parser builds it.

Every node carries `loc`, the place in the source it came from, so that elaboration (and every
later stage of the compiler) can point at the line that caused a problem.  The tree is plain
data: frozen dataclasses with no behaviour.  `qwengpu.dsl.parser` builds it;
`qwengpu.dsl.elaborate` reads it.  docs/hdl.md describes the language these nodes spell.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu.errors import Location


# ---- expressions ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Number:
    value: int
    loc: Location


@dataclass(frozen=True)
class Name:
    name: str
    loc: Location


@dataclass(frozen=True)
class Member:
    """`base.name`: an enum member such as `Op.ADD`."""
    base: "Expr"
    name: str
    loc: Location


@dataclass(frozen=True)
class Index:
    """`base[index]`: an array element, a memory element or one bit."""
    base: "Expr"
    index: "Expr"
    loc: Location


@dataclass(frozen=True)
class Slice:
    """`base[high:low]`: bits high down to low, both included."""
    base: "Expr"
    high: "Expr"
    low: "Expr"
    loc: Location


@dataclass(frozen=True)
class Call:
    """A builtin (`zext`, `pack`, ...), a function of the spec, or a type applied to a constant."""
    name: str
    args: tuple["Expr", ...]
    loc: Location


@dataclass(frozen=True)
class Unary:
    op: str                      # "-", "+", "~", "!"
    operand: "Expr"
    loc: Location


@dataclass(frozen=True)
class Binary:
    op: str                      # the operator as written: "+", ">>>", "==", ...
    left: "Expr"
    right: "Expr"
    loc: Location


@dataclass(frozen=True)
class Ternary:
    condition: "Expr"
    if_true: "Expr"
    if_false: "Expr"
    loc: Location


@dataclass(frozen=True)
class Concat:
    """`{high, ..., low}`: the first part lands in the high bits."""
    parts: tuple["Expr", ...]
    loc: Location


@dataclass(frozen=True)
class MatchArm:
    patterns: tuple["Expr", ...]   # constant expressions; empty for the default arm `_`
    value: "Expr"
    loc: Location


@dataclass(frozen=True)
class Match:
    subject: "Expr"
    arms: tuple[MatchArm, ...]
    loc: Location


Expr = Number | Name | Member | Index | Slice | Call | Unary | Binary | Ternary | Concat | Match


@dataclass(frozen=True)
class TypeRef:
    """`u32`, `bool`, a type alias, or `u(expr)` with a constant width."""
    name: str
    width: Expr | None
    loc: Location


# ---- statements ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """What a `let`, `out` or `<=` names: `x`, or an element `x[i][j]`."""
    name: str
    indices: tuple[Expr, ...]
    loc: Location


@dataclass(frozen=True)
class Let:
    """`let` (local to its stage) or `out` (a pipeline register, seen by later stages)."""
    target: Target
    type: TypeRef | None
    value: Expr
    is_out: bool
    loc: Location


@dataclass(frozen=True)
class Write:
    """`target <= value when enable;`: a state write applied at the end of the step."""
    target: Target
    value: Expr
    enable: Expr | None
    loc: Location


@dataclass(frozen=True)
class EmitField:
    """`emit name = value when condition`: `condition` names a field emitted earlier (the
    field is present only when it holds: docs/hdl.md, "Optional fields")."""
    name: str
    value: Expr                  # `emit x` is short for `emit x = x`
    loc: Location
    when: str | None = None
    when_loc: Location | None = None
    packed: bool = False         # the second of `emit (a, b)`: in the high digit of a's token


@dataclass(frozen=True)
class Emit:
    fields: tuple[EmitField, ...]
    loc: Location


@dataclass(frozen=True)
class Stop:
    """`stop when c;`: when c holds the step emits no record and changes no state."""
    condition: Expr
    loc: Location


@dataclass(frozen=True)
class For:
    """`for var in start..stop { ... }`: the body repeated with var = start .. stop-1."""
    var: str
    start: Expr
    stop: Expr
    body: tuple["Stmt", ...]
    loc: Location


@dataclass(frozen=True)
class Assert:
    condition: Expr
    message: str | None
    loc: Location


@dataclass(frozen=True)
class Return:
    value: Expr
    loc: Location


Stmt = Let | Write | Emit | Stop | For | Assert | Return


# ---- declarations --------------------------------------------------------------------------

@dataclass(frozen=True)
class MachineDecl:
    name: str
    loc: Location


@dataclass(frozen=True)
class ParamDecl:
    name: str
    value: Expr
    doc: str | None              # the comment at the end of the line, if any
    loc: Location


@dataclass(frozen=True)
class ConstDecl:
    name: str
    value: Expr
    doc: str | None
    loc: Location


@dataclass(frozen=True)
class TypeDecl:
    name: str
    type: TypeRef
    loc: Location


@dataclass(frozen=True)
class EnumMember:
    name: str
    value: Expr | None           # None: one more than the previous member
    loc: Location
    text: str | None = None      # the member's string (`ADD = 2 "add rd, ra, B"`), if any


@dataclass(frozen=True)
class EnumDecl:
    name: str
    type: TypeRef
    members: tuple[EnumMember, ...]
    loc: Location


@dataclass(frozen=True)
class FnParam:
    name: str
    type: TypeRef | None         # None: any value, including a constant or an array
    loc: Location


@dataclass(frozen=True)
class FnDecl:
    """A combinational function, inlined at every call.  An expression body is a `Return`."""
    name: str
    params: tuple[FnParam, ...]
    result: TypeRef
    body: tuple[Stmt, ...]
    loc: Location


@dataclass(frozen=True)
class MemoryDecl:
    """Addressable state: `memory name[d0][d1]... : type;`."""
    name: str
    dims: tuple[Expr, ...]
    type: TypeRef
    doc: str | None
    loc: Location


@dataclass(frozen=True)
class RegisterDecl:
    """A plain register: `register name : type = reset;`."""
    name: str
    type: TypeRef
    reset: Expr | None
    doc: str | None
    loc: Location


@dataclass(frozen=True)
class StageDecl:
    name: str
    body: tuple[Stmt, ...]
    loc: Location


Decl = (MachineDecl | ParamDecl | ConstDecl | TypeDecl | EnumDecl | FnDecl | MemoryDecl
        | RegisterDecl | StageDecl | Assert)


@dataclass(frozen=True)
class Spec:
    """A whole spec file: its declarations in source order, and the text they came from."""
    file: str
    source: str
    items: tuple[Decl, ...] = field(default=())
