"""Instruction selection for `div`, `rcp` and `sqrt` of `.f32`: correctly rounded loops on integers.

The machine has no divider, so these are routines of integer instructions (docs/fpu.md), each
rounded once, to nearest even, by the multiply's `round_to_binary32`, exact by construction:
the quotient and the root are built bit by bit, and what is left over (the remainder) is the
sticky bit, so the rounding sees the exact value's position between two binary32 neighbours.

- `div.rn{.ftz}.f32 d, a, b` (C's `/` on floats, `__fdiv_rn`): both significands normalised
  (`normalised_significand`: a subnormal by one FPU add), then 26 steps of restoring division
  give floor(ma 2^25 / mb), 26 bits with the leading one at bit 25 or 24; the remainder is the
  sticky bit.  Specials as IEEE: x/0 = inf, 0/0 = inf/inf = NaN, x/inf = 0.
- `div.full{.ftz}.f32` (`-prec-div=false`): PTX allows 2 ulp of error; the correctly rounded
  quotient is within it.
- `div.approx{.ftz}.f32` (`__fdividef`, `-use_fast_math`): the correctly rounded quotient,
  except where PTX defines the approximation otherwise: for 2^126 < |b| < 2^128 it "returns
  NaN" if a is infinite and "otherwise it returns 0".
- `rcp.rn{.ftz}.f32`, `rcp.approx{.ftz}.f32` (1.0f / x, `__frcp_rn`): the division of 1.0
  (the approximation's 1 ulp bound holds the exact reciprocal).
- `sqrt.rn{.ftz}.f32`, `sqrt.approx{.ftz}.f32` (`sqrtf`): the significand shifted by 7 or 8 so
  that the exponent left is even, then 26 steps of the digit-by-digit square root, two bits
  of the radicand a step, remainder and root in one word each.  sqrt(-0) = -0, sqrt(+inf) =
  +inf, a negative number or a NaN gives the canonical NaN.

`.ftz` flushes subnormal inputs and results to the zero of their sign; the directed roundings
`.rz .rm .rp` are refused, as for add and mul.  Each routine is some 60 instructions of the
128 a program holds and runs some 220 (div) or 350 (sqrt) records a warp.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np

from qwengpu.isa import Cmp, Op
from qwengpu.ptx import ir
from qwengpu.ptx.select_convert import fresh
from qwengpu.ptx.select_float import (CANONICAL_NAN, INFINITY, MAGNITUDE, ONE, SIGN,
                                      check_float_modifiers, flush_subnormal)
from qwengpu.ptx.select_fpu import (call_routine, normalised_significand,
                                    refuse_directed_rounding, round_to_binary32)
from qwengpu.ptx.selector import Selector, handles_float
from qwengpu.ptx.vcode import ZERO, LabelRef, Source

QUOTIENT_BITS = 26               # 24 significant bits, a guard bit, one more for ma < mb
ROOT_BITS = 26
TWO_POW_126 = 0x7E80_0000


@handles_float("div", "rcp", "sqrt")
def lower_float_divide(sel: Selector, ins: ir.Instruction):
    refuse_directed_rounding(sel, ins, f"QwenGPU's {ins.opcode}")
    allowed = {"rn", "ftz", "approx"} | ({"full"} if ins.opcode == "div" else set())
    check_float_modifiers(sel, ins, allowed)
    if not {"rn", "approx", "full"} & set(ins.modifiers):
        raise sel.unsupported(ins, "a division or root without .rn, .full or .approx")
    flush = "ftz" in ins.modifiers
    if ins.opcode == "div":
        destination, a, b = sel.operands(ins, 3)
        operands = [sel.value(a), sel.value(b)]
    else:
        destination, a = sel.operands(ins, 2)
        operands = [ONE, sel.value(a)] if ins.opcode == "rcp" else [sel.value(a)]
    if flush:
        operands = [flush_subnormal(sel, word) for word in operands]
    with sel.unguarded():
        if ins.opcode == "sqrt":
            result = call_routine(sel, ins, float_square_root, operands)
        else:
            result = call_routine(sel, ins, float_divide, operands)
            if ins.opcode == "div" and "approx" in ins.modifiers:
                result = approximate_division_rule(sel, result, *operands)
        if flush:
            result = flush_subnormal(sel, result)
    sel.write(destination, result)


def float_divide(sel: Selector, a: Source, b: Source) -> Source:
    """a / b, rounded to nearest even (the module docstring)."""
    if isinstance(a, int) and isinstance(b, int):
        return fold_float_divide(a, b)
    sign = sel.alu(Op.AND, sel.alu(Op.XOR, a, b), SIGN)
    ma, mb = sel.alu(Op.AND, a, MAGNITUDE), sel.alu(Op.AND, b, MAGNITUDE)
    dividend, a_exponent = normalised_significand(sel, ma)
    divisor, b_exponent = normalised_significand(sel, mb)
    remainder, quotient, steps = sel.temp(), sel.temp(), sel.temp()
    sel.move(dividend, remainder)
    sel.move(0, quotient)
    sel.move(QUOTIENT_BITS, steps)
    divisor = sel.register(divisor)
    loop = sel.new_label("fdiv")
    sel.place_label(loop)
    sel.emit(Op.SHL, d=quotient, a=quotient, b=1)
    fits = sel.compare(Cmp.HS, remainder, divisor)
    sel.emit(Op.SUB, d=remainder, a=remainder, b=divisor, guard=(fits, False))
    sel.emit(Op.OR, d=quotient, a=quotient, b=1, guard=(fits, False))
    sel.emit(Op.SHL, d=remainder, a=remainder, b=1)
    sel.emit(Op.SUB, d=steps, a=steps, b=1)
    sel.emit(Op.BRA, imm=LabelRef(loop), guard=(sel.compare(Cmp.NE, steps, 0), False))
    # quotient = floor(ma 2^25 / mb) = (ma / mb) 2^25: high = quotient << 6 is (ma / mb) 2^31
    high = fresh(sel, Op.SHL, quotient, 6)
    sel.emit(Op.OR, d=high, a=high, b=1, guard=(sel.compare(Cmp.NE, remainder, 0), False))
    exponent = fresh(sel, Op.SUB, a_exponent, b_exponent)          # a/b = high 2^(ea - eb - 31)
    sel.emit(Op.ADD, d=exponent, a=exponent, b=125)
    result = round_to_binary32(sel, high, exponent)
    # 0 / x and x / inf are 0; x / 0 and inf / x are inf; 0/0, inf/inf and a NaN give NaN
    zero = sel.predicate_op(Op.POR, sel.compare(Cmp.EQ, ma, 0), sel.compare(Cmp.EQ, mb, INFINITY))
    sel.emit(Op.ADD, d=result, a=ZERO, b=0, guard=(zero, False))
    infinite = sel.predicate_op(Op.POR, sel.compare(Cmp.EQ, ma, INFINITY),
                                sel.compare(Cmp.EQ, mb, 0))
    sel.emit(Op.ADD, d=result, a=ZERO, b=INFINITY, guard=(infinite, False))
    result = sel.alu(Op.OR, result, sign)
    larger = sel.alu(Op.MAX_U, ma, mb)          # larger - 1 >=u inf: a NaN, or both are 0
    nan = sel.predicate_op(Op.POR, sel.compare(Cmp.HS, sel.alu(Op.SUB, larger, 1), INFINITY),
                           sel.compare(Cmp.EQ, sel.alu(Op.MIN_U, ma, mb), INFINITY))
    sel.emit(Op.ADD, d=result, a=ZERO, b=CANONICAL_NAN, guard=(nan, False))
    return result


def approximate_division_rule(sel: Selector, quotient: Source, a: Source, b: Source) -> Source:
    """div.approx.f32's own rule: for 2^126 < |b| < 2^128, NaN if a is infinite, else 0
    (the quotient's NaNs stay: a NaN operand, or b infinite)."""
    if isinstance(quotient, int) and isinstance(a, int) and isinstance(b, int):
        if TWO_POW_126 < b & MAGNITUDE < INFINITY:
            return CANONICAL_NAN if a & MAGNITUDE == INFINITY else 0
        return quotient
    result = quotient                  # the division's own temporary: updated in place
    huge = sel.compare(Cmp.LO, sel.alu(Op.SUB, sel.alu(Op.AND, b, MAGNITUDE), TWO_POW_126 + 1),
                       INFINITY - TWO_POW_126 - 1)
    sel.emit(Op.ADD, d=result, a=ZERO, b=0, guard=(huge, False))
    a_infinite = sel.compare(Cmp.EQ, sel.alu(Op.AND, a, MAGNITUDE), INFINITY)
    sel.emit(Op.ADD, d=result, a=ZERO, b=CANONICAL_NAN,
             guard=(sel.predicate_op(Op.PAND, huge, a_infinite), False))
    return result


def float_square_root(sel: Selector, x: Source) -> Source:
    """sqrt(x), rounded to nearest even (the module docstring)."""
    if isinstance(x, int):
        return fold_float_square_root(x)
    significand, exponent = normalised_significand(sel, sel.alu(Op.AND, x, MAGNITUDE))
    # x = m 2^(e - 150); the radicand M = m 2^s with e - 150 - s even and M in [2^50, 2^52):
    # s = 28 when e is even, 27 when odd.  Its 26 bit pairs feed the loop from the top of
    # `source` = m << (s - 20), zeros after.
    odd = sel.alu(Op.AND, exponent, 1)
    source = fresh(sel, Op.SHL, significand, sel.alu(Op.SUB, 8, odd))
    remainder, root, steps, trial = sel.temp(), sel.temp(), sel.temp(), sel.temp()
    sel.move(0, remainder)
    sel.move(0, root)
    sel.move(ROOT_BITS, steps)
    loop = sel.new_label("fsqrt")
    sel.place_label(loop)
    sel.emit(Op.SHL, d=remainder, a=remainder, b=2)
    sel.emit(Op.SHR_U, d=trial, a=source, b=30)
    sel.emit(Op.OR, d=remainder, a=remainder, b=trial)
    sel.emit(Op.SHL, d=source, a=source, b=2)
    sel.emit(Op.SHL, d=trial, a=root, b=2)                  # (2 root) * 2 + 1: the next
    sel.emit(Op.OR, d=trial, a=trial, b=1)                  # root bit's square's share
    sel.emit(Op.SHL, d=root, a=root, b=1)
    fits = sel.compare(Cmp.HS, remainder, trial)
    sel.emit(Op.SUB, d=remainder, a=remainder, b=trial, guard=(fits, False))
    sel.emit(Op.OR, d=root, a=root, b=1, guard=(fits, False))
    sel.emit(Op.SUB, d=steps, a=steps, b=1)
    sel.emit(Op.BRA, imm=LabelRef(loop), guard=(sel.compare(Cmp.NE, steps, 0), False))
    # root = floor(sqrt(M)) in [2^25, 2^26); high = root << 6 is sqrt(M) 2^6, so sqrt(x) =
    # high 2^((e - 150 - s) / 2 - 6) = high 2^(exponent - 156) with s = 28 - odd:
    # exponent = (e + odd) / 2 + 61
    high = fresh(sel, Op.SHL, root, 6)
    sel.emit(Op.OR, d=high, a=high, b=1, guard=(sel.compare(Cmp.NE, remainder, 0), False))
    half = fresh(sel, Op.SHR_S, sel.alu(Op.ADD, exponent, odd), 1)
    sel.emit(Op.ADD, d=half, a=half, b=61)
    result = round_to_binary32(sel, high, half)
    # +-0 stay, +inf stays; a NaN, and every negative number below -0, give NaN
    keep = sel.predicate_op(Op.POR, sel.compare(Cmp.EQ, sel.alu(Op.SHL, x, 1), 0),
                            sel.compare(Cmp.EQ, x, INFINITY))
    sel.emit(Op.ADD, d=result, a=sel.register(x), b=0, guard=(keep, False))
    nan = sel.predicate_op(Op.PAND, sel.compare(Cmp.HI, x, INFINITY),
                           sel.compare(Cmp.NE, x, SIGN))
    sel.emit(Op.ADD, d=result, a=ZERO, b=CANONICAL_NAN, guard=(nan, False))
    return result


# ---- known operands, at load time ----------------------------------------------------------


def _value(word: int) -> float:
    return struct.unpack("<f", struct.pack("<I", word & 0xFFFF_FFFF))[0]


def _nearest(value: Fraction, negative: bool) -> int:
    """The binary32 word nearest to a positive exact value, ties to even (via numpy's
    float32 of a double holding the exactly rounded 25-bit value, so no double rounding)."""
    exponent = math.floor(math.log2(value)) if value else 0
    scale = max(exponent - 23, -149)
    scaled = value / Fraction(2) ** scale
    down = math.floor(scaled)
    rest = scaled - down
    rounded = down + (rest > Fraction(1, 2) or (rest == Fraction(1, 2) and down % 2 == 1))
    with np.errstate(all="ignore"):
        bits = int(np.float32(float(Fraction(rounded) * Fraction(2) ** scale)).view(np.uint32))
    return bits | (SIGN if negative else 0)


def fold_float_divide(a: int, b: int) -> int:
    x, y = _value(a), _value(b)
    if math.isnan(x) or math.isnan(y) or (x == 0 and y == 0) or (math.isinf(x) and math.isinf(y)):
        return CANONICAL_NAN
    negative = (a ^ b) & SIGN != 0
    if math.isinf(x) or y == 0:
        return INFINITY | (SIGN if negative else 0)
    if x == 0 or math.isinf(y):
        return SIGN if negative else 0
    return _nearest(abs(Fraction(x) / Fraction(y)), negative)


def fold_float_square_root(a: int) -> int:
    x = _value(a)
    if x == 0 or x == math.inf:
        return a
    if math.isnan(x) or x < 0:
        return CANONICAL_NAN
    scaled = int(Fraction(x) * 4 ** 100)          # an integer: x's denominator is <= 2^149
    root = math.isqrt(scaled)
    # exact, or strictly between root and root + 1 (where no tie of 24 bits can sit)
    exact = Fraction(root, 2 ** 100) if root * root == scaled else Fraction(2 * root + 1, 2 ** 101)
    return _nearest(exact, False)
