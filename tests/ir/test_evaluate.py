"""`evaluate` and `random_state` (qwengpu/ir/evaluate.py): a step graph run on a machine
state.  The independent models are the reference interpreter (`qwengpu.dsl.interp`, which
compiles its own Python step function from the netlist) for whole specs, the semantics table
for single word operators, and hand-computed values for memories, lanes and field inputs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from qwengpu.dsl import semantics
from qwengpu.dsl.elaborate import load_design
from qwengpu.dsl.interp import Simulator
from qwengpu.dsl.netlist import MemorySpec, RegisterSpec
from qwengpu.ir import Graph, build_graph, evaluate, random_state, verify

from graph_helpers import COUNTER, memory_graph, register_graph, spec_graph

ROOT = Path(__file__).resolve().parents[2]
SPECS = [*sorted((ROOT / "specs").glob("*.hdl")),
         *sorted((ROOT / "tests" / "backend_torch" / "specs").glob("*.hdl"))]


def test_evaluate_counter():
    graph = spec_graph(COUNTER)
    assert evaluate(graph, {"count": 10, "done": 0}) == {
        "writes": [("count", (), 11), ("done", (), 1)], "record": {"count": 10}, "stop": 0}
    assert evaluate(graph, {"count": 255, "done": 1})["writes"] == [("count", (), 0)]


def test_evaluate_memory_out_of_range_reads_zero_and_drops_writes():
    graph = memory_graph()
    memory = [10, 20, 30, 40, 50, 60]
    assert evaluate(graph, {"m": memory, "i": 1, "j": 5, "r": 7, "w": 1}) == {
        "writes": [("m", (1,), 7)], "record": {"out": 80}, "stop": 0}
    assert evaluate(graph, {"m": memory, "i": 7, "j": 0, "r": 7, "w": 1}) == {
        "writes": [], "record": {"out": 10}, "stop": 0}


def _apply(design, state: dict, writes) -> dict:
    """The state after the writes, in order (a later write to one element wins)."""
    after = {name: list(value) if isinstance(value, list) else value
             for name, value in state.items()}
    for name, index, value in writes:
        if name in design.registers:
            after[name] = value
            continue
        flat = 0
        for i, size in zip(index, design.memories[name].shape):
            flat = flat * size + i
        after[name][flat] = value
    return after


@pytest.mark.parametrize("path", SPECS, ids=lambda path: path.stem)
def test_evaluate_agrees_with_the_reference_interpreter(path):
    design = load_design(path)
    graph = build_graph(design)
    rng = random.Random(7)
    for sample in range(30):
        state = random_state(graph, rng, "edges" if sample % 2 else "uniform")
        simulator = Simulator(design)
        for name, values in state.items():
            if name in design.memories:
                simulator.load_memory(name, values)
            else:
                simulator.set_register(name, values)
        record = simulator.step()
        result = evaluate(graph, state)
        assert result["stop"] == (record is None), f"state {state}"
        if record is None:
            continue
        assert result["record"] == record, f"state {state}"
        after = _apply(design, state, result["writes"])
        assert {**simulator.memories, **simulator.registers} == after, f"state {state}"


def operator_shape(op: str) -> tuple[tuple[int, ...], int, int]:
    """Operand widths, result width and low bit to try `op` at."""
    shapes = {"shl": ((8, 3), 8, 0), "shr": ((8, 4), 8, 0), "sar": ((8, 2), 8, 0),
              "mux": ((1, 8, 8), 8, 0), "slice": ((8,), 3, 2), "zext": ((5,), 8, 0),
              "sext": ((5,), 8, 0), "concat": ((3, 5, 4), 12, 0)}
    if op in shapes:
        return shapes[op]
    row = semantics.OPERATORS[op]
    return (8,) * row.arity, 1 if row.width_rule == semantics.BOOL else 8, 0


@pytest.mark.parametrize("op", sorted(semantics.OPERATORS))
def test_every_word_operator_agrees_with_the_semantics_table(op):
    widths, width, low = operator_shape(op)
    graph, registers = register_graph(**{f"r{i}": w for i, w in enumerate(widths)})
    node = graph.add(op, width, registers, low=low)
    graph.add("field", width, (node,), state="out")
    verify(graph)
    rng = random.Random(op)
    for _ in range(50):
        values = [rng.getrandbits(w) for w in widths]
        state = {f"r{i}": v for i, v in enumerate(values)}
        expected = semantics.evaluate(op, values, widths, width, low)
        assert evaluate(graph, state)["record"] == {"out": expected}, state


def test_memory_contents_in_every_form():
    graph = Graph("t", "t.hdl", memories={"m": MemorySpec("m", (2, 3), 8)})
    row, column = graph.add("const", 1, value=1), graph.add("const", 2, value=2)
    graph.add("field", 8, (graph.add("read", 8, (row, column), state="m"),), state="out")
    for contents, element in [([0, 1, 2, 3, 4, 5], 5), ([[0, 1, 2], [3, 4, 5]], 5),
                              ({(1, 2): 9, (0, 0): 1}, 9), ({}, 0), ([1], 0), (None, 0)]:
        state = {} if contents is None else {"m": contents}
        assert evaluate(graph, state)["record"] == {"out": element}, contents


def test_registers_missing_from_the_state_read_their_reset():
    graph = Graph("t", "t.hdl", registers={"r": RegisterSpec("r", 8, reset=42)})
    graph.add("field", 4, (graph.add("register", 4, state="r", low=4),), state="high")
    assert evaluate(graph, {})["record"] == {"high": 42 >> 4}
    assert evaluate(graph, {"r": 0xA5})["record"] == {"high": 0xA}


def test_node_values_receive_every_value():
    graph = spec_graph(COUNTER)
    values = {}
    evaluate(graph, {"count": 41, "done": 0}, values)
    # %0 done, %1 count, %2 const 1, %3 count + 1, %4 const 1, %5 const 10, %6 count == 10
    assert values == {0: 0, 1: 41, 2: 1, 3: 42, 4: 1, 5: 10, 6: 0}


def test_a_field_with_a_lane_reads_its_cone_at_that_lane():
    graph = Graph("t", "t.hdl", memories={"v": MemorySpec("v", (2,), 4)})
    lane = graph.add("next_lane", 1)
    element = graph.add("read", 4, (lane,), state="v")
    graph.add("field", 4, (element,), state="out0", lane=0)
    graph.add("field", 4, (element,), state="out1", lane=1)
    verify(graph)
    assert evaluate(graph, {"v": [6, 9]})["record"] == {"out0": 6, "out1": 9}


def test_a_field_input_has_the_value_the_step_gives_the_field():
    graph, (r,) = register_graph(r=4)
    total = graph.add("add", 4, (r, graph.add("const", 4, value=1)))
    graph.add("field", 4, (total,), state="f")
    high = graph.add("field_input", 2, state="f", low=2)
    graph.add("write", 4, (graph.add("const", 1, value=1), high), state="r")
    verify(graph)
    for value in range(16):
        result = evaluate(graph, {"r": value})
        assert result["writes"] == [("r", (), ((value + 1) % 16) >> 2)]


def test_random_state_fits_every_element_and_repeats_with_its_seed():
    graph = memory_graph()
    for style in ("uniform", "edges"):
        state = random_state(graph, random.Random(3), style)
        assert state == random_state(graph, random.Random(3), style)
        assert set(state) == {"m", "i", "j", "r", "w"} and len(state["m"]) == 6
        assert all(0 <= v < 256 for v in state["m"]) and 0 <= state["i"] < 8
        assert state["w"] in (0, 1)
    edges = [random_state(graph, random.Random(seed), "edges")["r"] for seed in range(40)]
    assert {0, 255} <= set(edges)            # the corners show up
