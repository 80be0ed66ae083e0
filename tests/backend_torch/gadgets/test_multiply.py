"""A product's column (`gadgets/multiply.py`), exhaustively over two hex digits: the analog
output of column k is sum a_i b_j 2^((i+j) % 4) over the bit pairs with (i+j) // 4 == k, and
with a constant digit for a; in fp32 and bf16, prefill and decode.  Expected values are
computed bit by bit in plain Python."""

from __future__ import annotations

import pytest

from gadget_bench import DTYPES, Bench, check_outputs, run_gadget
from qwengpu.backend_torch.gadgets.multiply import mul_column
from qwengpu.backend_torch.ops import ANALOG_SCALE


def column_value(a: int, b: int, column: int) -> int:
    return sum(((a >> i) & 1) * ((b >> j) & 1) << ((i + j) % 4)
               for i in range(4) for j in range(4) if (i + j) // 4 == column)


@pytest.mark.parametrize("column", [0, 1])
def test_a_column_of_two_digits(dtype_name, column):
    bench = Bench.new()
    a, b = bench.layout.alloc_digit("a"), bench.layout.alloc_digit("b")
    out = bench.layout.alloc_analog("column", ANALOG_SCALE)

    def build(writer):
        mul_column(writer, column, 1, [(a, range(16), None), (b, range(16), None)], out)
    cases = [{a: x, b: y} for x in range(16) for y in range(16)]
    residuals = run_gadget(build, bench, cases, DTYPES[dtype_name])
    check_outputs(residuals, f"mul_column_{column}", dtype_name,
                  {out: [column_value(c[a], c[b], column) for c in cases]})


@pytest.mark.parametrize("dtype_name", ["fp32", pytest.param("bf16", marks=pytest.mark.xfail(
    reason="a constant bit's linear unit rounds in bf16 (measured 0.125 off): multipliers are "
           "exact in float32 only", strict=True))])
def test_a_constant_digit(dtype_name):
    bench = Bench.new()
    b = bench.layout.alloc_digit("b")
    out = bench.layout.alloc_analog("column", ANALOG_SCALE)

    def build(writer):
        mul_column(writer, 0, 1, [(None, (11,), 11), (b, range(16), None)], out)
    residuals = run_gadget(build, bench, [{b: y} for y in range(16)], DTYPES[dtype_name])
    check_outputs(residuals, "mul_column_constant", dtype_name,
                  {out: [column_value(11, y, 0) for y in range(16)]})
