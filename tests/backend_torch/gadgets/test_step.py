"""The restoring step and the AND of terms (`gadgets/step.py`), exhaustively: every pair of
input values, one-hot and binary, in fp32 and bf16, prefill and decode; and inputs that are
not clean (noise of 0.05 on every input dim) give outputs as clean as clean inputs do."""

from __future__ import annotations

import pytest

from gadget_bench import DTYPES, Bench, check_outputs, run_gadget, units_of
from qwengpu.backend_torch.gadgets.core import put
from qwengpu.backend_torch.gadgets.step import step_all, term_forms
from qwengpu.backend_torch.residual import BINARY

ACCEPT_A, ACCEPT_B = {1, 2, 3, 9, 12}, {0, 7, 15}


def and_gadget(bench: Bench, kind: str):
    layout = bench.layout
    size = 4 if kind == BINARY else 16
    a = layout.alloc("a", size, kind=kind)
    b = layout.alloc("b", size, kind=kind)
    out = layout.alloc_bit("out")

    def build(writer):
        writer.bias(put(out, 0))
        step_all(writer, [(a, ACCEPT_A, range(16)), (b, ACCEPT_B, range(16))],
                 put(out, 1) - put(out, 0))
    return a, b, out, build


@pytest.mark.parametrize("kind", ["onehot", BINARY])
def test_and_of_two_terms_exhaustive(dtype_name, kind):
    bench = Bench.new()
    a, b, out, build = and_gadget(bench, kind)
    cases = [{a: x, b: y} for x in range(16) for y in range(16)]
    residuals = run_gadget(build, bench, cases, DTYPES[dtype_name])
    expected = [int(x in ACCEPT_A and y in ACCEPT_B) for x in range(16) for y in range(16)]
    check_outputs(residuals, f"step_all_and_{kind}", dtype_name, {out: expected})


def test_a_binary_set_costs_a_step_per_cube():
    """{1, 2, 3, 9, 12} is not one cube of 4 bits: the AND takes one step (2 units) per
    combination of the terms' cubes; one-hot terms take one step; plus the bias."""
    bench = Bench.new()
    *_, build = and_gadget(bench, "onehot")
    assert units_of(build, bench) == 1 + 2
    bench = Bench.new()
    a, b, out, build = and_gadget(bench, BINARY)
    cubes = len(term_forms(a, ACCEPT_A, range(16))) * len(term_forms(b, ACCEPT_B, range(16)))
    assert cubes > 1 and units_of(build, bench) == 1 + 2 * cubes


def test_noisy_inputs_are_restored(dtype_name):
    """Input dims off by up to 0.05 (a gadget's own outputs are never quite clean): the
    output is as clean as from clean inputs (the step restores), in both dtypes."""
    bench = Bench.new()
    a, b, out, build = and_gadget(bench, "onehot")
    cases = [{a: x, b: y} for x in range(16) for y in range(16)]
    residuals = run_gadget(build, bench, cases, DTYPES[dtype_name], input_noise=0.05)
    expected = [int(x in ACCEPT_A and y in ACCEPT_B) for x in range(16) for y in range(16)]
    check_outputs(residuals, "step_all_noisy_inputs", dtype_name, {out: expected})
