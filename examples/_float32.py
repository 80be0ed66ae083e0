"""binary32 helpers for the float example models: numpy's float32, never the project's code.

numpy adds, multiplies, divides and takes square roots of float32 values in float32 on the
CPU, which is IEEE-754 arithmetic (correctly rounded to nearest even, subnormals kept): an
independent reference for the machine's FPU and the loader's float routines.  What CUDA adds on top
is PTX's rule that every NaN a float instruction produces is the canonical NaN 0x7FFFFFFF
(`word_of` writes NaN results so); a NaN merely moved (a load, a store) keeps its bits, which
`float_of` and `word_of` do for values they do not compute.
"""

from __future__ import annotations

import math

import numpy as np

CANONICAL_NAN = 0x7FFF_FFFF
NAMED = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def words(values) -> list[int]:
    """A launch buffer as int32 words: integers as they are, {"f32": [...]} as binary32 bits
    (the decimal rounded once to the nearest binary32, as numpy's float32 parses it)."""
    if not isinstance(values, dict):
        return values
    out = []
    for value in values["f32"]:
        number = NAMED.get(value, value) if isinstance(value, str) else value
        out.append(int(np.array([str(number)], dtype=np.float32).view(np.int32)[0]))
    return out


def float_of(word: int) -> np.float32:
    return np.array([word], dtype=np.int64).astype(np.int32).view(np.float32)[0]


def word_of(value: np.float32) -> int:
    """The int32 word of an arithmetic result: its bits, or the canonical NaN."""
    value = np.float32(value)
    if np.isnan(value):
        return CANONICAL_NAN
    return int(np.array([value], dtype=np.float32).view(np.int32)[0])


def add(a: np.float32, b: np.float32) -> np.float32:
    """a + b, one float32 rounding (overflow to infinity is no error)."""
    with np.errstate(all="ignore"):
        return np.float32(a) + np.float32(b)


def multiply(a: np.float32, b: np.float32) -> np.float32:
    """a * b, one float32 rounding (numpy multiplies float32 in float32)."""
    with np.errstate(all="ignore"):
        return np.float32(a) * np.float32(b)


def divide(a: np.float32, b: np.float32) -> np.float32:
    """a / b, correctly rounded in float32 (x / 0 is infinity, 0 / 0 a NaN: no error)."""
    with np.errstate(all="ignore"):
        return np.float32(a) / np.float32(b)


def square_root(a: np.float32) -> np.float32:
    """sqrt(a), correctly rounded in float32 (a negative number gives a NaN: no error)."""
    with np.errstate(all="ignore"):
        return np.sqrt(np.float32(a))


def fused_multiply_add(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    """a * b + c rounded once (C's fmaf; what nvcc makes of `a * b + c`): the exact value
    from Python's fractions, rounded to the nearest binary32 by hand (ties to even, the
    subnormals' fixed step, overflow to infinity); an exact zero sum is -0 only where the
    product and c are both negative zeros (IEEE's sum of two zeros)."""
    from fractions import Fraction
    x, y, z = (float(np.float32(v)) for v in (a, b, c))
    if not all(map(math.isfinite, (x, y, z))):
        with np.errstate(all="ignore"):            # infinities and NaNs: no rounding at all
            return np.float32(np.float64(x) * np.float64(y) + np.float64(z))
    total = Fraction(x) * Fraction(y) + Fraction(z)
    if total == 0:
        negative = math.copysign(1.0, x) * math.copysign(1.0, y) < 0 and math.copysign(1.0, z) < 0
        return np.float32(-0.0 if negative else 0.0)
    magnitude = abs(total)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:          # 2^exponent <= magnitude < 2^(exponent+1)
        exponent -= 1
    step = Fraction(2) ** (max(exponent, -126) - 23)
    units, rest = divmod(magnitude, step)
    units += rest > step / 2 or (rest == step / 2 and units % 2 == 1)
    value = math.copysign(math.inf, total) if units * step >= 2 ** 128 else \
        float(units * step) * (1 if total > 0 else -1)
    return np.float32(value)


def float_launch(launch: dict) -> dict:
    """The launch with every float buffer as words, for `_int32.run_grid`."""
    return {**launch, "buffers": {name: words(values)
                                  for name, values in launch["buffers"].items()}}
