"""End to end on the real machine, specs/qwengpu.hdl: the word graph agrees with the DSL's
reference interpreter, and the default pipeline's digit graph agrees with the word graph on
random machine states (uniform bits, corner values, and programs of valid instructions).
Run with `-s` to see the figures docs/passes.md quotes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from qwengpu.dsl.elaborate import load_design
from qwengpu.dsl.interp import Simulator
from qwengpu.ir import build_graph, evaluate, random_state
from qwengpu.passes import DEFAULT_PIPELINE, format_stats, run_passes
from qwengpu.ir.cost import estimate_cost, format_cost
from qwengpu.ir.digits import ANALOG_OPS
from qwengpu.ir import WORD_OPS
from qwengpu.passes.select_encodings import residual_dims

SPEC = Path(__file__).resolve().parents[2] / "specs" / "qwengpu.hdl"
pytestmark = pytest.mark.skipif(not SPEC.exists(), reason="specs/qwengpu.hdl not written yet")


@pytest.fixture(scope="module")
def design():
    return load_design(SPEC)


@pytest.fixture(scope="module")
def pipeline(design):
    word = build_graph(design)
    digits = word.copy()
    stats = run_passes(digits, DEFAULT_PIPELINE, check=True)
    return word, digits, stats


def program_state(graph, rng: random.Random) -> dict:
    """A state whose program holds valid instructions (docs/isa.md, "Encoding")."""
    state = random_state(graph, rng, "edges")
    words = []
    for _ in range(graph.memories["prog"].size):
        low = rng.randrange(31) | rng.getrandbits(26) << 6
        immediate = rng.choice([rng.getrandbits(32), rng.randrange(64), 4 * rng.randrange(40)])
        words.append(low | immediate << 32)
    state["prog"] = words
    state["pc"] = [rng.randrange(8) for _ in range(graph.memories["pc"].size)]
    state["halted"], state["trap"] = 0, 0
    return state


def _states(graph, count: int, seed: int):
    rng = random.Random(seed)
    for sample in range(count):
        kind = sample % 3
        yield program_state(graph, rng) if kind == 0 else \
            random_state(graph, rng, "edges" if kind == 1 else "uniform")


def test_word_graph_agrees_with_the_reference_interpreter(design):
    graph = build_graph(design)
    for state in _states(graph, 12, seed=1):
        outputs = evaluate(graph, state)
        simulator = Simulator(design)
        for name, value in state.items():
            if name in design.memories:
                simulator.load_memory(name, value)
            else:
                simulator.set_register(name, value)
        record = simulator.step()
        if outputs["stop"]:
            assert record is None
            continue
        assert record == outputs["record"]
        expected_memories = {name: list(state[name]) for name in design.memories}
        expected_registers = {name: state[name] for name in design.registers}
        for name, index, value in outputs["writes"]:
            if name in design.memories:
                offset = 0
                for i, n in zip(index, design.memories[name].shape):
                    offset = offset * n + i
                expected_memories[name][offset] = value
            else:
                expected_registers[name] = value
        assert simulator.memories == expected_memories
        assert simulator.registers == expected_registers


def test_default_pipeline_lowers_everything(pipeline):
    word, digits, stats = pipeline
    assert digits.level == "digit"
    assert not set(digits.op_counts()) & set(WORD_OPS)
    assert all(n.width <= 4 for _, n in digits.items()
               if n.op not in ("write", "field") + ANALOG_OPS)
    dims = residual_dims(digits)
    cost = estimate_cost(digits)
    print()
    print(format_stats(stats), end="")
    print("residual dims:", dict(sorted(dims.items())))
    print(format_cost(cost), end="")
    print("digit ops:", dict(sorted(digits.op_counts().items())))
    assert dims["total"] > 0 and cost.units > 0


def test_digit_graph_agrees_with_word_graph(pipeline):
    word, digits, _ = pipeline
    for state in _states(word, 18, seed=7):
        assert evaluate(digits, state) == evaluate(word, state)
