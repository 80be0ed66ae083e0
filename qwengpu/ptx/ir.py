"""The parsed form of a PTX module: kernels, their parameters, registers and instructions.

`qwengpu.ptx.parser` builds these from the Lark tree; instruction selection
(`qwengpu.ptx.select`) reads them.  Every instruction and operand keeps its `Location` so that a
late error (register pressure, an unsupported operand) can still point at the PTX text.  Nothing
here knows about the machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu.errors import Location

# Bit widths of the PTX scalar types the front-end understands.
TYPE_WIDTHS = {
    "b8": 8, "b16": 16, "b32": 32, "b64": 64, "b128": 128,
    "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "f16": 16, "f16x2": 32, "bf16": 16, "bf16x2": 32, "f32": 32, "f64": 64,
    "e4m3": 8, "e5m2": 8,
    "pred": 1,
}
INTEGER_TYPES = {name for name in TYPE_WIDTHS if name[0] in "bus" and name != "b128"}


def type_width(type_name: str) -> int:
    """Width in bits of a PTX type name without its dot (`"u32"` -> 32)."""
    return TYPE_WIDTHS[type_name]


def is_signed(type_name: str) -> bool:
    return type_name.startswith("s")


# ---- operands ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Register:
    """A register operand, `%r1`, or a special register such as `%tid.x`."""

    name: str
    loc: Location


@dataclass(frozen=True)
class NegatedRegister:
    """`!%p1` as a predicate source."""

    name: str
    loc: Location


@dataclass(frozen=True)
class RegisterPair:
    """`%p1|%p2`: the two destinations of `setp`."""

    first: str
    second: str
    loc: Location


@dataclass(frozen=True)
class Immediate:
    """An integer literal, or the bits of a float literal (`0f3F800000`)."""

    value: int
    text: str
    loc: Location


@dataclass(frozen=True)
class Symbol:
    """A name used as an operand: a label, a parameter, a variable or a function."""

    name: str
    loc: Location


@dataclass(frozen=True)
class Memory:
    """`[base]` or `[base+offset]`; the base is a register, a symbol or an immediate."""

    base: Register | Symbol | Immediate
    offset: int
    loc: Location


@dataclass(frozen=True)
class Vector:
    """`{%r1, %r2}`; an element is a register, an immediate, or None for the sink `_`."""

    elements: tuple
    loc: Location


@dataclass(frozen=True)
class OperandList:
    """`(a, b)`: the parenthesised lists of `call`."""

    elements: tuple
    loc: Location


Operand = Register | NegatedRegister | RegisterPair | Immediate | Symbol | Memory | Vector | OperandList


# ---- statements ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Guard:
    """`@%p1` or `@!%p1` in front of an instruction."""

    register: str
    negated: bool
    loc: Location


@dataclass(frozen=True)
class Instruction:
    """One PTX instruction: `opcode.modifier.modifier operand, ...;` with an optional guard."""

    opcode: str
    modifiers: tuple[str, ...]
    operands: tuple
    guard: Guard | None
    loc: Location
    text: str
    cuda_loc: Location | None = None

    @property
    def full_opcode(self) -> str:
        return ".".join((self.opcode, *self.modifiers))

    def has(self, *modifiers: str) -> bool:
        return any(modifier in self.modifiers for modifier in modifiers)


@dataclass(frozen=True)
class Label:
    name: str
    loc: Location


Statement = Instruction | Label


@dataclass(frozen=True)
class Param:
    """A kernel parameter.  `size_bytes` is the array size of `.b8 name[N]` parameters.
    `space` is "param", or "reg" for a `.func`'s register parameter (`.reg .b32 x`)."""

    name: str
    type: str
    loc: Location
    array_length: int | None = None
    align: int | None = None
    space: str = "param"

    @property
    def size_bytes(self) -> int:
        element = max(type_width(self.type) // 8, 1)
        return element * (self.array_length if self.array_length is not None else 1)

    @property
    def is_array(self) -> bool:
        return self.array_length is not None


@dataclass(frozen=True)
class Variable:
    """A `.global`, `.const`, `.shared` or `.local` variable, with its initial bytes if any."""

    state_space: str
    name: str
    type: str
    loc: Location
    array_length: int | None = None
    initializer: tuple | None = None
    align: int | None = None
    extern: bool = False

    @property
    def element_bytes(self) -> int:
        return max(type_width(self.type) // 8, 1)

    @property
    def size_bytes(self) -> int:
        return self.element_bytes * (self.array_length if self.array_length is not None else 1)


@dataclass
class Kernel:
    """One `.entry` or `.func`: its parameters (a `.func`'s return parameters too), declared
    registers (name -> type) and body."""

    name: str
    params: list[Param]
    registers: dict[str, str]
    body: list[Statement]
    variables: dict[str, Variable]
    loc: Location
    is_function: bool = False
    returns: list[Param] = field(default_factory=list)


@dataclass
class Module:
    """A whole PTX file."""

    path: str
    source: str
    compiled_from: str | None = None      # the .cu file nvcc made `source` of, in memory
    version: str | None = None
    target: str | None = None
    address_size: int = 64
    kernels: dict[str, Kernel] = field(default_factory=dict)
    functions: dict[str, Kernel] = field(default_factory=dict)
    variables: dict[str, Variable] = field(default_factory=dict)
    files: dict[int, str] = field(default_factory=dict)
    cuda_lines: object = field(default=None, repr=False)   # qwengpu.ptx.cuda_lines.CudaLines
