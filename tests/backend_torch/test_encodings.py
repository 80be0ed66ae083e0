"""Binary residual encodings (`backend_torch/encodings.py`): which values a plan makes binary
and why the others stay one-hot, the norm anchor, and whole checkpoints with binary values
under stock transformers.  The cube algebra is tested in test_cubes.py, the forms that read
binary groups in gadgets/test_core.py."""

from __future__ import annotations

import random

import pytest
import torch

from qwengpu.backend_torch.cubes import bits_for
from qwengpu.backend_torch.encodings import choose_encodings
from qwengpu.backend_torch.residual import BINARY


def test_choose_encodings_keeps_what_binary_cannot_read():
    from compile_helpers import compile_plan
    plan = compile_plan("tests/backend_torch/specs/tiny_carried.hdl", encoding="onehot").plan
    assert all(value.encoding == "onehot" for value in plan.values.values())
    why = choose_encodings(plan)
    assert why["tok.bos"] == "the constant group"
    assert all(why[v] == "read by the lm_head" for v in plan.emission.values())
    binary = [v for v in plan.values.values() if v.encoding == BINARY]
    assert binary and all(v.size == bits_for(v.count) for v in binary)
    with pytest.raises(ValueError, match="unknown encoding"):
        choose_encodings(plan, "gray")


TINY = "tests/backend_torch/specs/tiny_carried.hdl"


@pytest.fixture(scope="module")
def tiny_binary(tmp_path_factory):
    from compile_helpers import compile_to, load
    directory = tmp_path_factory.mktemp("tiny_binary")
    compiled = compile_to(TINY, directory, encoding="binary")
    return compiled, load(directory)


def test_binary_values_are_a_quarter_of_the_residual(tiny_binary):
    from compile_helpers import compile_plan
    compiled, _ = tiny_binary
    onehot = compile_plan(TINY, encoding="onehot").schedule
    assert any(v.encoding == BINARY for v in compiled.plan.values.values())
    assert compiled.schedule.dims < onehot.dims / 2


@pytest.mark.parametrize("seed", range(4))
def test_binary_checkpoint_runs_programs_exactly(tiny_binary, seed):
    """The tiny machine with binary values under stock transformers: a loop with taken and
    untaken jumps after a prefilled prefix, and seeded random states, against the
    interpreter (prefill and token-by-token decode inside `run_case`)."""
    from compile_helpers import PROGRAMS, run_case, texts
    from qwengpu.dsl import Simulator
    compiled, model = tiny_binary
    sim = Simulator(compiled.design)
    if seed == 0:
        sim.load_memory("prog", PROGRAMS["countdown"])
        expected, got = run_case(compiled, model, sim, prefix=7)
    else:
        rng = random.Random(seed)
        sim.load_memory("prog", [rng.getrandbits(16) for _ in range(16)])
        sim.load_memory("regs", [rng.getrandbits(8) for _ in range(4)])
        sim.set_register("pc", rng.randrange(16))
        expected, got = run_case(compiled, model, sim, max_records=2)
    assert texts(compiled, got) == texts(compiled, expected)


def test_bfloat16_refuses_binary_values(tmp_path):
    from compile_helpers import compile_plan, compile_to
    from qwengpu.backend_torch.checkpoint import build_model
    from qwengpu.errors import UserError
    compiled = compile_plan(TINY, encoding="binary")
    with pytest.raises(ValueError, match="exact in float32 only"):
        build_model(compiled.schedule, torch.bfloat16)
    with pytest.raises(UserError, match="exact in float32 only"):
        compile_to(TINY, tmp_path, torch.bfloat16, encoding="binary")


def test_a_binary_plan_has_a_norm_anchor_and_fresh_analog_dims():
    """The anchor (one dim at 512 on every token) dominates the norm ledger; analog column
    sums (read at 2^16 times their scale) never share a dim with another value."""
    from compile_helpers import compile_plan
    from qwengpu.backend_torch.encodings import ANCHOR_SCALE
    from qwengpu.backend_torch.plan import NORM_ANCHOR, embedding_values
    spec = "tests/backend_torch/specs/alu_mix.hdl"
    assert NORM_ANCHOR not in compile_plan(spec, encoding="onehot").plan.values
    schedule = compile_plan(spec, encoding="binary").schedule
    plan = schedule.plan
    assert NORM_ANCHOR in plan.embedding
    assert plan.values[NORM_ANCHOR].hot_entries == ANCHOR_SCALE ** 2
    assert embedding_values(plan, plan.protocol.bos_id)[NORM_ANCHOR] == 1
    assert schedule.hot_entries(0) > ANCHOR_SCALE ** 2
    analog = [v for v in schedule.order if plan.values[v].analog_scale is not None
              and v != NORM_ANCHOR and v in schedule.start]
    assert analog
    for a in analog:
        for other in schedule.order:
            size = plan.values[other].size
            if other != a and schedule.start[other] <= schedule.start[a] < \
                    schedule.start[other] + size:
                raise AssertionError(f"{a} shares dim {schedule.start[a]} with {other}")
