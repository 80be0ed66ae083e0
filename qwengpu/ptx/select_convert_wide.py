"""`cvt` between binary32 and 64-bit integers, on the 32-bit conversions of `select_convert`.

nvcc writes these for `(float)n` and `(long long)x` on 64-bit integers, and for
`__ll2float_rn`, `__float2ll_rz`, `llrintf` and kin (PTX ISA, "cvt"):

- `cvt.RND.f32.{s64,u64}` (.rn .rz .rm .rp): the magnitude's (low, high) pair cut to one word
  w = floor(value / 2^k) with k = 32 - leading zeros of the high word (k = 0 when the value
  fits a word), the bits shifted out or-ed into w's bit 0 as a sticky bit; then the 32-bit
  conversion of w (`integer_to_float`: it rounds on w's low byte, so the sticky bit counts as
  it should) scaled by 2^k, k added to the exponent field (exact; 2^64 is far below
  binary32's range).  A negative signed value converts its magnitude and takes the sign;
  .rm and .rp round the magnitude the other way there (both conversions, one `selp`).
- `cvt.RNDI{.ftz}{.sat}.{s64,u64}.f32` (.rni .rzi .rmi .rpi): below 2^32 the 32-bit
  conversion of the magnitude (mirrored rounding for a negative value), from 2^32 up the
  significand shifted left by exponent - 150 into a pair (those floats are integers); then
  the sign, and PTX's clamping to the destination's range ("the result is clamped to the
  destination range by default"; .sat changes nothing).  A NaN gives 1 << 63 for both
  .s64 and .u64: "NaN input results in ... `1 << (BitWidth(dst) - 1)` ... [if] destination
  is .s64, .u64" (PTX ISA 9.0, cvt, as quoted in llvm/llvm-project#159530).

Known operands are converted at load time with Python's exact integers and fractions.
"""

from __future__ import annotations

import math
from fractions import Fraction

from qwengpu.isa import MASK32, Cmp, Op
from qwengpu.ptx import select_wide as wide
from qwengpu.ptx.select_convert import (fold_integer_to_float, float_to_integer, fresh,
                                        integer_to_float)
from qwengpu.ptx.select_extended import leading_zeros
from qwengpu.ptx.select_float import INFINITY, MAGNITUDE, SIGN, choose, flush_subnormal
from qwengpu.ptx.selector import Selector
from qwengpu.ptx.vcode import Source

Pair = tuple[Source, Source]
MIRROR = {"rn": "rn", "rz": "rz", "rm": "rp", "rp": "rm"}
TWO_POW_32 = 0x4F80_0000
TWO_POW_63 = 0x5F00_0000
TWO_POW_64 = 0x5F80_0000
NAN_RESULT = (0, 0x8000_0000)                   # 1 << 63


# ---- 64-bit integer -> float --------------------------------------------------------------


def integer64_to_float(sel: Selector, value: Pair, signed: bool, mode: str) -> Source:
    low, high = value
    if isinstance(low, int) and isinstance(high, int):
        return fold_integer64_to_float(low | high << 32, signed, mode)
    if not signed:
        return _magnitude_to_float(sel, value, mode)
    negative = sel.compare(Cmp.LT, high, 0)
    magnitude = wide.select(sel, negative, wide.negate(sel, value), value)
    bits = _magnitude_to_float(sel, magnitude, mode)
    if MIRROR[mode] != mode:                    # .rm/.rp: the other way for a negative value
        bits = choose(sel, negative, _magnitude_to_float(sel, magnitude, MIRROR[mode]), bits)
    return sel.alu(Op.OR, bits, sel.alu(Op.AND, high, SIGN))


def _magnitude_to_float(sel: Selector, value: Pair, mode: str) -> Source:
    """An unsigned pair as binary32 (see the module docstring)."""
    low, high = value
    kept = sel.alu(Op.SUB, 32, leading_zeros(sel, high))            # k
    rest = sel.alu(Op.SUB, 32, kept)
    word = fresh(sel, Op.OR, sel.alu(Op.SHL, high, rest), sel.alu(Op.SHR_U, low, kept))
    lost = sel.compare(Cmp.NE, sel.alu(Op.SHL, low, rest), 0)
    sel.emit(Op.OR, d=word, a=word, b=1, guard=(lost, False))
    bits = integer_to_float(sel, word, False, mode)
    return sel.alu(Op.ADD, bits, sel.alu(Op.SHL, kept, 23))


def fold_integer64_to_float(value: int, signed: bool, mode: str) -> int:
    value &= (1 << 64) - 1
    number = value - (1 << 64) if signed and value >> 63 else value
    if number == 0:
        return 0
    magnitude = abs(number)
    drop = max(magnitude.bit_length() - 24, 0)
    down = magnitude >> drop
    rest = Fraction(magnitude - (down << drop), 1 << drop)
    negative = number < 0
    if mode == "rn":
        up = rest > Fraction(1, 2) or (rest == Fraction(1, 2) and down % 2 == 1)
    else:
        up = rest != 0 and ((mode == "rp" and not negative) or (mode == "rm" and negative))
    significand = down + up
    return (SIGN if negative else 0) | fold_integer_to_float(significand, False, "rz") + (drop << 23)


# ---- float -> 64-bit integer --------------------------------------------------------------


def float_to_integer64(sel: Selector, bits: Source, signed: bool, mode: str,
                       flush: bool) -> Pair:
    if isinstance(bits, int):
        value = fold_float_to_integer64(bits, signed, mode, flush)
        return value & MASK32, value >> 32
    if flush:
        bits = flush_subnormal(sel, bits)
    magnitude = sel.alu(Op.AND, bits, MAGNITUDE)
    negative = sel.compare(Cmp.LT, bits, 0)
    if signed:
        small = float_to_integer(sel, magnitude, False, mode, False)
        if MIRROR[mode] != mode:
            small = choose(sel, negative,
                           float_to_integer(sel, magnitude, False, MIRROR[mode], False), small)
    else:
        small = float_to_integer(sel, bits, False, mode, False)   # negatives give 0 already
    # from 2^32 up: significand << (exponent - 150), across the pair
    significand = sel.alu(Op.OR, sel.alu(Op.AND, bits, 0x7F_FFFF), 0x80_0000)
    shift = sel.alu(Op.SUB, sel.alu(Op.SHR_U, magnitude, 23), 150)
    large_low = sel.alu(Op.SHL, significand, shift)
    large_high = sel.alu(Op.OR, sel.alu(Op.SHL, significand, sel.alu(Op.SUB, shift, 32)),
                         sel.alu(Op.SHR_U, significand, sel.alu(Op.SUB, 32, shift)))
    large = sel.compare(Cmp.HS, magnitude, TWO_POW_32)
    result = wide.select(sel, large, (large_low, large_high), (small, 0))
    if signed:
        result = wide.select(sel, negative, wide.negate(sel, result), result)
        too_high = sel.compare(Cmp.GE, bits, TWO_POW_63)             # positive, >= 2^63
        result = wide.select(sel, too_high, (MASK32, 0x7FFF_FFFF), result)
        too_low = sel.compare(Cmp.HI, bits, SIGN | TWO_POW_63)       # negative, < -2^63
        result = wide.select(sel, too_low, (0, 0x8000_0000), result)
    else:
        too_high = sel.compare(Cmp.GE, bits, TWO_POW_64)             # positive, >= 2^64
        result = wide.select(sel, too_high, (MASK32, MASK32), result)
        result = wide.select(sel, negative, (0, 0), result)
    nan = sel.compare(Cmp.HI, magnitude, INFINITY)
    return wide.select(sel, nan, NAN_RESULT, result)


def fold_float_to_integer64(bits: int, signed: bool, mode: str, flush: bool) -> int:
    bits &= MASK32
    if flush and bits & INFINITY == 0:
        bits &= SIGN
    magnitude = bits & MAGNITUDE
    if magnitude > INFINITY:
        return 1 << 63
    low, high = (-(1 << 63), (1 << 63) - 1) if signed else (0, (1 << 64) - 1)
    negative = bits >> 31 == 1
    if magnitude == INFINITY:
        return (low if negative else high) & ((1 << 64) - 1)
    exponent, fraction = magnitude >> 23, magnitude & 0x7F_FFFF
    value = Fraction((fraction | (1 << 23)) if exponent else fraction) * \
        Fraction(2) ** (max(exponent, 1) - 150)
    value = -value if negative else value
    rounded = {"rz": math.trunc, "rm": math.floor, "rp": math.ceil,
               "rn": lambda v: round(v)}[mode](value)
    return min(max(rounded, low), high) & ((1 << 64) - 1)
