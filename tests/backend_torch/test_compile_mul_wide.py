"""The multiplier end to end: tests/backend_torch/specs/mul_wide.hdl (the ALU's 32x32 -> 64
product serving the low word, both high words and a multiply-add, and a 16-bit product with a
constant digit) compiled with --target min and run by stock transformers in fp32 from edge and
random words, record by record against the reference interpreter; the analog column sums
measured in the residual stream against their integers; the product's MLP units."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from qwengpu.backend_torch.checkpoint import allocate
from qwengpu.dsl import Simulator
from qwengpu.ir import evaluate
from qwengpu.trace.prompt import state_prompt
from compile_helpers import compile_and_load, run_case, simulator_state, texts
from tiers import first_by_default

SPEC = "tests/backend_torch/specs/mul_wide.hdl"
PRODUCT_LINE = 1 + Path(SPEC).read_text().splitlines().index(
    "    let p = zext(a, 64) * zext(b, 64);")
STEP_TOLERANCE = 0.19              # of a step reading a total with gap 0.5 (docs/gadgets.md)
_rng = random.Random(64)
CASES = [(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0x80000000, 0x7FFFFFFF, 1),
         (0xFFFF, 0x10000, 0), (_rng.getrandbits(32), _rng.getrandbits(32), _rng.getrandbits(32))]


@pytest.fixture(scope="module")
def mul_wide(tmp_path_factory):
    return compile_and_load(SPEC, tmp_path_factory.mktemp("mul_wide"))


def _simulator(compiled, a, b, c) -> Simulator:
    sim = Simulator(compiled.design)
    for name, value in (("a", a), ("b", b), ("c", c), ("n", 0)):
        sim.set_register(name, value)
    return sim


@pytest.mark.parametrize("case", first_by_default(range(len(CASES)), 2))
def test_matches_interpreter(mul_wide, case):
    compiled, model = mul_wide
    expected, got = run_case(compiled, model, _simulator(compiled, *CASES[case]), prefix=case % 2)
    assert texts(compiled, got) == texts(compiled, expected)


@torch.no_grad()
def test_analog_column_sums_within_tolerance(mul_wide):
    """Every analog value, read where its readers read it, is within a quarter of the steps'
    tolerance of its integer (fp32; dims reused after an erasure keep a residue of ~1e-7,
    2^16 times larger in the analog value's units)."""
    compiled, model = mul_wide
    schedule, graph = compiled.schedule, compiled.plan.graph
    _, groups = allocate(schedule)
    worst = 0.0
    for a, b, c in CASES:
        sim = _simulator(compiled, a, b, c)
        prompt = state_prompt(compiled.protocol, simulator_state(sim))
        hidden = model(torch.tensor([prompt]), output_hidden_states=True).hidden_states
        values: dict[int, int] = {}
        evaluate(graph, {"a": a, "b": b, "c": c, "n": 0}, values)
        analog = [name for name, value in compiled.plan.values.items()
                  if value.analog_scale is not None and name.startswith("s%")]
        assert len(analog) == 16 + 4
        for name in analog:
            group = groups[name]
            held = hidden[(schedule.ready[name] + 1) // 2][0, -1, group.start].item()
            worst = max(worst, abs(held / group.scale - values[int(name[2:])]))
    print(f"\nworst analog deviation {worst:.3g} (steps tolerate {STEP_TOLERANCE})")
    assert worst < STEP_TOLERANCE / 4, worst


def test_product_units(mul_wide):
    compiled, _ = mul_wide
    units = sum(op.units for op in compiled.plan.ops
                if op.loc is not None and op.loc.line == PRODUCT_LINE)
    assert 1000 < units < 2500, units         # the luts of partial products took 30,000
