"""`write_ports` and `choose_bank_dims` (qwengpu/trace/write_ports.py): how many writes one
store takes per step, worked out by hand for the shipped specs and for small inline ones
(a register written twice, stores that banks separate and stores they cannot)."""

from __future__ import annotations

import pytest

from qwengpu.dsl.elaborate import elaborate_source, load_design
from qwengpu.trace.write_ports import HEAD_SLOTS, choose_bank_dims, write_ports

from trace_helpers import SPECS, TEST_SPECS


@pytest.mark.parametrize("path, overrides, ports", [
    (SPECS / "counter.hdl", {}, 1),                 # count and done, one write each
    (SPECS / "tiny.hdl", {}, 1),
    (SPECS / "qwengpu.hdl", {}, 4),                 # mem[maddr[lane]]: one store per lane
    (SPECS / "qwengpu.hdl", {"LANES": 8, "WARPS": 4}, 8),
    (TEST_SPECS / "two_ports.hdl", {}, 2),          # mem[addr0] and mem[addr1]
    (TEST_SPECS / "two_lanes.hdl", {}, 1),          # acc[0][i], acc[1][i]: a bank per lane
], ids=["counter", "tiny", "qwengpu", "qwengpu-8-lanes", "two_ports", "two_lanes"])
def test_write_ports_of_specs(path, overrides, ports):
    assert write_ports(load_design(path, overrides)) == ports


def ports_of(stage: str) -> int:
    return write_ports(elaborate_source(f"""
machine t;
memory m[4] : u4;
register i : u2;
register j : u2;
stage s {{ emit i; {stage} }}
""", "t.hdl"))


@pytest.mark.parametrize("stage, ports", [
    ("m[i] <= 1;", 1),
    ("i <= i + 1 when j[0]; i <= 0 when j[1];", 2),                # a register written twice
    ("m[i] <= 1; m[j] <= 2;", 2),                                  # addresses unknown
    ("m[0] <= 1; m[1] <= 2;", 1),                                  # one bank per word
    ("m[0] <= 1; m[1] <= 2; j <= m[i][1:0];", 2),                  # a read at an unknown word
    ("m[0] <= 1; m[0] <= 2; m[1] <= 3;", 2),                       # two stores to one bank
])
def test_write_ports_of_inline_stores(stage, ports):
    assert ports_of(stage) == ports


@pytest.mark.parametrize("kind, shape, writes, indices, dims", [
    ("register", (), 3, [(), (), ()], ()),
    ("memory", (4,), 1, [(None,)], ()),                    # one write, fits a head
    ("memory", (4,), 2, [(0,), (1,)], (0,)),
    ("memory", (4,), 2, [(0,), (None,)], ()),
    ("memory", (2, 4), 2, [(0, None), (1, None)], (0,)),
    ("memory", (2, 100), 1, [(1, None)], (0,)),           # 200 elements: more than a head
    ("memory", (HEAD_SLOTS + 1,), 1, [(None,)], ()),
])
def test_choose_bank_dims(kind, shape, writes, indices, dims):
    assert choose_bank_dims(kind, shape, writes, indices) == dims
