"""Multiplication: low word, high word unsigned and signed, multiply-add.  Exhaustive on
8-bit words (slow), every 8-bit a against a spread of b (default), seeded random + edge
values on 32-bit words, both paths, fp32.  bf16: strict xfail (analog column sums)."""

import random

import pytest
import torch

from qwengpu.backend_torch.gadgets.multiply import MultiplyWords, mul_reference
from qwengpu.backend_torch.residual import ResidualLayout

FP32 = dict(max_deviation=1e-3, min_margin=0.99)
EDGES = [0, 1, 2, 3, 0xF, 0x10, 0xFF, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0x80000001,
         0xFFFFFFFE, 0xFFFFFFFF, 0xAAAAAAAA, 0x55555555]


def run_multiply(bench, dtype_name, pairs, bits, signed, addends=None):
    layout = ResidualLayout(1024)
    digits = bits // 4
    a, b = layout.alloc_word("a", digits), layout.alloc_word("b", digits)
    lo = layout.alloc_word("lo", digits)
    hi = layout.alloc_word("hi", digits) if addends is None else None
    addend = layout.alloc_word("c", digits) if addends is not None else None
    gadget = MultiplyWords(layout, a, b, lo=lo, hi=hi, signed=signed, addend=addend)
    cases = [{a: x, b: y} for x, y in pairs]
    expected = {lo: [mul_reference(x, y, bits, "lo") for x, y in pairs]}
    if addends is not None:
        for case, c in zip(cases, addends):
            case[addend] = c
        expected = {lo: [(x * y + c) & ((1 << bits) - 1) for (x, y), c in zip(pairs, addends)]}
    else:
        expected[hi] = [mul_reference(x, y, bits, "hi_s" if signed else "hi_u")
                        for x, y in pairs]
    run = bench.run(gadget, layout, cases, bench.DTYPES[dtype_name])
    return gadget, run, expected


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_8bit_spread(bench, signed):
    spread = [0, 1, 2, 3, 5, 7, 0xF, 0x10, 0x11, 0x3C, 0x55, 0x7F, 0x80, 0x81, 0xAA, 0xFE, 0xFF]
    pairs = [(x, y) for x in range(256) for y in spread]
    _, run, expected = run_multiply(bench, "fp32", pairs, 8, signed)
    bench.check(run, f"mul_8bit_spread_{'s' if signed else 'u'}", "fp32", expected, **FP32)


@pytest.mark.slow
@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_8bit_exhaustive(bench, signed):
    pairs = [(x, y) for x in range(256) for y in range(256)]
    _, run, expected = run_multiply(bench, "fp32", pairs, 8, signed)
    bench.check(run, f"mul_8bit_exhaustive_{'s' if signed else 'u'}", "fp32", expected, **FP32)


@pytest.mark.parametrize("dtype_name", ["fp32", pytest.param("bf16", marks=pytest.mark.xfail(
    strict=True, reason="analog column sums need fp32 (docs/gadgets.md)"))])
@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_32bit_random(bench, signed, dtype_name):
    rng = random.Random(21 + signed)
    pairs = [(x, y) for x in EDGES for y in EDGES]
    pairs += [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(300)]
    gadget, run, expected = run_multiply(bench, dtype_name, pairs, 32, signed)
    bench.check(run, f"mul_32bit_{'s' if signed else 'u'}", dtype_name, expected, **FP32)


def test_mad_lo_32bit(bench):
    rng = random.Random(23)
    pairs = [(x, y) for x in EDGES[:8] for y in EDGES[8:]]
    pairs += [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(200)]
    addends = [rng.choice([0, 1, 0xFFFFFFFF, rng.getrandbits(32)]) for _ in pairs]
    _, run, expected = run_multiply(bench, "fp32", pairs, 32, False, addends)
    bench.check(run, "mad_lo_32bit", "fp32", expected, **FP32)


def column_sums(x: int, y: int, bits: int, columns: int) -> list[int]:
    """The column sums Q_k of the bit-level product (the gadget's layer-1 analog values)."""
    sums = [0] * columns
    for i in range(bits):
        for j in range(bits):
            if (x >> i) & 1 and (y >> j) & 1 and (i + j) // 4 < columns:
                sums[(i + j) // 4] += 2 ** ((i + j) % 4)
    return sums


def test_analog_stages_margin(bench):
    """The analog column sums (after layer 1) and split sums (after layer 2) sit within a
    small distance of their exact integers; the figures go to docs/gadgets.md."""
    rng = random.Random(25)
    pairs = [(x, y) for x in EDGES for y in EDGES]
    pairs += [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(200)]
    layout = ResidualLayout(1024)
    a, b, lo, hi = (layout.alloc_word(n) for n in ("a", "b", "lo", "hi"))
    gadget = MultiplyWords(layout, a, b, lo=lo, hi=hi)
    run = bench.run(gadget, layout, [{a: x, b: y} for x, y in pairs], bench.DTYPES["fp32"],
                    keep_layers=(0, 1))
    q = [column_sums(x, y, 32, 16) for x, y in pairs]
    s = [[q[c][k] % 16 + (q[c][k - 1] // 16 if k else 0) for k in range(16)]
         for c in range(len(pairs))]
    worst = {}
    for stage, layer, groups, values in (("Q", 0, gadget.q, q), ("S", 1, gadget.s, s)):
        for path in ("prefill", "decode"):
            residual = run.after_layer[layer][path]
            for k, group in enumerate(groups):
                measured = residual[:, group.start] / group.scale
                exact = torch.tensor([row[k] for row in values], dtype=torch.float32)
                error = (measured - exact).abs().max().item()
                worst[stage] = max(worst.get(stage, 0.0), error)
    bench.record("mul_analog_error", "fp32", {"Q": worst["Q"], "S": worst["S"],
                                              "cases": len(pairs)})
    assert worst["Q"] < 0.02 and worst["S"] < 0.05, worst
