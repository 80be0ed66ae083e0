"""The value of a QwenGPU ALU operation on known 32-bit words.

Instruction selection folds operations whose operands are both immediates (the halves of a
64-bit constant, `selp 1, 0`, ...) with this table instead of emitting code.  Words are
unsigned Python ints below 2**32; signed operations read them as two's complement.  The
meaning follows docs/isa.md.
"""

from __future__ import annotations

from qwengpu.isa import MASK32, Cmp, Op


def signed32(word: int) -> int:
    word &= MASK32
    return word - (1 << 32) if word & 0x8000_0000 else word


def _shl(a: int, b: int) -> int:
    return (a << b) & MASK32 if b < 32 else 0


def _shr_u(a: int, b: int) -> int:
    return a >> b if b < 32 else 0


def _shr_s(a: int, b: int) -> int:
    return (signed32(a) >> min(b, 31)) & MASK32


ALU = {
    Op.ADD: lambda a, b: (a + b) & MASK32,
    Op.SUB: lambda a, b: (a - b) & MASK32,
    Op.MUL: lambda a, b: (a * b) & MASK32,
    Op.MULHI_S: lambda a, b: ((signed32(a) * signed32(b)) >> 32) & MASK32,
    Op.MULHI_U: lambda a, b: (a * b) >> 32,
    Op.MIN_S: lambda a, b: min(signed32(a), signed32(b)) & MASK32,
    Op.MIN_U: min,
    Op.MAX_S: lambda a, b: max(signed32(a), signed32(b)) & MASK32,
    Op.MAX_U: max,
    Op.AND: lambda a, b: a & b,
    Op.OR: lambda a, b: a | b,
    Op.XOR: lambda a, b: a ^ b,
    Op.SHL: _shl,
    Op.SHR_U: _shr_u,
    Op.SHR_S: _shr_s,
}

COMPARE = {
    Cmp.EQ: lambda a, b: a == b,
    Cmp.NE: lambda a, b: a != b,
    Cmp.LT: lambda a, b: signed32(a) < signed32(b),
    Cmp.LE: lambda a, b: signed32(a) <= signed32(b),
    Cmp.GT: lambda a, b: signed32(a) > signed32(b),
    Cmp.GE: lambda a, b: signed32(a) >= signed32(b),
    Cmp.LO: lambda a, b: a < b,
    Cmp.LS: lambda a, b: a <= b,
    Cmp.HI: lambda a, b: a > b,
    Cmp.HS: lambda a, b: a >= b,
}

# `cmp(a, b) == MIRRORED[cmp](b, a)`: lets an immediate move to operand B.
MIRRORED = {Cmp.EQ: Cmp.EQ, Cmp.NE: Cmp.NE, Cmp.LT: Cmp.GT, Cmp.LE: Cmp.GE, Cmp.GT: Cmp.LT,
            Cmp.GE: Cmp.LE, Cmp.LO: Cmp.HI, Cmp.LS: Cmp.HS, Cmp.HI: Cmp.LO, Cmp.HS: Cmp.LS}

COMMUTATIVE = {Op.ADD, Op.MUL, Op.MULHI_S, Op.MULHI_U, Op.MIN_S, Op.MIN_U, Op.MAX_S, Op.MAX_U,
               Op.AND, Op.OR, Op.XOR}


def fold(op: Op, a: int, b: int) -> int:
    """`op` applied to two known words."""
    return ALU[op](a & MASK32, b & MASK32) & MASK32


def compare(cmp: Cmp, a: int, b: int) -> bool:
    return bool(COMPARE[cmp](a & MASK32, b & MASK32))


def identity_result(op: Op, b: int) -> bool:
    """True when `op a, b` is just `a` for every a (x + 0, x | 0, x << 0, x & -1, x * 1 ...)."""
    b &= MASK32
    if op in (Op.ADD, Op.SUB, Op.OR, Op.XOR, Op.SHL, Op.SHR_U, Op.SHR_S):
        return b == 0
    if op == Op.AND:
        return b == MASK32
    if op == Op.MUL:
        return b == 1
    return False
