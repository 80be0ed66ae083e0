"""The QwenGPU v1 instruction set: opcodes, operand fields, encoding and a text form.

This module is the one contract shared by the HDL spec (`specs/qwengpu.hdl` decodes these
bits), the PTX loader (which emits `Instruction`s), the assembler of `hdlc sim` and the trace
printer.  `docs/isa.md` explains the semantics; the numbers here are the encoding.

An instruction is one 64-bit word: the low 32 bits hold the control fields, the high 32 bits
the immediate.  Field layout of the low word (bit 0 is the least significant):

    bits  0..5   op     opcode (`Op`)
    bits  6..9   d      destination register (or destination predicate for SETP/P*)
    bits 10..13  a      source register a (or predicate a for P*)
    bits 14..17  b      source register b (or predicate b for P*)
    bits 18..21  c      source register c (MAD addend, SELP selector predicate, SETP compare)
    bit  22      bimm   operand B is the immediate instead of register b
    bits 23..25  pg     guard predicate (7 = PT, always true)
    bit  26      pn     guard is negated
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

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


class Op(enum.IntEnum):
    """Opcodes.  Opcode 0 is invalid on purpose: running into unloaded code traps."""

    INVALID = 0
    NOP = 1
    ADD = 2        # d = a + B
    SUB = 3        # d = a - B
    MUL = 4        # d = low 32 bits of a * B
    MULHI_S = 5    # d = high 32 bits of signed a * B
    MULHI_U = 6    # d = high 32 bits of unsigned a * B
    MAD = 7        # d = low 32 bits of a * B + c
    ABS = 8        # d = |a| (abs(INT_MIN) = INT_MIN)
    MIN_S = 9
    MIN_U = 10
    MAX_S = 11
    MAX_U = 12
    AND = 13
    OR = 14
    XOR = 15
    SHL = 16       # d = a << B, 0 when B >= 32 (B unsigned)
    SHR_U = 17     # d = a >> B logical, 0 when B >= 32
    SHR_S = 18     # d = a >> B arithmetic, sign fill when B >= 32
    SETP = 19      # pred d = compare[c](a, B)
    SELP = 20      # d = pred c ? a : B
    PAND = 21      # pred d = pred a & pred b
    POR = 22
    PXOR = 23
    PNOT = 24      # pred d = !pred a
    LD = 25        # d = mem[(a + imm) / 4]
    ST = 26        # mem[(a + imm) / 4] = b
    BRA = 27       # lanes whose guard holds jump to imm
    EXIT = 28      # lanes whose guard holds finish
    S2R = 29       # d = special register imm (`Special`)
    LDP = 30       # d = params[imm]


class Cmp(enum.IntEnum):
    """Comparison codes of SETP, held in field c.  LO/LS/HI/HS are the unsigned ones."""

    EQ = 0
    NE = 1
    LT = 2
    LE = 3
    GT = 4
    GE = 5
    LO = 6
    LS = 7
    HI = 8
    HS = 9


class Special(enum.IntEnum):
    """Special registers read by S2R (the immediate selects one)."""

    TID = 0        # %tid.x
    NTID = 1       # %ntid.x
    CTAID = 2      # %ctaid.x
    NCTAID = 3     # %nctaid.x
    LANEID = 4     # %laneid
    WARPID = 5     # warp index within the block (%warpid analogue)


class Trap(enum.IntEnum):
    """Trap codes written into a record when the machine faults (0: no trap)."""

    NONE = 0
    BAD_OPCODE = 1
    ADDRESS_RANGE = 2      # word address >= MEM_WORDS
    MISALIGNED = 3         # byte address not a multiple of 4
    BAD_OPERAND = 4        # LDP/S2R index out of range


# Which fields each opcode uses: writes a register, writes a predicate, and its operands.
WRITES_REG = {Op.ADD, Op.SUB, Op.MUL, Op.MULHI_S, Op.MULHI_U, Op.MAD, Op.ABS, Op.MIN_S,
              Op.MIN_U, Op.MAX_S, Op.MAX_U, Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHR_U,
              Op.SHR_S, Op.SELP, Op.LD, Op.S2R, Op.LDP}
WRITES_PRED = {Op.SETP, Op.PAND, Op.POR, Op.PXOR, Op.PNOT}
BINARY_ALU = {Op.ADD, Op.SUB, Op.MUL, Op.MULHI_S, Op.MULHI_U, Op.MIN_S, Op.MIN_U, Op.MAX_S,
              Op.MAX_U, Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHR_U, Op.SHR_S}

FIELDS = (("op", 0, 6), ("d", 6, 4), ("a", 10, 4), ("b", 14, 4), ("c", 18, 4),
          ("bimm", 22, 1), ("pg", 23, 3), ("pn", 26, 1))


@dataclass(frozen=True)
class Instruction:
    """One machine instruction.  Unused fields stay at their defaults (RZ / PT)."""

    op: Op
    d: int = RZ
    a: int = RZ
    b: int = RZ
    c: int = 0
    bimm: bool = False
    imm: int = 0
    pg: int = PT
    pn: bool = False

    def encode(self) -> int:
        word = 0
        for name, shift, width in FIELDS:
            value = int(getattr(self, name))
            if not 0 <= value < (1 << width):
                raise ValueError(f"field {name}={value} does not fit in {width} bits")
            word |= value << shift
        return word | ((self.imm & MASK32) << 32)

    @classmethod
    def decode(cls, word: int) -> "Instruction":
        values = {name: (word >> shift) & ((1 << width) - 1) for name, shift, width in FIELDS}
        op = values.pop("op")
        try:
            op = Op(op)
        except ValueError:
            op = Op.INVALID
        return cls(op=op, bimm=bool(values.pop("bimm")), pn=bool(values.pop("pn")),
                   imm=(word >> 32) & MASK32, **values)

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


def format_instruction(ins: Instruction) -> str:
    """The assembler text of one instruction (the inverse of the assembler's parse)."""
    guard = ""
    if ins.pg != PT or ins.pn:
        guard = f"@{'!' if ins.pn else ''}{_pred(ins.pg)} "
    name = ins.op.name.lower().replace("_", ".")
    operand_b = str(_signed(ins.imm)) if ins.bimm else _reg(ins.b)
    op = ins.op
    if op in (Op.INVALID, Op.NOP, Op.EXIT):
        body = name
    elif op == Op.ABS:
        body = f"{name} {_reg(ins.d)}, {_reg(ins.a)}"
    elif op in BINARY_ALU:
        body = f"{name} {_reg(ins.d)}, {_reg(ins.a)}, {operand_b}"
    elif op == Op.MAD:
        body = f"{name} {_reg(ins.d)}, {_reg(ins.a)}, {operand_b}, {_reg(ins.c)}"
    elif op == Op.SETP:
        cmp = Cmp(ins.c).name.lower() if ins.c < len(Cmp) else f"cmp{ins.c}"
        body = f"setp.{cmp} {_pred(ins.d)}, {_reg(ins.a)}, {operand_b}"
    elif op == Op.SELP:
        body = f"{name} {_reg(ins.d)}, {_reg(ins.a)}, {operand_b}, {_pred(ins.c)}"
    elif op in (Op.PAND, Op.POR, Op.PXOR):
        body = f"{name} {_pred(ins.d)}, {_pred(ins.a)}, {_pred(ins.b)}"
    elif op == Op.PNOT:
        body = f"{name} {_pred(ins.d)}, {_pred(ins.a)}"
    elif op == Op.LD:
        body = f"{name} {_reg(ins.d)}, [{_reg(ins.a)}{_signed(ins.imm):+d}]"
    elif op == Op.ST:
        body = f"{name} [{_reg(ins.a)}{_signed(ins.imm):+d}], {_reg(ins.b)}"
    elif op == Op.BRA:
        body = f"{name} {ins.imm}"
    elif op == Op.S2R:
        special = Special(ins.imm).name.lower() if ins.imm < len(Special) else str(ins.imm)
        body = f"{name} {_reg(ins.d)}, {special}"
    elif op == Op.LDP:
        body = f"{name} {_reg(ins.d)}, {ins.imm}"
    else:  # pragma: no cover - every opcode is listed above
        raise AssertionError(op)
    return guard + body
