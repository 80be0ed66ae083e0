"""Folding QwenGPU operations on known 32-bit words, and the algebra selection relies on.

Instruction selection folds operations whose operands are both immediates (the halves of a
64-bit constant, `selp 1, 0`, ...) instead of emitting code.  The value is the spec's own:
`qwengpu.isa.evaluate` runs the instruction on the reference interpreter, so the ALU's meaning
is written once, in specs/qwengpu.hdl.  What stays here are facts about the operations that
selection uses to rewrite them (mirrored comparisons, commutativity, identities); words are
unsigned Python ints below 2**32.
"""

from __future__ import annotations

from qwengpu.isa import MASK32, Cmp, Op
from qwengpu.isa.evaluate import alu_result, comparison


def signed32(word: int) -> int:
    word &= MASK32
    return word - (1 << 32) if word & 0x8000_0000 else word


# `cmp(a, b) == MIRRORED[cmp](b, a)`: lets an immediate move to operand B.
MIRRORED = {Cmp.EQ: Cmp.EQ, Cmp.NE: Cmp.NE, Cmp.LT: Cmp.GT, Cmp.LE: Cmp.GE, Cmp.GT: Cmp.LT,
            Cmp.GE: Cmp.LE, Cmp.LO: Cmp.HI, Cmp.LS: Cmp.HS, Cmp.HI: Cmp.LO, Cmp.HS: Cmp.LS}

COMMUTATIVE = {Op.ADD, Op.MUL, Op.MULHI_S, Op.MULHI_U, Op.MIN_S, Op.MIN_U, Op.MAX_S, Op.MAX_U,
               Op.AND, Op.OR, Op.XOR}


def fold(op: Op, a: int, b: int, c: int = 0) -> int:
    """`op` applied to known words (c where it reads one): the spec's own ALU computes it."""
    return alu_result(op, a & MASK32, b & MASK32, c & MASK32)


def compare(cmp: Cmp, a: int, b: int) -> bool:
    """`setp.cmp` on two known words: the spec's own comparison."""
    return comparison(cmp, a & MASK32, b & MASK32)


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
