"""Virtual machine code: QwenGPU instructions over unlimited virtual registers.

Instruction selection (`qwengpu.ptx.select`) turns each PTX instruction into a few `VInstr`s
whose operands are virtual registers (`VReg`, `VPred`), immediates, and symbolic immediates
resolved later: branch targets (`LabelRef`), parameter words (`ParamRef`) and variable
addresses (`SymbolRef`).  Dead-code removal and register allocation work on this form, then
`qwengpu.ptx.link` turns it into `qwengpu.isa.Instruction`s.

A 64-bit PTX register `%rd1` becomes two virtual registers `%rd1.lo` and `%rd1.hi`; temporaries
of a lowering are named `$t1`, `$t2`, ... (predicates `$p1`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu.errors import Location
from qwengpu.isa import DEFAULT_ISA, SERIAL, Cmp, Op
from qwengpu.isa.syntax import render
from qwengpu.ptx import ir


@dataclass(frozen=True, order=True)
class VReg:
    """A virtual 32-bit register."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, order=True)
class VPred:
    """A virtual predicate register."""

    name: str

    def __str__(self) -> str:
        return self.name


ZERO = VReg("rz")      # the machine's zero register: reads 0, never allocated
TRUE = VPred("pt")     # the machine's true predicate: reads 1, never allocated


@dataclass(frozen=True)
class LabelRef:
    """A branch target, resolved to an instruction index by the linker."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ParamRef:
    """Word `word` of kernel parameter `param`; the linker gives it a parameter slot."""

    param: str
    word: int

    def __str__(self) -> str:
        return f"{self.param}+{4 * self.word}" if self.word else self.param


@dataclass(frozen=True)
class SymbolRef:
    """The byte address of a memory variable plus an offset, known once memory is laid out."""

    symbol: str
    offset: int = 0

    def __str__(self) -> str:
        return f"&{self.symbol}{self.offset:+d}" if self.offset else f"&{self.symbol}"


@dataclass(frozen=True)
class FormedAddress:
    """Where a trap report finds the address an access's checks altered (docs/ptx.md,
    "Traps"): the instruction that reads the address's low word in its operand a, the one that
    reads its high word so (None: the high word is `high_value`), and the bytes of the whole
    access (its natural alignment)."""

    low: "VInstr"
    high: "VInstr | None" = field(default=None, compare=False)
    high_value: int = 0
    size_bytes: int = 4


Immediate = int | SymbolRef
Source = VReg | Immediate      # what an operand B may be


@dataclass
class VInstr:
    """One machine instruction over virtual registers.

    `b` is a register or an immediate (the encoding's `bimm`); `imm` is the load/store offset,
    the branch target, the special-register index or the parameter word.  `full_def` marks a
    guarded write that still counts as a whole definition (a temporary that is only read under
    the same guard); other guarded writes keep the old value in lanes whose guard fails, so they
    also read their destination.  `is_move` marks a copy `d = a` the allocator may coalesce;
    `note` says why the allocator added an instruction (spill code, `qwengpu.ptx.spill`).
    """

    op: Op
    d: VReg | VPred | None = None
    a: VReg | VPred | None = None
    b: VReg | VPred | Immediate | None = None
    c: VReg | VPred | Cmp | None = None
    imm: int | LabelRef | ParamRef | SymbolRef = 0
    guard: VPred = TRUE
    guard_negated: bool = False
    space: int = 0
    full_def: bool = False
    is_move: bool = False
    origin: ir.Instruction | None = field(default=None, repr=False, compare=False)
    # an access whose address a check altered: where the address the kernel formed is read
    formed: FormedAddress | None = field(default=None, repr=False, compare=False)
    # what the register allocator added it for (`spill %r5`, `reload %r5`), for the listing
    note: str = field(default="", compare=False)

    @property
    def loc(self) -> Location | None:
        return self.origin.loc if self.origin is not None else None

    @property
    def guarded(self) -> bool:
        return self.guard != TRUE or self.guard_negated

    @property
    def has_side_effect(self) -> bool:
        """Instructions that must stay even when nothing reads what they write."""
        return self.op in (Op.ST, Op.BRA, Op.EXIT, Op.LD, Op.INVALID, Op.BAR) or \
            self.op in SERIAL

    def defs(self) -> list[VReg | VPred]:
        if self.d is None or self.d in (ZERO, TRUE):
            return []
        return [self.d]

    def uses(self) -> list[VReg | VPred]:
        """Registers and predicates read, including the destination of a partial write."""
        used = []
        for operand in (self.a, self.b):
            if isinstance(operand, (VReg, VPred)):
                used.append(operand)
        if isinstance(self.c, (VReg, VPred)):
            used.append(self.c)
        used.append(self.guard)
        if self.guarded and not self.full_def and self.d is not None:
            used.append(self.d)
        return [item for item in used if item not in (ZERO, TRUE)]

    def __str__(self) -> str:
        return format_vinstr(self)


@dataclass(frozen=True)
class VLabel:
    """A branch target in the virtual code."""

    name: str

    def __str__(self) -> str:
        return f"{self.name}:"


VCode = list  # of VInstr | VLabel


class _VirtualRenderer:
    """How virtual code prints its operands, through the spec's assembly forms
    (`qwengpu.isa.syntax.render`): registers by their virtual names, symbolic immediates by
    what they stand for."""

    def __init__(self, ins: VInstr):
        self.ins = ins

    def field(self, name: str) -> int:
        value = getattr(self.ins, name, 0)
        return int(value) if isinstance(value, int) else 0

    def reg(self, field: str) -> str:
        return str(getattr(self.ins, field))

    pred = reg

    def operand_b(self) -> str:
        return str(self.ins.b)

    def address(self) -> str:
        return f"[{self.ins.a}{_offset(self.ins.imm)}]"

    def immediate(self) -> str:
        return str(self.ins.imm)

    target = immediate


def format_vinstr(ins: VInstr) -> str:
    """A readable text form: the machine's assembler text over virtual registers."""
    guard = ""
    if ins.guarded:
        guard = f"@{'!' if ins.guard_negated else ''}{ins.guard} "
    opcode = DEFAULT_ISA.by_value[int(ins.op)]
    return guard + render(opcode.syntax, _VirtualRenderer(ins), DEFAULT_ISA.enums,
                          DEFAULT_ISA.enum_texts)


def _offset(imm) -> str:
    if isinstance(imm, int):
        return f"{imm:+d}" if imm else ""
    return f"+{imm}"


def format_vcode(code: VCode) -> str:
    return "\n".join(str(item) if isinstance(item, VLabel) else "    " + str(item)
                     for item in code)
