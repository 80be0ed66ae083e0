"""Small graphs for the pass tests, and the meaning check every pass test uses."""

from __future__ import annotations

import random

from qwengpu.dsl.elaborate import elaborate_source
from qwengpu.dsl.netlist import MemorySpec, RegisterSpec
from qwengpu.ir import Graph, build_graph, evaluate, random_state, verify
from qwengpu.passes import run_passes


def operator_graph(op: str, widths: tuple[int, ...], width: int | None = None,
                   low: int = 0) -> Graph:
    """Registers r0, r1, ... of the given widths, one `op` node over them, field `out`."""
    registers = {f"r{i}": RegisterSpec(f"r{i}", w) for i, w in enumerate(widths)}
    graph = Graph("t", "t.hdl", registers=registers)
    args = [graph.add("register", w, state=f"r{i}") for i, w in enumerate(widths)]
    if width is None:
        from qwengpu.dsl import semantics
        width = semantics.result_width(op, widths, None, low)
    node = graph.add(op, width, args, low=low)
    graph.add("field", width, (node,), state="out")
    return graph


def spec_graph(source: str) -> Graph:
    """The graph of a small spec written inline (`machine t;` is added)."""
    return build_graph(elaborate_source("machine t;\n" + source, "t.hdl"))


def memory_graph() -> Graph:
    """A graph with a memory: out = m[i] + m[j], m[i] <= r when w."""
    memories = {"m": MemorySpec("m", (6,), 8)}
    registers = {"i": RegisterSpec("i", 3), "j": RegisterSpec("j", 3), "r": RegisterSpec("r", 8),
                 "w": RegisterSpec("w", 1)}
    graph = Graph("t", "t.hdl", memories=memories, registers=registers)
    i, j, r, w = (graph.add("register", s.width, state=s.name) for s in registers.values())
    a = graph.add("read", 8, (i,), state="m")
    b = graph.add("read", 8, (j,), state="m")
    total = graph.add("add", 8, (a, b))
    graph.add("write", 8, (w, i, r), state="m")
    graph.add("field", 8, (total,), state="out")
    return graph


def assert_same_meaning(before: Graph, after: Graph, samples: int = 40, seed: int = 0) -> None:
    """Both graphs give the same writes, record and stop on seeded random states."""
    rng = random.Random(seed)
    for sample in range(samples):
        state = random_state(before, rng, "edges" if sample % 2 else "uniform")
        expected, got = evaluate(before, state), evaluate(after, state)
        assert got == expected, f"state {state}: expected {expected}, got {got}"


def run_checked(graph: Graph, *names: str) -> tuple[Graph, list]:
    """A copy of `graph` after the passes, verified after each; the stats rows."""
    out = graph.copy()
    verify(out)
    stats = run_passes(out, list(names), check=True)
    return out, stats
