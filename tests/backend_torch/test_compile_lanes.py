"""Folded lanes end to end: tests/backend_torch/specs/lane_alu.hdl runs one ALU per lane and
emits each lane's result as its own field; `fold-lanes` computes them with one cone read at
`tok.lane` (the lane of the field in the slot emitted next).  Stock transformers must give the
interpreter's trace from seeded random accumulators, and the folded plan must be smaller."""

from __future__ import annotations

import random

import pytest

from qwengpu.dsl import Simulator
from qwengpu.passes import DEFAULT_PIPELINE
from compile_helpers import compile_and_load, compile_plan, run_case, texts

SPEC = "tests/backend_torch/specs/lane_alu.hdl"


def test_lane_fields_are_emitted_from_one_cone():
    compiled = compile_plan(SPEC)
    plan = compiled.plan
    assert "tok.lane" in plan.embedding and plan.values["tok.lane"].values == 3
    emit_lo = next(op for op in plan.ops if op.outputs == [plan.emission["lo"]])
    arms = dict(emit_lo.work.arms)
    slots = plan.protocol.record_slots
    v_arms = {arms[(s,)] for s, (name, byte) in enumerate(slots) if name.startswith("v")}
    assert len(v_arms) == 1                   # v0, v1, v2 read the same folded digit
    unfolded = compile_plan(SPEC, passes=[p for p in DEFAULT_PIPELINE if p != "fold-lanes"])
    units = [sum(op.units for op in c.plan.ops) for c in (compiled, unfolded)]
    assert units[0] < units[1]


@pytest.fixture(scope="module")
def lanes(tmp_path_factory):
    return compile_and_load(SPEC, tmp_path_factory.mktemp("lane_alu"))


@pytest.mark.parametrize("seed", range(3))
def test_lane_alu_trace(lanes, seed):
    compiled, model = lanes
    rng = random.Random(seed)
    sim = Simulator(compiled.design)
    sim.load_memory("acc", [rng.getrandbits(8) for _ in range(12)])
    sim.set_register("t", rng.randrange(3))
    expected, got = run_case(compiled, model, sim, prefix=seed)
    assert texts(compiled, got) == texts(compiled, expected)
