"""Write ports end to end: tests/backend_torch/specs/two_ports.hdl stores from two lanes into
one memory at data-dependent addresses in every step, so `mem` cannot be banked: its second
store is write port 1, committed on the `commit:port1` token the model writes after each
record.  Stock transformers must give the interpreter's trace (fp32), including steps where
both lanes store to one word (lane 1, the later write, wins) and stores out of range."""

from __future__ import annotations

import random

import pytest

from qwengpu.dsl import Simulator
from qwengpu.dsl.elaborate import load_design
from compile_helpers import compile_and_load, compile_plan, run_case, texts
from tiers import EXTRA

SPEC = "tests/backend_torch/specs/two_ports.hdl"


def test_mem_has_two_write_ports_and_one_port_token():
    compiled = compile_plan(SPEC)
    protocol = compiled.protocol
    assert [s.name for s in compiled.plan.stores] == ["mem", "t"]
    assert protocol.write_ports == 2
    assert protocol.tokens_per_record == len(protocol.record_slots) + 1
    storing = protocol.encode_record({f.name: 1 for f in protocol.fields})
    assert protocol.describe(storing[-1]).text == "commit:port1"
    idle = protocol.encode_record({f.name: 0 for f in protocol.fields})
    assert "commit:port1" not in [protocol.describe(token).text for token in idle]


@pytest.fixture(scope="module")
def ports(tmp_path_factory):
    return compile_and_load(SPEC, tmp_path_factory.mktemp("ports"))


def collisions(records) -> int:
    """Steps where both lanes store different values to one word in range."""
    return sum(1 for r in records if r["store0"] and r["store1"] and r["addr0"] == r["addr1"]
               and r["addr0"] < 6 and r["val0"] != r["val1"])


def run(design, memory) -> list[dict[str, int]]:
    sim = Simulator(design)
    sim.load_memory("mem", memory)
    return sim.run(100)


@pytest.fixture(scope="module")
def lane_zero_wins(tmp_path_factory):
    """The spec with its two stores swapped: lane 0's store is the later write."""
    text = open(SPEC).read()
    first, second = "    mem[addr0] <= val0 when store0;\n", "    mem[addr1] <= val1 when store1;\n"
    assert first + second in text
    path = tmp_path_factory.mktemp("swapped") / "swapped.hdl"
    path.write_text(text.replace(first + second, second + first))
    return load_design(str(path))


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=EXTRA), 2])
def test_two_port_trace(ports, lane_zero_wins, seed):
    compiled, model = ports
    rng = random.Random(seed)
    memory = [rng.getrandbits(8) for _ in range(6)]
    reference = run(compiled.design, memory)
    assert collisions(reference) >= 3
    assert run(lane_zero_wins, memory) != reference      # the order of the ports shows
    sim = Simulator(compiled.design)
    sim.load_memory("mem", memory)
    expected, got = run_case(compiled, model, sim, prefix=[0, 7, 8][seed])
    assert texts(compiled, got) == texts(compiled, expected)
