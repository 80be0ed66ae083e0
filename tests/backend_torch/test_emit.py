"""Emission of weights (`backend_torch/emit.py`), on the plans of real specs: the embedding
holds ONE and each token's embedding values; the lm_head makes every token the model may
write the winner, by the whole margin, exactly when the emission groups name it; an op's
unit count is what its gadget writes, and the units the scheduler recorded, replayed at the
op's real dims, are the weights its gadget writes there; sums too wide for bf16 are named."""

from __future__ import annotations

import itertools

import pytest
import torch

from compile_helpers import compile_plan
from qwengpu.backend_torch import checkpoint
from qwengpu.backend_torch.checkpoint import EMIT_MARGIN, allocate, build_model
from qwengpu.backend_torch.emit import bf16_risks, embedding_table, lm_head_table, \
    record_units
from qwengpu.backend_torch.plan import embedding_values
from qwengpu.backend_torch.residual import write


@pytest.fixture(scope="module")
def counter():
    return compile_plan("specs/counter.hdl", encoding="onehot").schedule


def test_the_embedding_holds_each_tokens_values(counter):
    plan = counter.plan
    _, groups = allocate(counter)
    table = embedding_table(plan, groups, counter.target.hidden_size)
    assert (table[:, 0] == 1).all()
    for token_id in range(plan.protocol.vocab_size):
        expected = torch.zeros(counter.target.hidden_size, dtype=torch.float64)
        expected[0] = 1
        for name, value in embedding_values(plan, token_id).items():
            write(expected, groups[name], value)
        assert torch.equal(table[token_id], expected), token_id


def test_the_named_token_wins_by_the_margin(counter):
    """For every record position and digit pair, the final residual holding them (after
    the final norm: rms 1 here) gives the token they name a logit higher than every other
    token's by at least the margin; the end of a launch is the position after the last."""
    plan, protocol = counter.plan, counter.plan.protocol
    _, groups = allocate(counter)
    kind, lo, hi = (groups[plan.emission[key]] for key in ("kind", "lo", "hi"))
    head = lm_head_table(plan, groups, counter.target.hidden_size, 1.0, EMIT_MARGIN)
    for position, low, high in itertools.product(range(kind.size), range(16), range(16)):
        residual = torch.zeros(counter.target.hidden_size, dtype=torch.float64)
        for group, value in ((kind, position), (lo, low), (hi, high)):
            write(residual, group, value)
        logits = head @ residual
        if position == protocol.tokens_per_record:
            named = protocol.eos_id
        else:
            name, byte = protocol.record_slots[position]
            named = protocol.field_token(name, byte, (high << 4 | low) & 0xFF)
        best, runner_up = logits.topk(2).values.tolist()
        assert logits.argmax().item() == named and best - runner_up >= EMIT_MARGIN, \
            (position, low, high)


def test_units_are_what_the_gadgets_write(counter):
    plan = counter.plan
    for op in plan.ops:
        if op.kind == "mlp":
            assert record_units(op, plan).units == op.units > 0


@pytest.mark.parametrize("spec, encoding", [("tests/backend_torch/specs/alu_mix.hdl", None),
                                            ("tests/backend_torch/specs/two_lanes.hdl", None),
                                            ("specs/counter.hdl", "onehot")])
def test_replayed_units_are_the_gadgets_weights(spec, encoding, monkeypatch):
    """Every tensor of the model built from the scheduler's recordings equals the one built
    by running every gadget again, bit for bit.  Most ops are replayed; on every machine
    some outputs take dims of an input their op reads last, which the replay refuses, and
    those ops run their gadget: both paths are held to the same tensors."""
    schedule = compile_plan(spec, encoding=encoding).schedule
    outcomes = []

    def counted_replay(*args):
        outcomes.append(replay(*args))
        return outcomes[-1]

    replay = checkpoint.replay
    monkeypatch.setattr(checkpoint, "replay", counted_replay)
    replayed = build_model(schedule).state_dict()
    assert outcomes.count(True) >= len(outcomes) / 2 > 0 and False in outcomes
    for op in schedule.plan.ops:
        op.recording = None
    gadgets = build_model(schedule).state_dict()
    assert replayed.keys() == gadgets.keys()
    for name, tensor in gadgets.items():
        assert torch.equal(replayed[name], tensor), name


def test_wide_sums_are_named_for_bf16():
    wide = bf16_risks(compile_plan("tests/backend_torch/specs/alu_mix.hdl").plan)
    assert wide and all(span > 16 for _, span in wide)
    assert bf16_risks(compile_plan("specs/counter.hdl").plan) == []
