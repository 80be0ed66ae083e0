"""Instruction selection for `fma` (and `mad`) of `.f32`: a*b + c rounded once, on integers.

nvcc writes `fma.rn.f32 d, a, b, c` for C's `a * b + c` (its default `-fmad=true`) and for
`fmaf`/`__fmaf_rn`; PTX's `mad.rn.f32` is the same instruction.  The machine has no fused
unit, so this is a routine of integer instructions and two FPU adds (the special cases, the
leading one) (docs/fpu.md, "fma"), exact by construction:

- each operand's significand at the top of a word, a subnormal's without its hidden bit
  (`_top`), so nothing needs normalising first: the product of a's and b's is the exact
  64-bit T (the integer multiplier's `mulhi.u` and `mul`), c's is C = c_top:0;
- both go into one 64-bit window: each shifted right by one (room for a carry) and the one
  of lower exponent by the difference more (`_shift_right`), the bits shifted out or-ed into
  bit 0 as a sticky bit;
- added, or subtracted where the signs differ, with the carry or borrow from a compare (the
  ISA has no carry flag); a negative difference is negated and flips the sign;
- the sum's leading one found by the FPU (a 23-bit value v gives (1 + v 2^-23) - 1 = v 2^-23
  exactly, whose exponent is v's bit position), brought to bit 31 of one word with the rest
  as sticky, and rounded by the multiply's `round_to_binary32`.

Why the sticky bit in bit 0 is enough: the operand that is shifted by one only has bit 0
clear (T's low 16 bits and C's low 40 are 0), so the sum with a sticky operand is an odd
integer strictly inside the same interval between two even integers as the exact sum; and
wherever a bit is lost, every rounding boundary the result can meet (half its ulp, or half
the subnormal step) is at the window's bit 13 or above, an even integer (docs/fpu.md, "fma",
works the cases).  Zero, infinity and NaN operands are settled by one FPU add of the product's
special value to c (inf + -inf and inf * 0 give the canonical NaN); an exact zero sum is +0
unless the product and c are both negative zeros.  `.ftz` flushes subnormal inputs and the
result to the zero of their sign, `.sat` clamps to [+0.0, 1.0]; the directed roundings are
refused as for add and mul.

The routine is 143 instructions (a row kernel around it: 154 slots), more than the default
machine's 128 instruction slots hold, so a kernel with an fma needs a machine compiled with
`-P PROG_WORDS=256` (the loader's refusal says so), where a kernel of several fmas shares one
body (`routines.py`).
"""

from __future__ import annotations

import math
from fractions import Fraction

from qwengpu.isa import Cmp, Op
from qwengpu.ptx import ir
from qwengpu.ptx.select_convert import fresh
from qwengpu.ptx.select_float import (CANONICAL_NAN, INFINITY, MAGNITUDE, ONE, SIGN,
                                      SMALLEST_NORMAL, check_float_modifiers, choose,
                                      flush_subnormal, saturate)
from qwengpu.ptx.select_float_divide import _nearest, _value
from qwengpu.ptx.select_fpu import (MINUS_ONE, call_routine, float_add,
                                    refuse_directed_rounding, round_to_binary32)
from qwengpu.ptx.selector import Selector, handles_float, operand_b
from qwengpu.ptx.vcode import ZERO, Source

MINUS_126 = (-126) & 0xFFFF_FFFF


@handles_float("fma", "mad")
def lower_float_fma(sel: Selector, ins: ir.Instruction):
    refuse_directed_rounding(sel, ins, "QwenGPU's fma")
    check_float_modifiers(sel, ins, {"rn", "ftz", "sat"})
    if "rn" not in ins.modifiers:
        raise sel.unsupported(ins, f"{ins.opcode}.f32 without .rn (PTX requires a rounding)")
    destination, *operands = sel.operands(ins, 4)
    values = [sel.value(operand) for operand in operands]
    flush = "ftz" in ins.modifiers
    if flush:
        values = [flush_subnormal(sel, value) for value in values]
    result = call_routine(sel, ins, float_fma, values)
    if flush:
        result = flush_subnormal(sel, result)
    if "sat" in ins.modifiers:
        result = saturate(sel, result)
    sel.write(destination, result)


def float_fma(sel: Selector, a: Source, b: Source, c: Source) -> Source:
    """a * b + c rounded once to nearest even (the module doc says how)."""
    if all(isinstance(value, int) for value in (a, b, c)):
        return fold_float_fma(a, b, c)
    ma, mb, mc = (sel.alu(Op.AND, value, MAGNITUDE) for value in (a, b, c))
    x, y = sel.alu(Op.MIN_U, ma, mb), sel.alu(Op.MAX_U, ma, mb)
    product_sign = sel.alu(Op.XOR, a, b)
    flip = sel.alu(Op.XOR, product_sign, c)               # bit 31: the signs differ
    sign = fresh(sel, Op.AND, product_sign, SIGN)
    # zeros, infinities and NaNs: the FPU adds the product's special value to c
    product_zero = sel.compare(Cmp.EQ, x, 0)
    infinite_times_zero = sel.predicate_op(Op.PAND, product_zero,
                                           sel.compare(Cmp.EQ, y, INFINITY))
    product = fresh(sel, Op.OR, sign, y)
    sel.emit(Op.ADD, d=product, a=ZERO, b=CANONICAL_NAN, guard=(infinite_times_zero, False))
    special = float_add(sel, product, c)
    is_special = sel.compare(Cmp.HS, sel.alu(Op.MAX_U, y, mc), INFINITY)
    # the exact product T * 2^(ea + eb - 316) and C * 2^(ec - 190)
    a_top, ea = _top(sel, ma)
    b_top, eb = _top(sel, mb)
    c_top, ec = _top(sel, mc)
    t_hi, t_lo = sel.alu(Op.MULHI_U, a_top, b_top), sel.alu(Op.MUL, a_top, b_top)
    ep = fresh(sel, Op.ADD, ea, eb)
    sel.emit(Op.ADD, d=ep, a=ZERO, b=0, guard=(product_zero, False))   # 0: below everything
    # shifts: both by one, the one of lower exponent by the difference more (at most 64)
    t_shift = sel.alu(Op.MIN_U, sel.alu(Op.ADD, sel.alu(Op.MAX_S, sel.alu(Op.SUB, ec, ep),
                                                        MINUS_126), 127), 64)
    c_shift = sel.alu(Op.SUB, sel.alu(Op.MAX_S, sel.alu(Op.SUB, ep, ec), 126), 125)
    t_hi, t_lo = _shift_right(sel, t_hi, t_lo, t_shift)
    c_hi, c_lo = _shift_right(sel, c_top, 0, sel.alu(Op.MIN_U, c_shift, 64))
    # T + C, or T - C where the signs differ (a negative difference is negated)
    subtract = sel.compare(Cmp.LT, flip, 0)
    lo = fresh(sel, Op.ADD, t_lo, c_lo)
    sel.emit(Op.SUB, d=lo, a=t_lo, b=c_lo, guard=(subtract, False))
    carry = sel.compare(Cmp.LO, lo, t_lo)
    sel.emit(Op.SETP, d=carry, a=t_lo, b=operand_b(c_lo), c=Cmp.LO, guard=(subtract, False))
    hi = fresh(sel, Op.ADD, t_hi, c_hi)
    sel.emit(Op.SUB, d=hi, a=t_hi, b=c_hi, guard=(subtract, False))
    minus = sel.alu(Op.SHR_S, flip, 31)                   # -1 where subtracting, else 0
    sel.emit(Op.ADD, d=hi, a=hi, b=sel.alu(Op.OR, minus, 1), guard=(carry, False))
    negative = sel.compare(Cmp.LT, sel.alu(Op.AND, hi, minus), 0)
    borrow = sel.predicate_op(Op.PAND, negative, sel.compare(Cmp.NE, lo, 0))
    sel.emit(Op.SUB, d=lo, a=ZERO, b=lo, guard=(negative, False))
    sel.emit(Op.SUB, d=hi, a=ZERO, b=hi, guard=(negative, False))
    sel.emit(Op.SUB, d=hi, a=hi, b=1, guard=(borrow, False))
    sel.emit(Op.XOR, d=sign, a=sign, b=SIGN, guard=(negative, False))
    # the sum's leading one to bit 31 of one word, the rest as sticky; then one rounding
    shift = _leading_zeros(sel, hi, lo)
    high = sel.alu(Op.OR, sel.alu(Op.OR, sel.alu(Op.SHL, hi, shift),
                                  sel.alu(Op.SHR_U, lo, sel.alu(Op.SUB, 32, shift))),
                   sel.alu(Op.SHL, lo, sel.alu(Op.SUB, shift, 32)), into=sel.temp())
    inexact = sel.compare(Cmp.NE, sel.alu(Op.SHL, lo, shift), 0)
    sel.emit(Op.OR, d=high, a=high, b=1, guard=(inexact, False))
    exponent = fresh(sel, Op.SUB, sel.alu(Op.ADD, ec, c_shift), sel.alu(Op.ADD, shift, 2))
    result = sel.alu(Op.OR, round_to_binary32(sel, high, exponent), sign, into=sel.temp())
    exact_zero = sel.compare(Cmp.EQ, sel.alu(Op.OR, hi, lo), 0)
    sel.emit(Op.AND, d=result, a=sign, b=sel.register(c), guard=(exact_zero, False))
    return choose(sel, is_special, special, result)


def _top(sel: Selector, magnitude: Source) -> tuple[Source, Source]:
    """(the significand at the top of a word: bit 31 the hidden bit, clear for a subnormal;
    the exponent field, 1 for a subnormal): the value is top 2^(exponent - 158)."""
    top = fresh(sel, Op.SHL, magnitude, 8)
    sel.emit(Op.OR, d=top, a=top, b=SIGN,
             guard=(sel.compare(Cmp.HS, magnitude, SMALLEST_NORMAL), False))
    return top, sel.alu(Op.MAX_U, sel.alu(Op.SHR_U, magnitude, 23), 1)


def _shift_right(sel: Selector, hi: Source, lo: Source, shift: Source) -> tuple[Source, Source]:
    """hi:lo >> shift (0 to 64), the bits shifted out or-ed into bit 0.  A shift of 32 or
    more gives 0 (docs/isa.md), so one formula serves every amount."""
    left = sel.alu(Op.SUB, 32, shift)
    new_hi = sel.alu(Op.SHR_U, hi, shift)
    moved_down = sel.alu(Op.SHR_U, hi, sel.alu(Op.SUB, shift, 32))
    lost = sel.alu(Op.SHL, hi, sel.alu(Op.SUB, 64, shift))
    if lo != 0:
        moved_down = sel.alu(Op.OR, moved_down, sel.alu(Op.SHR_U, lo, shift))
        lost = sel.alu(Op.OR, lost, sel.alu(Op.SHL, lo, sel.alu(Op.MAX_S, left, 0)))
    new_lo = sel.alu(Op.OR, sel.alu(Op.SHL, hi, left), moved_down, into=sel.temp())
    sel.emit(Op.OR, d=new_lo, a=new_lo, b=1, guard=(sel.compare(Cmp.NE, lost, 0), False))
    return new_hi, new_lo


def _leading_zeros(sel: Selector, hi: Source, lo: Source) -> Source:
    """The leading zeros of hi:lo (not 0): of the word that holds the leading one, whose top
    23 bits (or, below 2^23, the whole word) the FPU normalises: (v | 1.0) - 1.0 = v 2^-23,
    exponent field 104 + v's bit position."""
    hi_zero = sel.compare(Cmp.EQ, hi, 0)
    word = choose(sel, hi_zero, lo, hi)
    top = sel.alu(Op.SHR_U, word, 9)
    wide = sel.compare(Cmp.NE, top, 0)
    value = choose(sel, wide, top, word)
    normalised = float_add(sel, sel.alu(Op.OR, value, ONE), MINUS_ONE)
    zeros = fresh(sel, Op.SUB, 135, sel.alu(Op.SHR_U, normalised, 23))   # 31 - position
    sel.emit(Op.SUB, d=zeros, a=zeros, b=9, guard=(wide, False))
    sel.emit(Op.ADD, d=zeros, a=zeros, b=32, guard=(hi_zero, False))
    return zeros


def fold_float_fma(a: int, b: int, c: int) -> int:
    """a * b + c of three known words, at load time, rounded once (exact fractions)."""
    x, y, z = _value(a), _value(b), _value(c)
    with_nan = [math.isnan(v) for v in (x, y, z)]
    infinite_times_zero = (math.isinf(x) and y == 0) or (math.isinf(y) and x == 0)
    product_infinite = math.isinf(x) or math.isinf(y)
    product_negative = (a ^ b) & SIGN != 0
    if any(with_nan) or infinite_times_zero or (
            product_infinite and math.isinf(z) and product_negative != (c & SIGN != 0)):
        return CANONICAL_NAN
    if product_infinite:
        return INFINITY | (SIGN if product_negative else 0)
    if math.isinf(z):
        return c
    exact = Fraction(x) * Fraction(y) + Fraction(z)
    if exact == 0:
        return SIGN if product_negative and c & SIGN else 0
    return _nearest(abs(exact), exact < 0)
