"""Small IR graphs the IR and pass tests build on: an inline spec's graph, registers to hang
nodes on, one operator over registers, a graph with a memory (tests/ir, tests/passes)."""

from __future__ import annotations

from qwengpu.dsl import semantics
from qwengpu.dsl.elaborate import elaborate_source
from qwengpu.dsl.netlist import MemorySpec, RegisterSpec
from qwengpu.ir import Graph, build_graph

# specs/counter.hdl with its parameters written in (line 8 holds `count + 1`).
COUNTER = """
register count : u8;
register done : bool;
stage count_up {
    stop when done;
    emit count;
    count <= count + 1;
    done <= 1 when count == 10;
}
"""


def spec_graph(source: str) -> Graph:
    """The graph of a small spec written inline (`machine t;` is added, the file is t.hdl)."""
    return build_graph(elaborate_source("machine t;\n" + source, "t.hdl"))


def register_graph(**widths: int) -> tuple[Graph, list[int]]:
    """A graph declaring one register per keyword (name=width), and a `register` node
    reading each, in keyword order; returns the graph and those nodes' ids."""
    registers = {name: RegisterSpec(name, width) for name, width in widths.items()}
    graph = Graph("t", "t.hdl", registers=registers)
    return graph, [graph.add("register", width, state=name) for name, width in widths.items()]


def operator_graph(op: str, widths: tuple[int, ...], width: int | None = None,
                   low: int = 0) -> Graph:
    """Registers r0, r1, ... of the given widths, one `op` node over them, field `out`."""
    registers = {f"r{i}": RegisterSpec(f"r{i}", w) for i, w in enumerate(widths)}
    graph = Graph("t", "t.hdl", registers=registers)
    args = [graph.add("register", w, state=f"r{i}") for i, w in enumerate(widths)]
    if width is None:
        width = semantics.result_width(op, widths, None, low)
    node = graph.add(op, width, args, low=low)
    graph.add("field", width, (node,), state="out")
    return graph


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
