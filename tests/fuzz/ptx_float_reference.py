"""The `.f32` instructions of the PTX reference evaluator (`ptx_reference.py`), from the PTX ISA.

A binary32 value is a 32-bit word.  The arithmetic is numpy's float32 (IEEE-754 binary32,
round to nearest even: the CPU's own), conversions are exact integer and `Fraction` work, and
nothing here imports qwengpu.  What the ISA manual says, as this module reads it:

- `add sub mul div sqrt rcp` (`.rn`, the default rounding): the IEEE result, every NaN result
  the canonical NaN 0x7FFFFFFF; `.ftz` reads a subnormal input as the zero of its sign and
  writes a subnormal result so; `.sat` clamps the result to [+0.0, 1.0], a NaN to +0.0;
- `fma.rn.f32`: a * b + c rounded once (exact fractions rounded by hand);
- `min`/`max`: both NaN give the canonical NaN, one NaN gives the other operand, otherwise
  the smaller (larger) with -0.0 below +0.0;
- `neg`/`abs`: flip or clear the sign bit (a NaN keeps its payload: the manual leaves a NaN's
  result unspecified, and this is the choice docs/ptx.md documents);
- `setp.CMP.f32`: ordered comparisons false and unordered ones (`equ neu ltu leu gtu geu`)
  true when an operand is NaN, `num` true when neither is, `nan` when either is; -0 == +0;
- `cvt.{rn,rz,rm,rp}.f32.{s32,u32}`: the integer rounded to binary32 in that mode;
  `cvt.{rni,rzi,rmi,rpi}.{s32,u32}.f32`: rounded to an integer (nearest even, toward zero,
  floor, ceiling), clamped to the destination's range, NaN to 0;
  `cvt.{rni,rzi,rmi,rpi}.f32.f32`: rounded to an integral binary32 (the zero keeps the input's
  sign, infinities stay, NaN gives the canonical NaN).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

CANONICAL_NAN = 0x7FFF_FFFF
SIGN = 0x8000_0000
ONE = 0x3F80_0000
INFINITY = 0x7F80_0000
ORDERED = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
           "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}
ROUNDINGS = {"rn", "rz", "rm", "rp"}
INTEGER_ROUNDINGS = {"rni", "rzi", "rmi", "rpi"}


class FloatError(Exception):
    """An `.f32` instruction or form this module does not model."""


def as_float(word: int) -> np.float32:
    return np.array([word & 0xFFFF_FFFF], dtype=np.uint32).view(np.float32)[0]


def as_word(value) -> int:
    return int(np.array([value], dtype=np.float32).view(np.uint32)[0])


def is_nan(word: int) -> bool:
    return word & 0x7FFF_FFFF > INFINITY


def flushed(word: int) -> int:
    """A subnormal as the zero of its sign (`.ftz`)."""
    return word & SIGN if word & 0x7F80_0000 == 0 else word


def canonical(word: int) -> int:
    return CANONICAL_NAN if is_nan(word) else word


def saturated(word: int) -> int:
    """Clamped to [+0.0, 1.0]; NaN and every negative number, -0.0 too, give +0.0."""
    if is_nan(word) or word & SIGN:
        return 0
    return min(word, ONE)


def arithmetic(name: str, modifiers: set[str], operands: list[int]) -> int:
    """add, sub, mul, div, sqrt, rcp, fma in round to nearest even."""
    if modifiers & {"rz", "rm", "rp", "approx", "full"}:
        raise FloatError(f"{name} with {sorted(modifiers)}")
    ftz = "ftz" in modifiers
    words = [flushed(word) if ftz else word for word in operands]
    values = [as_float(word) for word in words]
    with np.errstate(all="ignore"):
        if name == "fma":
            result = fused_multiply_add(*words)
        elif name == "add":
            result = values[0] + values[1]
        elif name == "sub":
            result = values[0] - values[1]
        elif name == "mul":
            result = values[0] * values[1]
        elif name == "div":
            result = values[0] / values[1]
        elif name == "rcp":
            result = np.float32(1.0) / values[0]
        else:
            result = np.sqrt(values[0])
    word = canonical(as_word(result))
    if ftz:
        word = flushed(word)
    return saturated(word) if "sat" in modifiers else word


def fused_multiply_add(a: int, b: int, c: int) -> np.float32:
    """a * b + c rounded once (PTX's fma.rn.f32): infinities and NaNs as float64 has them
    (no rounding happens), otherwise the exact sum from Python's fractions rounded to the
    nearest binary32 by hand, ties to even, the subnormals' fixed step, overflow to infinity;
    an exact zero sum is -0 only where the product and c are both negative."""
    x, y, z = (float(as_float(word)) for word in (a, b, c))
    if not all(math.isfinite(v) for v in (x, y, z)):
        return np.float32(np.float64(x) * np.float64(y) + np.float64(z))
    total = Fraction(x) * Fraction(y) + Fraction(z)
    if total == 0:
        return np.float32(-0.0 if (a ^ b) & c & SIGN else 0.0)
    magnitude = abs(total)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    step = Fraction(2) ** (max(exponent, -126) - 23)
    units, rest = divmod(magnitude, step)
    units += rest > step / 2 or (rest == step / 2 and units % 2 == 1)
    if units * step >= 2 ** 128:
        return np.float32(math.copysign(math.inf, total))
    return np.float32(float(units * step) * (1 if total > 0 else -1))


def total_order_key(word: int) -> float:
    """A number's value, with -0.0 just below +0.0 (for min and max)."""
    if word & 0x7FFF_FFFF == 0:
        return -1e-300 if word & SIGN else 0.0
    return float(as_float(word))


def minimum_or_maximum(name: str, modifiers: set[str], a: int, b: int) -> int:
    if "ftz" in modifiers:
        a, b = flushed(a), flushed(b)
    if is_nan(a) and is_nan(b):
        return CANONICAL_NAN
    if is_nan(a) or is_nan(b):
        return b if is_nan(a) else a
    pick = min if name == "min" else max
    return pick((a, b), key=total_order_key)


def negate_or_absolute(name: str, modifiers: set[str], a: int) -> int:
    if "ftz" in modifiers:
        a = flushed(a)
    return a ^ SIGN if name == "neg" else a & 0x7FFF_FFFF


def compare(comparison: str, modifiers: set[str], a: int, b: int) -> bool:
    if "ftz" in modifiers:
        a, b = flushed(a), flushed(b)
    unordered = is_nan(a) or is_nan(b)
    if comparison == "num":
        return not unordered
    if comparison == "nan":
        return unordered
    if comparison.endswith("u") and comparison[:-1] in ORDERED:
        return unordered or ORDERED[comparison[:-1]](float(as_float(a)), float(as_float(b)))
    if comparison in ORDERED:
        return not unordered and ORDERED[comparison](float(as_float(a)), float(as_float(b)))
    raise FloatError(f"setp.{comparison}.f32")


def integer_to_float(rounding: str, value: int) -> int:
    """A 32-bit integer's value rounded to binary32 in `rounding` (rn, rz, rm, rp)."""
    nearest = np.float32(value)          # exact in float64, then one rounding: nearest even
    if rounding == "rn" or int(nearest) == value:
        return as_word(nearest)
    too_far = int(nearest) > value if rounding == "rm" or (rounding == "rz" and value > 0) \
        else int(nearest) < value
    if not too_far:
        return as_word(nearest)
    toward = np.float32(-np.inf) if int(nearest) > value else np.float32(np.inf)
    return as_word(np.nextafter(nearest, toward))


def rounded(rounding: str, value: Fraction) -> int:
    """An exact value rounded to an integer: nearest even, toward zero, floor, ceiling."""
    if rounding == "rni":
        return round(value)                 # Fraction rounds halves to even
    if rounding == "rzi":
        return math.trunc(value)
    return math.floor(value) if rounding == "rmi" else math.ceil(value)


def float_to_integer(rounding: str, modifiers: set[str], destination: str, word: int) -> int:
    if "ftz" in modifiers:
        word = flushed(word)
    if is_nan(word):
        return 0
    low, high = (-(1 << 31), (1 << 31) - 1) if destination == "s32" else (0, (1 << 32) - 1)
    if word & 0x7FFF_FFFF == INFINITY:
        return (low if word & SIGN else high) & 0xFFFF_FFFF
    value = rounded(rounding, Fraction(float(as_float(word))))
    return min(max(value, low), high) & 0xFFFF_FFFF


def float_to_integral(rounding: str, modifiers: set[str], word: int) -> int:
    if "ftz" in modifiers:
        word = flushed(word)
    if is_nan(word):
        return CANONICAL_NAN
    if word & 0x7FFF_FFFF == INFINITY:
        return word
    value = rounded(rounding, Fraction(float(as_float(word))))
    return as_word(np.float32(value)) | (word & SIGN if value == 0 else 0)


def convert(parts: list[str], word: int) -> int:
    """cvt with the modifiers and types `parts` names (after `cvt`)."""
    *modifiers, destination, source = parts
    roundings = [part for part in modifiers if part in ROUNDINGS | INTEGER_ROUNDINGS]
    modifiers = set(modifiers) - set(roundings)
    if len(roundings) != 1 or modifiers - {"ftz", "sat"}:
        raise FloatError(f"cvt.{'.'.join(parts)}")
    rounding = roundings[0]
    if destination == "f32" and source in ("s32", "u32") and rounding in ROUNDINGS \
            and not modifiers:
        value = word - (1 << 32) if source == "s32" and word >> 31 else word
        return integer_to_float(rounding, value)
    if source == "f32" and destination in ("s32", "u32") and rounding in INTEGER_ROUNDINGS:
        return float_to_integer(rounding, modifiers, destination, word)
    if source == destination == "f32" and rounding in INTEGER_ROUNDINGS \
            and "sat" not in modifiers:
        return float_to_integral(rounding, modifiers, word)
    raise FloatError(f"cvt.{'.'.join(parts)}")
