"""The digit primitives end to end: tests/backend_torch/specs/alu_mix.hdl (a 16-bit product,
xor/and luts, a 16-bit add with carry lookahead, a comparison, selects) compiled with --target
min and run by stock transformers from seeded random registers, fp32 and bf16, compared
record by record with the reference interpreter."""

from __future__ import annotations

import random

import pytest
import torch

from qwengpu.dsl import Simulator
from compile_helpers import compile_and_load, run_case, texts
from tiers import EXTRA

SPEC = "tests/backend_torch/specs/alu_mix.hdl"


BF16_WIDE_SUMS = pytest.mark.xfail(
    reason="bf16 is not exact for sums whose total spans more than ~16 values (the multiplier's "
           "column sums reach 44): a restoring step far above its threshold has "
           "pre-activations in the thousands, where bf16 rounds the gate outputs by 16-32, "
           "more than the pair's offset B; hdlc compile warns (bf16_risks)", strict=False)


@pytest.fixture(scope="module")
def alu(request, tmp_path_factory):
    """The machine compiled in the dtype the test's parameter names."""
    compiled, model = compile_and_load(SPEC, tmp_path_factory.mktemp("alu"), request.param)
    ops = {op.label for op in compiled.plan.ops}
    assert {"lut", "luts", "sum", "carry", "select"} & ops >= {"sum", "carry", "select"}
    return compiled, model


DTYPES = {"fp32": (torch.float32, ()), "bf16": (torch.bfloat16, (BF16_WIDE_SUMS,))}
# seeds 0 and 1 in fp32, seed 0 in bf16 by default (bf16 decoding costs three times fp32's);
# the rest in the extra tier
DEFAULT = {("fp32", 0), ("fp32", 1), ("bf16", 0)}


@pytest.mark.parametrize("alu, seed", [
    pytest.param(dtype, seed, id=f"{name}-{seed}",
                 marks=marks + (() if (name, seed) in DEFAULT else (EXTRA,)))
    for name, (dtype, marks) in DTYPES.items() for seed in range(3)], indirect=["alu"])
def test_random_start(alu, seed):
    compiled, model = alu
    rng = random.Random(seed)
    sim = Simulator(compiled.design)
    sim.set_register("a", rng.getrandbits(8))
    sim.set_register("b", rng.getrandbits(8))
    sim.set_register("n", rng.randrange(6, 10))
    expected, got = run_case(compiled, model, sim, prefix=seed)
    assert texts(compiled, got) == texts(compiled, expected)
