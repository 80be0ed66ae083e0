"""The QwenGPU instruction set: opcodes, operand fields, encoding and a text form.

The spec is the ISA's one source: `specs/qwengpu.hdl` declares the opcodes with their assembly
forms, decodes the fields and defines the classes (`qwengpu.isa.machine` reads them; for the
default machine `qwengpu/isa/table.py` holds what it read).  This module gives the default
machine's enums (`Op`, `Cmp`, `Space`, `Special`, `Trap`), the `Instruction` the PTX loader
emits and the assembler reads, its encoding into the spec's fields and its text form.
`docs/isa.md` explains the semantics.

An instruction is one 64-bit word: the low 32 bits hold the control fields, the high 32 bits
the immediate (the layout is the spec's; `FIELDS` lists it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from qwengpu.isa import table
from qwengpu.isa.machine import MachineIsa
from qwengpu.isa.syntax import render

LANES = 4
REGS = 15              # r0..r14 are general registers
RZ = 15                # register index 15 reads as zero; writes to it are dropped
PREDS = 7              # p0..p6
PT = 7                 # predicate index 7 reads as true; writes to it are dropped
PARAM_WORDS = 8        # kernel parameter words (ld.param)
MEM_WORDS = 126        # global memory words
PROG_WORDS = 128       # instruction slots
WARPS = 8              # resident warps in one launch (all blocks together)
MASK32 = 0xFFFF_FFFF
# The most records one launch may run (the interpreter and the model runner stop there): the
# PTX loader's address proofs rest on it (`qwengpu.ptx.ranges`, docs/ptx.md "Memory").
MAX_LAUNCH_RECORDS = 1 << 24


# The default machine's ISA, read from specs/qwengpu.hdl (qwengpu/isa/table.py, which
# `python -m qwengpu.isa.generate` writes).  Another spec's: `MachineIsa.from_design`.
DEFAULT_ISA = MachineIsa.from_table(table)


def _enum(name: str, members: dict[str, int], doc: str) -> type[enum.IntEnum]:
    made = enum.IntEnum(name, members, module=__name__)
    made.__doc__ = doc
    return made


Op = _enum("Op", {name: opcode.value for name, opcode in DEFAULT_ISA.opcodes.items()},
           "Opcodes (the spec's `enum Op`).  Opcode 0 is invalid: running into unloaded code "
           "traps.")
Cmp = _enum("Cmp", DEFAULT_ISA.enums["Cmp"], "Comparison codes of SETP, held in field c.")
Space = _enum("Space", DEFAULT_ISA.enums["Space"],
              "Address spaces of loads, stores and atomics, held in field space.")
Special = _enum("Special", DEFAULT_ISA.enums["Special"], "Special registers read by S2R.")
Trap = _enum("Trap", DEFAULT_ISA.enums["Trap"],
             "Trap codes written into a record when the machine faults (0: no trap).")
TRAP_TEXTS = {Trap[name]: text for name, text in DEFAULT_ISA.enum_texts["Trap"].items()}

# Opcode classes (the spec's decode signals that depend on the opcode alone).
WRITES_REG = {Op[name] for name in DEFAULT_ISA.opcodes_in("writes_register")}
WRITES_PRED = {Op[name] for name in DEFAULT_ISA.opcodes_in("writes_predicate")}
SERIAL = {Op[name] for name in DEFAULT_ISA.opcodes_in("is_serial")}
ACCESSES_MEMORY = {Op[name] for name in DEFAULT_ISA.opcodes_in("accesses_memory")}
# Opcodes of the form `name rd, ra, B`.
BINARY_ALU = {Op[name] for name, opcode in DEFAULT_ISA.opcodes.items()
              if [o.text for o in opcode.syntax.operands] == ["rd", "ra", "B"]}

FIELDS = tuple((f.name, f.low, f.width) for f in DEFAULT_ISA.fields.values() if f.name != "imm")


@dataclass(frozen=True)
class Instruction:
    """One machine instruction.  Unused fields stay at their defaults (RZ / PT).  `op` is an
    `Op`, or a plain opcode number of another spec's ISA."""

    op: Op
    d: int = RZ
    a: int = RZ
    b: int = RZ
    c: int = 0
    bimm: bool = False
    imm: int = 0
    pg: int = PT
    pn: bool = False
    space: int = 0

    def encode(self, isa: MachineIsa = DEFAULT_ISA) -> int:
        word = 0
        for spec_field in isa.fields.values():
            if spec_field.name == "imm":
                continue
            value = int(getattr(self, spec_field.name))
            if not 0 <= value < (1 << spec_field.width):
                raise ValueError(f"field {spec_field.name}={value} does not fit in "
                                 f"{spec_field.width} bits")
            word |= value << spec_field.low
        return word | ((self.imm & MASK32) << isa.fields["imm"].low)

    @classmethod
    def decode(cls, word: int, isa: MachineIsa = DEFAULT_ISA) -> "Instruction":
        values = {f.name: (word >> f.low) & ((1 << f.width) - 1) for f in isa.fields.values()}
        op = values.pop("op")
        if isa is DEFAULT_ISA:
            op = Op(op) if op in Op._value2member_map_ else Op.INVALID
        for flag in ("bimm", "pn"):
            if flag in values:
                values[flag] = bool(values[flag])
        known = {name for name in cls.__dataclass_fields__}
        return cls(op=op, **{name: value for name, value in values.items() if name in known})

    def with_imm(self, imm: int) -> "Instruction":
        return replace(self, imm=imm & MASK32)

    def __str__(self) -> str:
        return format_instruction(self)


def _reg(index: int) -> str:
    return "rz" if index == RZ else f"r{index}"


def _pred(index: int) -> str:
    return "pt" if index == PT else f"p{index}"


def _signed(value: int) -> int:
    value &= MASK32
    return value - (1 << 32) if value & 0x8000_0000 else value


class _MachineRenderer:
    """How machine code prints its operands (`qwengpu.isa.syntax.render`)."""

    def __init__(self, ins: Instruction):
        self.ins = ins

    def field(self, name: str) -> int:
        return int(getattr(self.ins, name))

    def reg(self, field: str) -> str:
        return _reg(self.field(field))

    def pred(self, field: str) -> str:
        return _pred(self.field(field))

    def operand_b(self) -> str:
        return str(_signed(self.ins.imm)) if self.ins.bimm else _reg(self.ins.b)

    def address(self) -> str:
        return f"[{_reg(self.ins.a)}{_signed(self.ins.imm):+d}]"

    def immediate(self) -> str:
        return str(self.ins.imm)

    def target(self) -> str:
        return str(self.ins.imm)


def guard_text(pg: int, pn: bool) -> str:
    return f"@{'!' if pn else ''}{_pred(pg)} " if pg != PT or pn else ""


def format_instruction(ins: Instruction, isa: MachineIsa = DEFAULT_ISA) -> str:
    """The assembler text of one instruction (the inverse of the assembler's parse), through
    the assembly form the spec gives its opcode."""
    opcode = isa.by_value.get(int(ins.op))
    if opcode is None:
        return guard_text(ins.pg, ins.pn) + f"op{int(ins.op)}"
    body = render(opcode.syntax, _MachineRenderer(ins), isa.enums, isa.enum_texts)
    return guard_text(ins.pg, ins.pn) + body
