"""Digit arithmetic (`gadgets/arith.py`), exhaustively: `digit_sum` as an adder's digit
(x + y + carry-in, mod 16) and as the table of a weighted sum with a constant and an analog
term; `carry` from a carry-in and the digits' kill/propagate/generate classes; in fp32 and
bf16, prefill and decode.  Expected values come from plain integer arithmetic."""

from __future__ import annotations

import itertools

import pytest

from gadget_bench import DTYPES, Bench, check_outputs, run_gadget
from qwengpu.backend_torch.gadgets.arith import carry, digit_sum
from qwengpu.backend_torch.ops import ANALOG_SCALE
from qwengpu.ir.digits import GENERATE, KILL, PROPAGATE


# Sums whose totals span more than 16 values are exact in float32 only: their far steps
# pre-activations are too large for bf16 (emit.bf16_risks flags them; the compiler writes
# such machines in float32).  Measured: deviation 0.25 in bf16, the values still right.
WIDE_IN_BF16 = pytest.mark.xfail(reason="a sum spanning more than 16 totals is exact in "
                                        "float32 only (emit.bf16_risks)", strict=True)


@pytest.mark.parametrize("dtype_name", ["fp32", pytest.param("bf16", marks=WIDE_IN_BF16)])
def test_the_digit_of_an_addition(dtype_name):
    bench = Bench.new()
    x, y = bench.layout.alloc_digit("x"), bench.layout.alloc_digit("y")
    cin, out = bench.layout.alloc_bit("cin"), bench.layout.alloc_digit("out")
    identity = list(range(16))

    def build(writer):
        digit_sum(writer, [(x, range(16), None), (y, range(16), None), (cin, range(2), None)],
                  [identity, identity, [0, 1]], lambda total: total % 16, out)
    cases = [{x: a, y: b, cin: c} for a in range(16) for b in range(16) for c in range(2)]
    residuals = run_gadget(build, bench, cases, DTYPES[dtype_name])
    check_outputs(residuals, "digit_sum_add", dtype_name,
                  {out: [(c[x] + c[y] + c[cin]) % 16 for c in cases]})


@pytest.mark.parametrize("dtype_name", ["fp32", pytest.param("bf16", marks=WIDE_IN_BF16)])
def test_a_weighted_sum_with_a_constant_and_an_analog_term(dtype_name):
    """S = 2x + 5 + n (n an analog number 0..6); the table maps S to S // 3."""
    bench = Bench.new()
    x, out = bench.layout.alloc_digit("x"), bench.layout.alloc_digit("out")
    number = bench.layout.alloc_analog("n", ANALOG_SCALE)        # as a product's column

    def build(writer):
        digit_sum(writer, [(x, range(8), None), (None, (5,), 5), (number, range(7), None)],
                  [[2 * v for v in range(8)], [0] * 5 + [5], list(range(7))],
                  lambda total: total // 3, out)
    cases = [{x: a, number: n} for a in range(8) for n in range(7)]
    residuals = run_gadget(build, bench, cases, DTYPES[dtype_name])
    check_outputs(residuals, "digit_sum_weighted", dtype_name,
                  {out: [(2 * c[x] + 5 + c[number]) // 3 for c in cases]})


def test_a_narrow_sum_is_exact_in_both_dtypes(dtype_name):
    """x + carry-in over x in 0..14: 16 totals, within what bf16 holds."""
    bench = Bench.new()
    x, cin, out = bench.layout.alloc_digit("x"), bench.layout.alloc_bit("cin"), \
        bench.layout.alloc_digit("out")

    def build(writer):
        digit_sum(writer, [(x, range(15), None), (cin, range(2), None)],
                  [list(range(16)), [0, 1]], lambda total: total, out)
    cases = [{x: a, cin: c} for a in range(15) for c in range(2)]
    residuals = run_gadget(build, bench, cases, DTYPES[dtype_name])
    check_outputs(residuals, "digit_sum_narrow", dtype_name,
                  {out: [c[x] + c[cin] for c in cases]})


def test_carry_out_of_every_class_combination(dtype_name):
    """Three digits' classes (0 kill, 1 propagate, 2 generate) and a carry-in: the carry
    goes out when it originates (carry-in or a generate) and only propagates follow."""
    bench = Bench.new()
    cin = bench.layout.alloc_bit("cin")
    digits = [bench.layout.alloc(f"class{k}", 3) for k in range(3)]
    out = bench.layout.alloc_bit("out")

    def build(writer):
        carry(writer, [(cin, range(2), None)] + [(d, range(3), None) for d in digits], out)

    def reference(c, classes):
        for kind in classes:
            c = 1 if kind == GENERATE else 0 if kind == KILL else c
        return c
    combos = list(itertools.product(range(2), *(range(3) for _ in digits)))
    cases = [{cin: c, **dict(zip(digits, classes))} for c, *classes in combos]
    residuals = run_gadget(build, bench, cases, DTYPES[dtype_name])
    check_outputs(residuals, "carry", dtype_name,
                  {out: [reference(c, classes) for c, *classes in combos]})
    assert (KILL, PROPAGATE, GENERATE) == (0, 1, 2)
