"""Tables (`gadgets/table.py`), exhaustively: a function of two hex digits (every pair), one
of a digit and a constant, two outputs sharing their rows, and binary inputs and outputs; in
fp32 and bf16, prefill and decode.  Expected values come from the Python function itself."""

from __future__ import annotations

import pytest

from gadget_bench import DTYPES, Bench, check_outputs, run_gadget, units_of
from qwengpu.backend_torch.gadgets.table import table
from qwengpu.backend_torch.residual import BINARY


def mixed(x, y):
    return (3 * x + y) % 16 ^ (x & y)


@pytest.mark.parametrize("kind", ["onehot", BINARY])
def test_a_function_of_two_digits(dtype_name, kind):
    bench = Bench.new()
    size = 4 if kind == BINARY else 16
    a = bench.layout.alloc("a", size, kind=kind)
    b = bench.layout.alloc("b", size, kind=kind)
    out = bench.layout.alloc("out", size, kind=kind)

    def build(writer):
        table(writer, [(a, range(16), None), (b, range(16), None)], mixed, out)
    cases = [{a: x, b: y} for x in range(16) for y in range(16)]
    residuals = run_gadget(build, bench, cases, DTYPES[dtype_name])
    check_outputs(residuals, f"table_pair_{kind}", dtype_name,
                  {out: [mixed(x, y) for x in range(16) for y in range(16)]})


def test_shared_rows_and_a_constant_input(dtype_name):
    """Two outputs from one set of rows (shared luts), one input a constant (7)."""
    bench = Bench.new()
    a = bench.layout.alloc_digit("a")
    low, high = bench.layout.alloc_digit("low"), bench.layout.alloc_digit("high")

    def fn(x, c):
        return (x * c) & 15, (x * c) >> 4

    def build(writer):
        table(writer, [(a, range(16), None), (None, (7,), 7)], fn, [low, high])
    residuals = run_gadget(build, bench, [{a: x} for x in range(16)], DTYPES[dtype_name])
    check_outputs(residuals, "table_shared_rows", dtype_name,
                  {low: [(7 * x) & 15 for x in range(16)], high: [7 * x >> 4 for x in range(16)]})


def test_cost_is_a_step_per_output_value_of_each_row():
    bench = Bench.new()
    a, b = bench.layout.alloc_digit("a"), bench.layout.alloc_digit("b")
    out = bench.layout.alloc_digit("out")
    inputs = [(a, range(16), None), (b, range(4), None)]
    # rows over b (4 values); within a row, one step per distinct value over a
    expected = 2 * sum(len({mixed(x, y) for x in range(16)}) for y in range(4))
    assert units_of(lambda writer: table(writer, inputs, mixed, out), bench) == expected
    assert units_of(lambda writer: table(writer, [(None, (3,), 3)], lambda c: c + 1, out),
                    bench) == 1                                    # a constant: one bias
