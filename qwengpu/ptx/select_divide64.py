"""Instruction selection for 64-bit `div` and `rem` (`.u64`, `.s64`) over word pairs.

Restoring division, as the 32-bit one in `select_extended`, on (low, high) pairs: a loop of 64
steps that shifts the dividend's top bit into a 64-bit running remainder and the quotient bit
into the dividend's bottom:

    top = q.hi >> 31;  r = (r << 1) | top;  q <<= 1          (funnel shifts across the words)
    if r >=u d:  r -= d (with the borrow into the high word);  q |= 1

about 25 instructions a step, so a division costs some 1,600 records per warp: exact, slow.
Unsigned division by a power of two is a shift (`div`) or a mask (`rem`).  Signed division
divides the magnitudes and fixes the signs: the quotient is negated when the signs differ,
the remainder takes the dividend's sign.

Division by zero gives what the loop gives, as the 32-bit division does: `.u64` quotient
2^64 - 1 and remainder the dividend; `.s64` quotient -1 (1 for a negative dividend) and
remainder the dividend.  PTX leaves it undefined.  INT64_MIN / -1 wraps to INT64_MIN, with
remainder 0.
"""

from __future__ import annotations

from qwengpu.isa import MASK32, Cmp, Op
from qwengpu.ptx import ir
from qwengpu.ptx import select_wide as wide
from qwengpu.ptx.selector import Selector
from qwengpu.ptx.vcode import LabelRef, Source, VReg

Pair = tuple[Source, Source]
_DIVISION_STEPS = 64


def lower_divide_64(sel: Selector, ins: ir.Instruction, type_name: str):
    """`div`/`rem` of `.u64`/`.s64` (called by `select_extended.lower_divide`)."""
    destination, a, b = sel.operands(ins, 3)
    signed = ir.is_signed(type_name)
    is_remainder = ins.opcode == "rem"
    with sel.unguarded():
        dividend, divisor = sel.pair(a, signed), sel.pair(b, signed)
        constant = _constant(divisor)
        if not signed and constant and constant & (constant - 1) == 0:
            shift = constant.bit_length() - 1
            mask = constant - 1
            result = wide.bitwise(sel, Op.AND, dividend, (mask & MASK32, mask >> 32)) \
                if is_remainder else wide.shift_right(sel, dividend, shift, False)
        elif signed:
            result = _signed_divide(sel, dividend, divisor, is_remainder)
        else:
            quotient, remainder = unsigned_divide_64(sel, dividend, divisor)
            result = remainder if is_remainder else quotient
    sel.commit(*zip(sel.destination_pair(destination), result))


def _constant(pair: Pair) -> int | None:
    low, high = pair
    return low | high << 32 if isinstance(low, int) and isinstance(high, int) else None


def unsigned_divide_64(sel: Selector, dividend: Pair, divisor: Pair) -> tuple[Pair, Pair]:
    """(quotient, remainder) of two 64-bit values, by a 64-step restoring-division loop."""
    q_low, q_high, r_low, r_high = sel.temp(), sel.temp(), sel.temp(), sel.temp()
    steps, carried = sel.temp(), sel.temp()
    d_low, d_high = (sel.register(word) for word in divisor)
    sel.move(dividend[0], q_low)
    sel.move(dividend[1], q_high)
    sel.move(0, r_low)
    sel.move(0, r_high)
    sel.move(_DIVISION_STEPS, steps)
    loop = sel.new_label("divide64")
    sel.place_label(loop)
    # r = (r << 1) | q.hi >> 31, q <<= 1: each word takes the top bit of the one below
    for high, low in ((r_high, r_low), (r_low, q_high), (q_high, q_low)):
        sel.emit(Op.SHR_U, d=carried, a=low, b=31)
        sel.emit(Op.SHL, d=high, a=high, b=1)
        sel.emit(Op.OR, d=high, a=high, b=carried)
    sel.emit(Op.SHL, d=q_low, a=q_low, b=1)
    # r >=u d: the high words decide unless they are equal
    above = sel.compare(Cmp.HI, r_high, d_high)
    level = sel.compare(Cmp.EQ, r_high, d_high)
    low_fits = sel.compare(Cmp.HS, r_low, d_low)
    level_fits = sel.predicate_op(Op.PAND, level, low_fits)
    fits = sel.predicate_op(Op.POR, above, level_fits)
    borrow = sel.compare(Cmp.LO, r_low, d_low)
    borrows = sel.predicate_op(Op.PAND, fits, borrow)
    sel.emit(Op.SUB, d=r_low, a=r_low, b=d_low, guard=(fits, False))
    sel.emit(Op.SUB, d=r_high, a=r_high, b=d_high, guard=(fits, False))
    sel.emit(Op.SUB, d=r_high, a=r_high, b=1, guard=(borrows, False))
    sel.emit(Op.OR, d=q_low, a=q_low, b=1, guard=(fits, False))
    sel.emit(Op.SUB, d=steps, a=steps, b=1)
    again = sel.compare(Cmp.NE, steps, 0)
    sel.emit(Op.BRA, imm=LabelRef(loop), guard=(again, False))
    return (q_low, q_high), (r_low, r_high)


def _signed_divide(sel: Selector, dividend: Pair, divisor: Pair, is_remainder: bool) -> Pair:
    quotient, remainder = unsigned_divide_64(sel, wide.absolute(sel, dividend),
                                             wide.absolute(sel, divisor))
    if is_remainder:
        negative = sel.compare(Cmp.LT, dividend[1], 0)
        return _negate_where(sel, remainder, negative)
    signs_differ = sel.compare(Cmp.LT, sel.alu(Op.XOR, dividend[1], divisor[1]), 0)
    return _negate_where(sel, quotient, signs_differ)


def _negate_where(sel: Selector, value: Pair, condition) -> Pair:
    """`value`, negated (64 bits) in the lanes where `condition` holds."""
    negated = wide.negate(sel, value)
    result: list[VReg] = []
    for word, negative in zip(value, negated):
        chosen = sel.temp()
        sel.emit(Op.SELP, d=chosen, a=sel.register(negative), b=word, c=condition)
        result.append(chosen)
    return result[0], result[1]
