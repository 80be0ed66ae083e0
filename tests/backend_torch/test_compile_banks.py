"""Banked memories end to end: tests/backend_torch/specs/two_lanes.hdl writes `acc[lane][i]`
once per lane in every step, so the compiler splits `acc` into one bank per lane (one DeltaNet
store each, `stores.py`); the prompt's commits of `acc[l][i]` go to bank l.  Stock
transformers must give the interpreter's trace from seeded random accumulators."""

from __future__ import annotations

import random

import pytest

from qwengpu.dsl import Simulator
from compile_helpers import compile_and_load, compile_plan, run_case, texts

SPEC = "tests/backend_torch/specs/two_lanes.hdl"


def test_acc_is_split_into_lane_banks():
    plan = compile_plan(SPEC).plan
    assert [s.name for s in plan.stores] == ["acc@0", "acc@1", "t"]
    assert all(s.shape == (4,) for s in plan.stores[:2])


@pytest.fixture(scope="module")
def lanes(tmp_path_factory):
    return compile_and_load(SPEC, tmp_path_factory.mktemp("lanes"))


@pytest.mark.parametrize("seed", range(3))
def test_two_lane_trace(lanes, seed):
    compiled, model = lanes
    rng = random.Random(seed)
    sim = Simulator(compiled.design)
    sim.load_memory("acc", [rng.getrandbits(8) for _ in range(8)])
    sim.set_register("t", rng.randrange(3))
    expected, got = run_case(compiled, model, sim, prefix=seed)
    assert texts(compiled, got) == texts(compiled, expected)
