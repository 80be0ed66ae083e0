"""Operands and the independent reference for the FPU's tests, and its gadget machine.

`operand_pairs(rng, n)` draws binary32 operand pairs as uint32 bit patterns, mixed so that
every path of an adder is taken often: uniform bit patterns (any exponent, NaNs and
infinities among them), special values (signed zeros, infinities, NaNs with payloads, the
largest and smallest normals and subnormals), subnormals, pairs with nearby exponents and
opposite signs (cancellation, the normalising shift), pairs whose exponents differ by 22..27
(the guard, round and sticky bits; ties to even), and sums that overflow.

`reference_add(a, b)` is numpy's float32 addition (IEEE-754, round to nearest even, the
CPU's own adder), with every NaN result written as PTX's canonical NaN 0x7FFFFFFF.  It never
uses the project's code.

`fpu_gadget_spec(path)` writes a small machine around the FPU section of specs/qwengpu.hdl
(the real functions, read from the spec, not a copy): each lane adds `xs[lane][pair]` and
`ys[lane][pair]` in two steps, `fadd.s1` then `fadd.s2`, and the record carries the word.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "qwengpu.hdl"
CANONICAL_NAN = 0x7FFF_FFFF
SPECIALS = np.array([0x0000_0000, 0x8000_0000, 0x7F80_0000, 0xFF80_0000, 0x7FC0_0000,
                     0xFFC0_0000, 0x7F80_0001, 0xFFBF_FFFF, 0x7F7F_FFFF, 0xFF7F_FFFF,
                     0x0080_0000, 0x8080_0000, 0x0000_0001, 0x8000_0001, 0x007F_FFFF,
                     0x807F_FFFF, 0x3F80_0000, 0xBF80_0000, 0x4B80_0000, 0x3380_0000],
                    dtype=np.uint32)


def _bits(rng, n: int, high: int = 1 << 32) -> np.ndarray:
    return rng.integers(0, high, n, dtype=np.uint64).astype(np.uint32)


def operand_pairs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n pairs (a, b) of uint32 bit patterns, shuffled together from the kinds above."""
    kind = rng.integers(0, 6, n)
    a, b = _bits(rng, n), _bits(rng, n)
    special = kind == 1
    a[special] = SPECIALS[rng.integers(0, len(SPECIALS), special.sum())]
    b[special] = np.where(rng.random(special.sum()) < 0.5,
                          SPECIALS[rng.integers(0, len(SPECIALS), special.sum())], b[special])
    subnormal = kind == 2
    a[subnormal] = _bits(rng, subnormal.sum(), 1 << 23) | (_bits(rng, subnormal.sum(), 2) << 31)
    b[subnormal] = np.where(rng.random(subnormal.sum()) < 0.5,
                            _bits(rng, subnormal.sum(), 1 << 25), b[subnormal])
    near = kind == 3                      # nearby exponents, often opposite signs
    b[near] = a[near] ^ _bits(rng, near.sum(), 1 << 26) ^ (_bits(rng, near.sum(), 2) << 31)
    rounding = kind == 4                  # exponents 22..27 apart: guard, sticky, ties
    shift = rng.integers(22, 28, rounding.sum()).astype(np.uint32)
    exponent = (a[rounding] >> 23) & 0xFF
    lower = np.where(exponent > shift, exponent - shift, 1).astype(np.uint32)
    mantissa = np.where(rng.random(rounding.sum()) < 0.5, 0, _bits(rng, rounding.sum(), 1 << 23))
    b[rounding] = (_bits(rng, rounding.sum(), 2) << 31) | (lower << 23) | mantissa.astype(np.uint32)
    large = kind == 5                     # overflow to infinity, or just below it
    a[large] = (a[large] & 0x807F_FFFF) | (rng.integers(250, 255, large.sum()).astype(np.uint32) << 23)
    b[large] = (a[large] & 0x8000_0000) | (b[large] & 0x7F_FFFF) | (254 << 23)
    return a, b


def _canonical(result: np.ndarray) -> np.ndarray:
    """float32 results as uint32 words, every NaN the canonical one."""
    result = result.view(np.uint32).copy()
    result[(result & 0x7FFF_FFFF) > 0x7F80_0000] = CANONICAL_NAN
    return result


def reference_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b in binary32 by numpy, NaN results as the canonical NaN (uint32 words)."""
    with np.errstate(all="ignore"):
        return _canonical(a.view(np.float32) + b.view(np.float32))


def fpu_section() -> str:
    """The FPU's functions, as specs/qwengpu.hdl writes them."""
    text = SPEC.read_text()
    return text[text.index("// ---- The FPU"):text.index("// The arithmetic and logic instructions")]


GADGET = """// The FPU of specs/qwengpu.hdl alone (tests/fpu_helpers.py writes this file): each step
// every lane runs fadd.s1 (phase 0) or fadd.s2 (phase 1) on its pair of operands.
machine fpu_add;

param LANES = 4;
param PAIRS = 16;

type Word = u32;
memory xs[LANES][PAIRS] : Word;
memory ys[LANES][PAIRS] : Word;
memory partial[LANES] : Word;
register pair : u(clog2(PAIRS) + 1);
register phase : bool;

{fpu}
stage fpu {{
    stop when pair == PAIRS;
    for lane in 0..LANES {{
        let a = xs[lane][pair];
        let b = ys[lane][pair];
        out word[lane] : Word = phase ? fadd2(a, b, partial[lane]) : fadd1(a, b);
        partial[lane] <= word[lane];
    }}
    emit pair, phase, word;
    phase <= !phase;
    pair <= phase ? pair + 1 : pair;
}}
"""


def fpu_gadget_spec(path: Path) -> Path:
    path.write_text(GADGET.format(fpu=fpu_section()))
    return path


def reference_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b in binary32 by numpy, NaN results as the canonical NaN (uint32 words)."""
    with np.errstate(all="ignore"):
        return _canonical(a.view(np.float32) * b.view(np.float32))


def multiply_pairs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n pairs (a, b) for a multiplier: `operand_pairs`' mix, and as many again of products
    at the edges: exponents summing to just above or below the subnormal boundary (results
    subnormal, or rounding up into the smallest normal) and the overflow boundary, subnormal
    times large, and short significands (few bits set: exact products and exact ties)."""
    a, b = operand_pairs(rng, n)
    kind = rng.integers(0, 8, n)
    signs = _bits(rng, n, 2) << 31
    mantissa_a, mantissa_b = _bits(rng, n, 1 << 23), _bits(rng, n, 1 << 23)
    exponent_a = rng.integers(1, 255, n)
    boundary = np.where(kind < 2, rng.integers(100, 130, n), rng.integers(370, 385, n))
    exponent_b = np.clip(boundary - exponent_a, 1, 254)
    edge = kind < 4                                  # underflow (0, 1), overflow (2, 3)
    short = kind == 4                                # 1..12 significant bits: ties
    width = rng.integers(1, 13, n).astype(np.uint32)
    mantissa_a = np.where(short, (mantissa_a >> (23 - width)) << (23 - width), mantissa_a)
    mantissa_b = np.where(short, (mantissa_b >> (23 - width)) << (23 - width), mantissa_b)
    exponent_b = np.where(short, rng.integers(1, 255, n), exponent_b)
    tiny = kind == 5                                 # a subnormal times a large normal
    exponent_a = np.where(tiny, 0, exponent_a)
    exponent_b = np.where(tiny, rng.integers(127, 255, n), exponent_b)
    built = kind < 6
    a = np.where(built, signs | (exponent_a.astype(np.uint32) << 23) | mantissa_a, a)
    b = np.where(built, (_bits(rng, n, 2) << 31) | (exponent_b.astype(np.uint32) << 23)
                 | mantissa_b, b)
    return a.astype(np.uint32), b.astype(np.uint32)


def reference_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b in binary32 by numpy (IEEE, correctly rounded), NaN results canonical."""
    with np.errstate(all="ignore"):
        return _canonical(a.view(np.float32) / b.view(np.float32))


def reference_square_root(a: np.ndarray) -> np.ndarray:
    """sqrt(a) in binary32 by numpy (IEEE, correctly rounded), NaN results canonical."""
    with np.errstate(all="ignore"):
        return _canonical(np.sqrt(a.view(np.float32)))


def division_pairs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n pairs (a, b) for a divider: `multiply_pairs`' mix with, in a third of them,
    exponent differences at the underflow and overflow boundaries, divisors that are powers
    of two (exact quotients, and ties once a quotient is subnormal), equal significands, and
    subnormal divisors and dividends."""
    a, b = multiply_pairs(rng, n)
    kind = rng.integers(0, 9, n)
    signs = _bits(rng, n, 2) << 31
    exponent_a = rng.integers(1, 255, n)
    edge = np.where(kind == 0, rng.integers(-155, -120, n), rng.integers(120, 131, n))
    exponent_b = np.clip(exponent_a - edge, 1, 254)
    mantissa_b = _bits(rng, n, 1 << 23)
    mantissa_b = np.where(kind == 2, 0, mantissa_b)                       # powers of two
    mantissa_b = np.where(kind == 3, a & 0x7F_FFFF, mantissa_b)           # equal significands
    exponent_a = np.where(kind == 2, rng.integers(0, 30, n), exponent_a)  # subnormal quotients
    exponent_b = np.where(kind == 2, rng.integers(120, 160, n), exponent_b)
    exponent_b = np.where(kind == 4, 0, exponent_b)                       # subnormal divisor
    built = kind < 5
    a = np.where(built, (a & 0x807F_FFFF) | (exponent_a.astype(np.uint32) << 23), a)
    b = np.where(built, signs | (exponent_b.astype(np.uint32) << 23) | mantissa_b, b)
    return a.astype(np.uint32), b.astype(np.uint32)


def root_operands(rng: np.random.Generator, n: int) -> np.ndarray:
    """n words for a square root: `operand_pairs`' first operands, positive in half of them,
    and perfect squares of short significands (exact roots) at every exponent."""
    a, _ = operand_pairs(rng, n)
    kind = rng.integers(0, 4, n)
    a = np.where(kind == 0, a & 0x7FFF_FFFF, a)
    short = rng.integers(1, 1 << 12, n).astype(np.float64)
    scale = rng.integers(-75, 64, n).astype(np.float64)
    with np.errstate(all="ignore"):
        squares = (np.square(short) * np.exp2(2 * scale)).astype(np.float32).view(np.uint32)
    return np.where(kind == 1, squares, a).astype(np.uint32)


def reference_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once to binary32 (uint32 words, NaN results canonical), by numpy's
    float64: the product of two binary32 values is exact there, the sum with c is rounded to
    odd (its exact error from TwoSum: where it is not 0 and the sum's last bit is even, the
    sum moves one ulp toward it), and rounding a value rounded to odd with 53 bits to 24 bits
    is the correct rounding of the exact value (53 >= 24 + 2; Boldo and Melquiond)."""
    with np.errstate(all="ignore"):
        x, y, z = (np.asarray(v, np.uint32).view(np.float32).astype(np.float64)
                   for v in (a, b, c))
        product = x * y
        total = product + z
        product_part = total - z
        error = (product - product_part) + (z - (total - product_part))
        bits = total.view(np.uint64)
        toward = np.where(np.sign(error) == np.sign(total), bits + np.uint64(1),
                          bits - np.uint64(1))
        odd = (error != 0) & np.isfinite(total) & ((bits & np.uint64(1)) == 0)
        rounded = np.where(odd, toward, bits).view(np.float64).astype(np.float32)
    return _canonical(rounded)


def fma_triples(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """n triples (a, b, c) for a fused multiply-add: products from `multiply_pairs` (edges,
    subnormals, ties, overflow) and addends from `operand_pairs`, and in most of them an
    addend built against the product: its negation with the last 1 to 12 bits changed
    (cancellation down to the product's low bits), a value 20 to 30 binades below it (the
    guard and sticky bits), one far below it (a product rounded exactly at a tie, broken or
    not by the tiny addend), one far above it (the product only a sticky bit), and subnormal
    addends beside subnormal products."""
    a, b = multiply_pairs(rng, n)
    c, _ = operand_pairs(rng, n)
    with np.errstate(all="ignore"):
        product = (a.view(np.float32).astype(np.float64)
                   * b.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)
    kind = rng.integers(0, 8, n)
    exponent = (product >> 23) & 0xFF
    signs = _bits(rng, n, 2) << 31
    mantissa = _bits(rng, n, 1 << 23)

    def at(offset):
        field = np.clip(exponent.astype(np.int64) + offset, 0, 254).astype(np.uint32)
        return signs | (field << 23) | mantissa

    cancel = product ^ np.uint32(0x8000_0000) ^ _bits(rng, n, 1 << 12)
    c = np.where(kind == 0, cancel, c)
    c = np.where(kind == 1, at(-rng.integers(20, 31, n)), c)
    c = np.where(kind == 2, at(-rng.integers(40, 120, n)), c)
    c = np.where(kind == 3, at(rng.integers(25, 60, n)), c)
    c = np.where(kind == 4, signs | _bits(rng, n, 1 << 23), c)
    ties = kind == 5                   # 12-bit times 13-bit odd significands: 25-bit products
    odd_a = (_bits(rng, n, 1 << 11) << 1 | 1) << 12
    odd_b = (_bits(rng, n, 1 << 12) << 1 | 1) << 11
    a = np.where(ties, (a & 0xFF80_0000) | (odd_a & 0x7F_FFFF), a)
    b = np.where(ties, (b & 0xFF80_0000) | (odd_b & 0x7F_FFFF), b)
    tiny_c = at(-rng.integers(30, 100, n)) & np.uint32(0x807F_FFFF) | (
        np.clip(exponent.astype(np.int64) - rng.integers(30, 100, n), 0, 254)
        .astype(np.uint32) << 23)
    c = np.where(ties, np.where(rng.random(n) < 0.2, 0, tiny_c), c)
    return a.astype(np.uint32), b.astype(np.uint32), c.astype(np.uint32)
