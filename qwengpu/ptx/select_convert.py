"""The routines of `cvt` between 32-bit integers and binary32, on integer instructions.

QwenGPU has no FPU; these conversions are integer work on the bits, lowered here exactly as
the PTX ISA defines `cvt` ("Data Movement and Conversion Instructions: cvt", https://docs.
nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-cvt):

- `cvt.RND{.ftz}.f32.{s32,u32}` (.rn .rz .rm .rp; also from .s16 .u16 .s8 .u8, extended): the
  magnitude normalised by a leading-zero search (`normalise`), its top 24 bits packed under
  the exponent, rounded on the 8 bits below.
  Exact up to 2^24; 0 gives +0.0.  `.ftz` changes nothing (no result is subnormal).
- `cvt.RNDI{.ftz}{.sat}.{s32,u32}.f32` (.rni .rzi .rmi .rpi): the significand shifted down by
  158 - exponent, rounded.  PTX: "For float-to-integer conversions, the result is clamped to the
  destination range by default; i.e, .sat is redundant" (so .sat is accepted and changes
  nothing), and (PTX ISA 9.0, cvt's notes, as quoted in llvm/llvm-project#159530) "NaN input
  results in ... Zero if source is not .f64 and destination is not .s64, .u64".
  `.ftz` treats a subnormal input as a zero of its sign (it only matters for .rmi/.rpi).
- `cvt.RNDI{.ftz}.f32.f32` (rintf, truncf, floorf, ceilf): the fraction bits below the binary
  point masked off after adding the rounding increment; below 1.0 the result is ±0 or ±1,
  from 2^23 up (and ±inf) the input itself.  A NaN gives the canonical NaN 0x7FFFFFFF (what
  min/max return, `select_float`).

- `cvt{.ftz}.sat.f32.f32` (`__saturatef`): clamped to [+0.0, 1.0], a NaN to +0.0, -0.0 to
  +0.0 (libdevice's `__nv_saturatef`: "Clamp the input argument x to be within the interval
  [+0.0, 1.0]").

`select_cvt` is the `cvt` handler that checks an instruction and calls these routines (and
`select_convert_wide`'s, for 64-bit integers, built on them).  Known operands are converted
here at load time (`fold_*`).
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

from qwengpu.isa import MASK32, Cmp, Op
from qwengpu.ptx.select_float import CANONICAL_NAN, INFINITY, MAGNITUDE, SIGN, choose
from qwengpu.ptx.selector import Selector
from qwengpu.ptx.vcode import Source, VPred

INTEGER_ROUNDING = {"rni": "rn", "rzi": "rz", "rmi": "rm", "rpi": "rp"}
FLOAT_ROUNDING = ("rn", "rz", "rm", "rp")
ONE = 0x3F80_0000
HALF = 0x3F00_0000
TWO_POW_23 = 0x4B00_0000        # from here up every float is an integer
SMALLEST_NORMAL = 0x0080_0000
NARROW = ("s8", "s16", "u8", "u16")    # integer sources read sign- or zero-extended


def add_if(sel: Selector, predicate: VPred, value: Source, amount: int) -> Source:
    """`predicate ? value + amount : value` in place on a fresh temporary (one guarded add)."""
    sel.emit(Op.ADD, d=value, a=value, b=amount, guard=(predicate, False))
    return value


def fresh(sel: Selector, op: Op, a: Source, b: Source) -> Source:
    """`op a, b` into a new temporary that later instructions may update under a guard."""
    return sel.alu(op, a, b, into=sel.temp())


# ---- integer -> float -------------------------------------------------------------------------


def integer_to_float(sel: Selector, value: Source, signed: bool, mode: str) -> Source:
    """Magnitude normalised (top bit set), exponent field (157 - leading zeros) << 23 plus the
    top 24 bits (the implicit 1 carries into the exponent), rounded on the low 8 bits; a
    carry out of the significand bumps the exponent.  min.u with the normalised word (>= 2^31
    unless the input is 0) makes 0 give +0.0; the sign bit is or-ed back."""
    if isinstance(value, int):
        return fold_integer_to_float(value, signed, mode)
    normalised = sel.temp()
    if signed:
        sel.emit(Op.ABS, d=normalised, a=value)
    else:
        sel.move(value, normalised)
    exponent = normalise(sel, normalised)
    bits = fresh(sel, Op.ADD, exponent, sel.alu(Op.SHR_U, normalised, 8))
    if mode == "rn":                   # up when the low byte is above half, or half and odd
        low = sel.alu(Op.SHL, normalised, 24)
        above = sel.compare(Cmp.HI, sel.alu(Op.ADD, low, sel.alu(Op.AND, bits, 1)), SIGN)
        add_if(sel, above, bits, 1)
    elif mode == "rp" or (mode == "rm" and signed):
        inexact = sel.compare(Cmp.NE, sel.alu(Op.AND, normalised, 0xFF), 0)
        if signed:
            away = sel.compare(Cmp.GT if mode == "rp" else Cmp.LT, value, 0)
            inexact = sel.predicate_op(Op.PAND, inexact, away)
        add_if(sel, inexact, bits, 1)
    magnitude = sel.alu(Op.MIN_U, bits, normalised)
    return sel.alu(Op.OR, magnitude, sel.alu(Op.AND, value, SIGN)) if signed else magnitude


def normalise(sel: Selector, shifted: Source) -> Source:
    """Shift `shifted` (a temporary) left until its top bit is set, by a binary search like
    `select_extended.leading_zeros`; returns (157 - the shift) << 23, the exponent field of a
    binary32 whose significand is `shifted >> 8`."""
    exponent = sel.temp()
    sel.move(157 << 23, exponent)
    for bits in (16, 8, 4, 2, 1):
        empty = sel.compare(Cmp.LO, shifted, 1 << (32 - bits))
        sel.emit(Op.SUB, d=exponent, a=exponent, b=bits << 23, guard=(empty, False))
        sel.emit(Op.SHL, d=shifted, a=shifted, b=bits, guard=(empty, False))
    return exponent


def fold_integer_to_float(value: int, signed: bool, mode: str) -> int:
    value &= MASK32
    number = value - (1 << 32) if signed and value >> 31 else value
    if number == 0:
        return 0
    sign, magnitude = (SIGN if number < 0 else 0), abs(number)
    drop = magnitude.bit_length() - 24           # negative: shifted up to 24 bits, exactly
    significand = rounded(Fraction(magnitude) / Fraction(2) ** drop, mode, number < 0)
    return sign | (((150 + drop) << 23) + significand - (1 << 23))


def rounded(value: Fraction, mode: str, negative: bool) -> int:
    """A non-negative magnitude rounded to an integer as the signed value `mode` says."""
    down = math.floor(value)
    if mode == "rn":
        half = value - down
        return down + (half > Fraction(1, 2) or (half == Fraction(1, 2) and down % 2 == 1))
    away = (mode == "rp" and not negative) or (mode == "rm" and negative)
    return down + (away and value != down)


# ---- float -> integer -------------------------------------------------------------------------


def float_to_integer(sel: Selector, bits: Source, signed: bool, mode: str, flush: bool) -> Source:
    """q = (significand << 8 | 1 << 31) >> (158 - exponent), rounded; out-of-range values and
    infinities clamp, NaN gives 0."""
    if isinstance(bits, int):
        return fold_float_to_integer(bits, signed, mode, flush)
    doubled = sel.alu(Op.SHL, bits, 1)                          # magnitude << 1
    exponent = sel.alu(Op.SHR_U, doubled, 24)
    shift = sel.alu(Op.SUB, 158, exponent)
    significand = sel.alu(Op.OR, sel.alu(Op.SHL, bits, 8), SIGN)
    quotient = fresh(sel, Op.SHR_U, significand, shift)
    if mode == "rn":                   # the bits shifted out, against one half
        fraction = sel.alu(Op.SHL, significand, sel.alu(Op.SUB, exponent, 126))
        odd = sel.alu(Op.AND, quotient, 1)
        add_if(sel, sel.compare(Cmp.HI, sel.alu(Op.ADD, fraction, odd), SIGN), quotient, 1)
    elif mode == "rp" or (mode == "rm" and signed):
        inexact = sel.compare(Cmp.NE, sel.alu(Op.SHL, quotient, shift), significand)
        up = sel.predicate_op(Op.PAND, inexact, rounds_away(sel, bits, mode, flush))
        add_if(sel, up, quotient, 1)
    if not signed:                     # >= 2^32 (and +inf): all ones; negative or NaN: 0
        result = choose(sel, sel.compare(Cmp.HS, bits, 0x4F80_0000), MASK32, quotient)
        return choose(sel, sel.compare(Cmp.HI, bits, INFINITY), 0, result)
    sign = sel.alu(Op.SHR_S, bits, 31)
    result = sel.alu(Op.SUB, sel.alu(Op.XOR, quotient, sign), sign)
    limit = sel.alu(Op.XOR, sign, MAGNITUDE)                    # INT_MAX or INT_MIN
    result = choose(sel, sel.compare(Cmp.HS, doubled, 0x9E00_0000), limit, result)   # >= 2^31
    return choose(sel, sel.compare(Cmp.HI, doubled, INFINITY << 1), 0, result)


def rounds_away(sel: Selector, bits: Source, mode: str, flush: bool) -> VPred:
    """Whether a directed rounding moves this nonzero value's magnitude up: .rp of a positive,
    .rm of a negative one (with .ftz, a subnormal counts as zero)."""
    smallest = SMALLEST_NORMAL if flush else 1
    if mode == "rp":
        return sel.compare(Cmp.GE, bits, smallest)
    return sel.compare(Cmp.HS, bits, SIGN + smallest)


def fold_float_to_integer(bits: int, signed: bool, mode: str, flush: bool) -> int:
    bits &= MASK32
    magnitude = bits & MAGNITUDE
    if magnitude > INFINITY:
        return 0
    low, high = (-(1 << 31), (1 << 31) - 1) if signed else (0, MASK32)
    if magnitude == INFINITY:
        return (low if bits >> 31 else high) & MASK32
    if flush and magnitude < SMALLEST_NORMAL:
        magnitude = 0
    negative = bool(bits >> 31)
    exponent, fraction = magnitude >> 23, magnitude & 0x7F_FFFF
    value = Fraction(fraction | (1 << 23) if exponent else fraction, 1 << 23) \
        * Fraction(2) ** (max(exponent, 1) - 127)
    number = rounded(value, mode, negative) * (-1 if negative else 1)
    return min(max(number, low), high) & MASK32


# ---- float -> integral float ------------------------------------------------------------------


def round_to_integral(sel: Selector, bits: Source, mode: str, flush: bool) -> Source:
    """Below 2^23 and from 1.0 up: (magnitude + increment) & keep, where keep clears the
    150 - exponent fraction bits; below 1.0: 0 or 1.0; the sign or-ed back."""
    if isinstance(bits, int):
        return fold_round_to_integral(bits, mode, flush)
    magnitude = sel.alu(Op.AND, bits, MAGNITUDE)
    shift = sel.alu(Op.SUB, 150, sel.alu(Op.SHR_U, magnitude, 23))
    keep = sel.alu(Op.SHL, MASK32, shift)
    fraction = sel.alu(Op.XOR, keep, MASK32)
    if mode == "rn":
        odd = sel.alu(Op.AND, sel.alu(Op.SHR_U, magnitude, shift), 1)
        increment = sel.alu(Op.ADD, sel.alu(Op.SHR_U, fraction, 1), odd)
        small = choose(sel, sel.compare(Cmp.HI, magnitude, HALF), ONE, 0)
    elif mode == "rz":
        increment, small = 0, 0
    else:
        away = rounds_away(sel, bits, mode, flush)
        increment = choose(sel, away, fraction, 0)
        small = choose(sel, away, ONE, 0)
    result = sel.alu(Op.AND, sel.alu(Op.ADD, magnitude, increment), keep)
    result = choose(sel, sel.compare(Cmp.LO, magnitude, ONE), small, result)
    result = choose(sel, sel.compare(Cmp.HS, magnitude, TWO_POW_23), magnitude, result)
    result = sel.alu(Op.OR, result, sel.alu(Op.AND, bits, SIGN))
    return choose(sel, sel.compare(Cmp.HI, magnitude, INFINITY), CANONICAL_NAN, result)


def fold_round_to_integral(bits: int, mode: str, flush: bool) -> int:
    bits &= MASK32
    magnitude, sign = bits & MAGNITUDE, bits & SIGN
    if magnitude > INFINITY:
        return CANONICAL_NAN
    if magnitude >= TWO_POW_23:
        return bits
    if flush and magnitude < SMALLEST_NORMAL:
        magnitude = 0
    value = Fraction(struct.unpack("<f", struct.pack("<I", magnitude))[0])
    number = rounded(value, mode, bool(sign))
    return sign | struct.unpack("<I", struct.pack("<f", float(number)))[0]
