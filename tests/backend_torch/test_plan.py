"""The plan of one pass (`backend_torch/plan.py`), on specs/counter.hdl: the embedding values
each kind of token sets (worked out by hand from the protocol), the scratch that holds every
record slot, the regions in execution order, and the emission groups the lm_head reads."""

from __future__ import annotations

import pytest

from compile_helpers import compile_plan
from qwengpu.backend_torch.ops import MODE_BOS, MODE_CLOSE, MODE_OTHER
from qwengpu.backend_torch.plan import embedding_values

REGIONS = ["scratch", "commit", "state", "step", "emit"]


@pytest.fixture(scope="module")
def counter():
    return compile_plan("specs/counter.hdl", encoding="onehot").plan


def test_what_each_token_sets(counter):
    protocol = counter.protocol
    slots = len(protocol.record_slots)            # counter: one field of one byte
    field = protocol.token_id("count.b0=3a")
    assert embedding_values(counter, field) == {
        "tok.rslot": 0, "tok.sslot": protocol.stage_bytes, "tok.lo": 0xA, "tok.hi": 0x3,
        "tok.bos": 0, "tok.mode": MODE_CLOSE, "tok.cidx": 0, "tok.next": 0}
    bos = embedding_values(counter, protocol.bos_id)
    assert (bos["tok.bos"], bos["tok.mode"], bos["tok.rslot"]) == (1, MODE_BOS, slots)
    stage = embedding_values(counter, protocol.stage_token(0, 0x5C))
    assert (stage["tok.sslot"], stage["tok.lo"], stage["tok.hi"]) == (0, 0xC, 0x5)
    commit = embedding_values(counter, protocol.commit_token("done", ()))
    done = next(store for store in counter.stores if store.element == "done")
    assert (commit["tok.mode"], commit["tok.cidx"]) == (done.mode, 0)
    assert embedding_values(counter, protocol.trace_id)["tok.mode"] == MODE_OTHER


def test_the_scratch_holds_every_record_slot(counter):
    scratch = [op for op in counter.ops if op.region == "scratch"]
    assert [op.name for op in scratch] == ["record_scratch", "staging_scratch"]
    record = scratch[0].work
    held = [slot for head in record.heads for slot, _ in head]
    assert held == list(range(len(counter.protocol.record_slots)))
    assert record.slot_value == "tok.rslot" and scratch[1].work.slot_value == "tok.sslot"


def test_regions_come_in_execution_order_and_emission_is_complete(counter):
    order = [REGIONS.index(op.region) for op in counter.ops]
    assert order == sorted(order)
    slots = counter.protocol.tokens_per_record
    assert counter.values[counter.emission["kind"]].size == slots + 1   # or <eos>
    assert counter.values[counter.emission["lo"]].size == 16
    assert counter.values[counter.emission["hi"]].size == 16
