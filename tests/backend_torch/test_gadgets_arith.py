"""Word add/sub with carry lookahead: exhaustive on 8-bit words, seeded random + edge values on
32- and 64-bit words, in both paths.  bf16 is not exact for these gadgets (see docs/gadgets.md);
its test is a strict xfail that keeps the evidence."""

import random

import pytest

from qwengpu.backend_torch.gadgets.arith import AddWords, SubWords
from qwengpu.backend_torch.residual import ResidualLayout
from qwengpu.dsl.semantics import evaluate

FP32 = dict(max_deviation=1e-3, min_margin=0.99)
BF16_XFAIL = pytest.param("bf16", marks=pytest.mark.xfail(
    strict=True, reason="bf16 rounding of wide thermometer forms (docs/gadgets.md)"))
EDGES = [0, 1, 2, 0xF, 0x10, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]


def word_pairs(seed: int, count: int, bits: int = 32) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    edges = [e & ((1 << bits) - 1) for e in EDGES]
    pairs = [(x, y) for x in edges for y in edges]
    return pairs + [(rng.getrandbits(bits), rng.getrandbits(bits)) for _ in range(count)]


def run_add(bench, dtype_name, pairs, bits, op, with_carry_in=False, seq_len=16):
    layout = ResidualLayout(128 * (bits // 32) * 3 + 128 if bits >= 32 else 256)
    digits = bits // 4
    a, b, out = (layout.alloc_word(n, digits) for n in ("a", "b", "out"))
    carry = layout.alloc_bit("carry_out")
    cin = layout.alloc_bit("carry_in") if with_carry_in else 0
    if op == "add":
        gadget = AddWords(layout, a, b, out, carry_in=cin, carry_out=carry)
    else:
        gadget = SubWords(layout, a, b, out, carry_out=carry)
    cases, sums, carries = [], [], []
    for index, (x, y) in enumerate(pairs):
        c = index % 2 if with_carry_in else 0
        case = {a: x, b: y}
        if with_carry_in:
            case[cin] = c
        cases.append(case)
        sums.append(evaluate(op, (x, y), (bits, bits)) + c & ((1 << bits) - 1))
        carries.append((x + y + c) >> bits if op == "add" else int(x >= y))
    run = bench.run(gadget, layout, cases, bench.DTYPES[dtype_name], seq_len=seq_len)
    return gadget, run, {out: sums, carry: carries}


@pytest.mark.parametrize("op", ["add", "sub"])
def test_8bit_exhaustive(bench, op):
    pairs = [(x, y) for x in range(256) for y in range(256)]
    _, run, outputs = run_add(bench, "fp32", pairs, 8, op, seq_len=4)
    bench.check(run, f"{op}_8bit_exhaustive", "fp32", outputs, **FP32)


@pytest.mark.parametrize("dtype_name", ["fp32", BF16_XFAIL])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_32bit_random(bench, op, dtype_name):
    gadget, run, outputs = run_add(bench, dtype_name, word_pairs(32, 300), 32, op)
    assert gadget.cost().units == (33, 17, 257)
    bench.check(run, f"{op}_32bit", dtype_name, outputs, **FP32)


def test_32bit_carry_in(bench):
    _, run, outputs = run_add(bench, "fp32", word_pairs(33, 200), 32, "add", with_carry_in=True)
    bench.check(run, "addc_32bit", "fp32", outputs, **FP32)


def test_64bit_carry_select(bench):
    rng = random.Random(64)
    pairs = word_pairs(64, 200, bits=64) + [
        ((1 << 64) - 1, 1), ((1 << 32) - 1, 1), ((1 << 64) - 1, (1 << 64) - 1),
        ((1 << 63) - 1, 1)] + [(rng.getrandbits(64) | ((1 << 40) - 1), rng.getrandbits(8))
                               for _ in range(50)]
    gadget, run, outputs = run_add(bench, "fp32", pairs, 64, "add")
    bench.check(run, "add_64bit", "fp32", outputs, **FP32)


def test_noisy_inputs_are_restored(bench):
    """Inputs off their one-hot values by up to 1e-3 in every dim still give outputs as clean
    as exact inputs do: the steps are restoring, so errors do not pass through."""
    layout = ResidualLayout(512)
    a, b, out = (layout.alloc_word(n) for n in ("a", "b", "out"))
    carry = layout.alloc_bit("carry_out")
    gadget = SubWords(layout, a, b, out, carry_out=carry)
    pairs = word_pairs(34, 200)
    run = bench.run(gadget, layout, [{a: x, b: y} for x, y in pairs], bench.DTYPES["fp32"],
                    input_noise=1e-3)
    expected = {out: [(x - y) & 0xFFFFFFFF for x, y in pairs],
                carry: [int(x >= y) for x, y in pairs]}
    figures = bench.check(run, "sub_32bit_noisy_inputs", "fp32", expected, **FP32)
    assert figures["max_deviation"] < 1e-4
