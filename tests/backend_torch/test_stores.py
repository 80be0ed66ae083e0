"""Stores (`backend_torch/stores.py`): how a plan banks the machine's state elements, and
where a prompt's commit token writes.  Expected banks follow from the spec's own accesses:
specs/qwengpu.hdl writes `regs[warp][lane][r]`, `preds`, `pc` and `live` once per lane with
the lane a constant (so they bank by lane, four banks of 8 x 15 registers, ...), while
`mem` is written at a data-dependent address by every lane (one store, four write ports)."""

from __future__ import annotations

import pytest

from compile_helpers import compile_plan
from qwengpu.compiler import compile
from qwengpu.backend_torch.stores import commit_target, store_of


@pytest.fixture(scope="module")
def qwengpu_plan():
    """The whole QwenGPU's plan (the stores are made there), unverified: test_schedule.py
    verifies every IR of the same compile (30 s here verified to the schedule, 4 s not)."""
    return compile("specs/qwengpu.hdl", "min", stop_after="plan", check=False).plan


def test_per_lane_state_is_banked_by_lane(qwengpu_plan):
    stores = {store.name: store for store in qwengpu_plan.stores}
    for element, shape in (("regs", (8, 15)), ("preds", (8, 7)), ("pc", (8,)),
                           ("live", (8,))):
        banks = [stores[f"{element}@{lane}"] for lane in range(4)]
        assert all(store.bank_dims == (1,) and store.shape == shape for store in banks)
    assert stores["mem"].bank_dims == () and stores["mem"].shape == (126,)
    assert qwengpu_plan.protocol.write_ports == 4
    modes = [store.mode for store in qwengpu_plan.stores]
    assert modes == list(range(modes[0], modes[0] + len(modes)))   # one commit mode each


def test_a_commit_token_writes_its_bank_at_the_local_index(qwengpu_plan):
    regs = qwengpu_plan.protocol.state_by_name["regs"]
    store, flat = commit_target(qwengpu_plan.stores, regs, (5, 2, 9))   # warp 5, lane 2, r9
    assert store.name == "regs@2" and flat == 5 * 15 + 9
    mem = qwengpu_plan.protocol.state_by_name["mem"]
    assert commit_target(qwengpu_plan.stores, mem, (100,)) == (store_of(
        qwengpu_plan.stores, "mem", ()), 100)
    with pytest.raises(KeyError):
        store_of(qwengpu_plan.stores, "regs", (4,))


def test_a_small_machine_needs_no_banks():
    plan = compile_plan("specs/counter.hdl").plan
    assert [(store.name, store.kind, store.bank_dims) for store in plan.stores] == [
        ("count", "register", ()), ("done", "register", ())]
