"""64-bit integer arithmetic on the 32-bit machine: each value is a (low, high) word pair.

These helpers take pairs of sources (`Selector.pair`) and return pairs of sources, computing
into temporaries and folding known words; the handlers in `select_integer` commit the result.
Carries and borrows are a comparison of the low words and a guarded +1/-1 on the high word.
Address arithmetic uses the same code: when only the low word of an address is ever read (the
usual case), dead-code removal drops the high-word instructions afterwards.
"""

from __future__ import annotations

from qwengpu.isa import MASK32, Cmp, Op
from qwengpu.ptx.selector import Selector, operand_b
from qwengpu.ptx.vcode import Source, VPred, VReg

Pair = tuple[Source, Source]

# A 64-bit comparison is decided by the high words unless they are equal: then by the low
# words, compared unsigned.  (high-word comparison, low-word comparison) per PTX comparison.
_ORDERED = {
    Cmp.LT: (Cmp.LT, Cmp.LO), Cmp.LE: (Cmp.LT, Cmp.LS),
    Cmp.GT: (Cmp.GT, Cmp.HI), Cmp.GE: (Cmp.GT, Cmp.HS),
    Cmp.LO: (Cmp.LO, Cmp.LO), Cmp.LS: (Cmp.LO, Cmp.LS),
    Cmp.HI: (Cmp.HI, Cmp.HI), Cmp.HS: (Cmp.HI, Cmp.HS),
}


def is_zero(source: Source) -> bool:
    return isinstance(source, int) and source & MASK32 == 0


def add(sel: Selector, a: Pair, b: Pair) -> Pair:
    (a_low, a_high), (b_low, b_high) = a, b
    if isinstance(a_low, int) and not isinstance(b_low, int):
        (a_low, a_high), (b_low, b_high) = (b_low, b_high), (a_low, a_high)
    if isinstance(a_low, int) and isinstance(b_low, int):
        total = (a_low + b_low)
        return sel.alu(Op.ADD, total & MASK32, 0), sel.alu(Op.ADD, a_high,
                                                            sel.alu(Op.ADD, b_high, total >> 32))
    low = sel.alu(Op.ADD, a_low, b_low)
    high = sel.alu(Op.ADD, a_high, b_high)
    if is_zero(b_low):
        return low, high
    # The sum wrapped exactly when it is below an addend.
    carry = sel.compare(Cmp.LO, low, b_low)
    high = _adjust(sel, high, carry, 1)
    return low, high


def sub(sel: Selector, a: Pair, b: Pair) -> Pair:
    (a_low, a_high), (b_low, b_high) = a, b
    low = sel.alu(Op.SUB, a_low, b_low)
    high = sel.alu(Op.SUB, a_high, b_high)
    if is_zero(b_low):
        return low, high
    if isinstance(a_low, int) and isinstance(b_low, int):
        return low, sel.alu(Op.SUB, high, 1 if a_low < b_low else 0)
    borrow = sel.compare(Cmp.LO, a_low, b_low)
    return low, _adjust(sel, high, borrow, -1)


def _adjust(sel: Selector, high: Source, condition: VPred, step: int) -> VReg:
    """`high + step` in lanes where `condition` holds, `high` elsewhere (into a temporary)."""
    result = sel.temp()
    sel.move(high, result)
    sel.emit(Op.ADD, d=result, a=result, b=step & MASK32, guard=(condition, False))
    return result


def negate(sel: Selector, a: Pair) -> Pair:
    return sub(sel, (0, 0), a)


def multiply_low(sel: Selector, a: Pair, b: Pair) -> Pair:
    """The low 64 bits of a 64 x 64 product."""
    (a_low, a_high), (b_low, b_high) = a, b
    low = sel.alu(Op.MUL, a_low, b_low)
    high = sel.alu(Op.MULHI_U, a_low, b_low)
    high = multiply_add(sel, a_low, b_high, high)
    high = multiply_add(sel, a_high, b_low, high)
    return low, high


def multiply_add(sel: Selector, a: Source, b: Source, addend: Source) -> Source:
    """`a * b + addend` (mod 2^32), folding zero and constant factors."""
    if is_zero(a) or is_zero(b):
        return addend
    if isinstance(a, int) and isinstance(b, int):
        return sel.alu(Op.ADD, addend, (a * b) & MASK32)
    if is_zero(addend):
        return sel.alu(Op.MUL, a, b)
    if not isinstance(a, VReg):
        a, b = b, a
    result = sel.temp()
    sel.emit(Op.MAD, d=result, a=sel.register(a), b=operand_b(b), c=sel.register(addend))
    return result


def multiply_wide(sel: Selector, a: Source, b: Source, signed: bool) -> Pair:
    """The full 64-bit product of two 32-bit words."""
    return sel.alu(Op.MUL, a, b), sel.alu(Op.MULHI_S if signed else Op.MULHI_U, a, b)


def bitwise(sel: Selector, op: Op, a: Pair, b: Pair) -> Pair:
    return sel.alu(op, a[0], b[0]), sel.alu(op, a[1], b[1])


def shift_left(sel: Selector, a: Pair, amount: Source) -> Pair:
    low, high = a
    if isinstance(amount, int):
        n = min(amount & MASK32, 64)
        if n == 0:
            return a
        if n >= 64:
            return 0, 0
        if n >= 32:
            return 0, sel.alu(Op.SHL, low, n - 32)
        spill = sel.alu(Op.SHR_U, low, 32 - n)
        return sel.alu(Op.SHL, low, n), sel.alu(Op.OR, sel.alu(Op.SHL, high, n), spill)
    # Register amount: the machine's shifts give 0 for amounts >= 32, which covers every case
    # at once; 32 - n and n - 32 wrap to huge (shift-to-zero) amounts on the wrong side.
    up = _thirty_two_minus(sel, amount)
    down = sel.alu(Op.ADD, amount, (-32) & MASK32)
    high_result = sel.alu(Op.OR, sel.alu(Op.SHL, high, amount), sel.alu(Op.SHR_U, low, up))
    high_result = sel.alu(Op.OR, high_result, sel.alu(Op.SHL, low, down))
    return sel.alu(Op.SHL, low, amount), high_result


def shift_right(sel: Selector, a: Pair, amount: Source, signed: bool) -> Pair:
    low, high = a
    op = Op.SHR_S if signed else Op.SHR_U
    if isinstance(amount, int):
        n = min(amount & MASK32, 64)
        if n == 0:
            return a
        fill = sel.alu(Op.SHR_S, high, 31) if signed else 0
        if n >= 64:
            return fill, fill
        if n >= 32:
            return sel.alu(op, high, n - 32), fill
        spill = sel.alu(Op.SHL, high, 32 - n)
        return sel.alu(Op.OR, sel.alu(Op.SHR_U, low, n), spill), sel.alu(op, high, n)
    up = _thirty_two_minus(sel, amount)
    down = sel.alu(Op.ADD, amount, (-32) & MASK32)
    near = sel.alu(Op.OR, sel.alu(Op.SHR_U, low, amount), sel.alu(Op.SHL, high, up))
    far = sel.alu(op, high, down)
    if not signed:
        return sel.alu(Op.OR, near, far), sel.alu(Op.SHR_U, high, amount)
    # An arithmetic shift of the high word by a "negative" amount fills with the sign, so the
    # two halves are chosen rather than combined.
    below_32 = sel.compare(Cmp.LO, amount, 32)
    low_result = sel.temp()
    sel.emit(Op.SELP, d=low_result, a=sel.register(near), b=operand_b(far), c=below_32)
    return low_result, sel.alu(Op.SHR_S, high, amount)


def _thirty_two_minus(sel: Selector, amount: Source) -> Source:
    return sel.alu(Op.ADD, sel.alu(Op.SUB, 0, amount), 32)


def compare(sel: Selector, cmp: Cmp, a: Pair, b: Pair, into: VPred | None = None) -> VPred:
    """A predicate `cmp(a, b)` on 64-bit pairs (`cmp` already signed or unsigned)."""
    (a_low, a_high), (b_low, b_high) = a, b
    if cmp in (Cmp.EQ, Cmp.NE):
        combine = Op.PAND if cmp == Cmp.EQ else Op.POR
        low = sel.compare(cmp, a_low, b_low)
        high = sel.compare(cmp, a_high, b_high)
        return sel.predicate_op(combine, low, high, into=into)
    high_cmp, low_cmp = _ORDERED[cmp]
    decided = sel.compare(high_cmp, a_high, b_high)
    tied = sel.compare(Cmp.EQ, a_high, b_high)
    low = sel.compare(low_cmp, a_low, b_low)
    tie_break = sel.predicate_op(Op.PAND, tied, low)
    return sel.predicate_op(Op.POR, decided, tie_break, into=into)


def select(sel: Selector, condition: VPred, a: Pair, b: Pair) -> Pair:
    """`condition ? a : b` word by word."""
    result = []
    for a_word, b_word in zip(a, b):
        if a_word == b_word:
            result.append(a_word)
            continue
        word = sel.temp()
        sel.emit(Op.SELP, d=word, a=sel.register(a_word), b=operand_b(b_word), c=condition)
        result.append(word)
    return result[0], result[1]


def minimum_maximum(sel: Selector, a: Pair, b: Pair, signed: bool, is_min: bool) -> Pair:
    cmp = (Cmp.LT if signed else Cmp.LO) if is_min else (Cmp.GT if signed else Cmp.HI)
    return select(sel, compare(sel, cmp, a, b), a, b)


def absolute(sel: Selector, a: Pair) -> Pair:
    negative = sel.compare(Cmp.LT, a[1], 0)
    return select(sel, negative, negate(sel, a), a)
