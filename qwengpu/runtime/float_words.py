"""binary32 values as the machine's 32-bit words, for launch files and what the CLI prints.

A launch file may give a buffer as `{"f32": [1.5, -0.0, "nan", "inf", "-inf"]}`: each number
is rounded once, from its exact decimal value, to the nearest binary32 (ties to even; past
the largest finite value, an infinity) and stored as its bits.  (A JSON reader that made a
double of it first would round twice.)  `f32_text` prints a word back as the shortest
decimal that reads as the same binary32 (`1.5`, `-0.0`, `nan`, `1e-45`).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np

NAMED = {"nan": 0x7FC0_0000, "inf": 0x7F80_0000, "-inf": 0xFF80_0000}
FRACTION_BITS = 23
MIN_EXPONENT, MAX_EXPONENT = -126, 127


class WrittenNumber(float):
    """A JSON number with a fraction or an exponent, as its float, remembering the decimal the
    file wrote (`json.loads(..., parse_float=WrittenNumber)`), so that `f32_bits` rounds it
    once; elsewhere it prints and compares as the float."""

    def __new__(cls, text: str):
        number = super().__new__(cls, text)
        number.text = text
        return number


def is_f32_value(value) -> bool:
    """A number (not a bool) or one of the names in NAMED."""
    if isinstance(value, str):
        return value in NAMED
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def f32_bits(value) -> int:
    """The bits of `value` (a number, exactly as written, or a name in NAMED) rounded to
    binary32."""
    if isinstance(value, str):
        return NAMED[value]
    exact = Fraction(Decimal(value.text)) if isinstance(value, WrittenNumber) else Fraction(value)
    written = value.text if isinstance(value, WrittenNumber) else str(value)
    sign = 1 << 31 if exact < 0 or (exact == 0 and written.startswith("-")) else 0
    return sign | _magnitude_bits(abs(exact))


def _magnitude_bits(value: Fraction) -> int:
    if value == 0:
        return 0
    exponent = value.numerator.bit_length() - value.denominator.bit_length()
    if Fraction(2) ** exponent > value:
        exponent -= 1                           # now 2^exponent <= value < 2^(exponent+1)
    exponent = max(exponent, MIN_EXPONENT)      # below it: subnormal, a fixed step
    scaled = value / Fraction(2) ** (exponent - FRACTION_BITS)
    mantissa, rest = divmod(scaled.numerator, scaled.denominator)
    twice_rest = 2 * rest
    if twice_rest > scaled.denominator or (twice_rest == scaled.denominator and mantissa & 1):
        mantissa += 1                           # to nearest, ties to even
    if mantissa == 1 << (FRACTION_BITS + 1):
        mantissa, exponent = mantissa >> 1, exponent + 1
    if exponent > MAX_EXPONENT:
        return NAMED["inf"]
    if mantissa < 1 << FRACTION_BITS:           # subnormal (or rounded down to zero)
        return mantissa
    return (exponent - MIN_EXPONENT + 1) << FRACTION_BITS | (mantissa - (1 << FRACTION_BITS))


def f32_text(word: int) -> str:
    """The shortest decimal of the binary32 whose bits are `word` (`nan` for every NaN)."""
    return str(np.array(word & 0xFFFF_FFFF, dtype=np.uint32).view(np.float32))

