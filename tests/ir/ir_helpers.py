"""Small graphs for the IR tests: an inline spec's graph, and registers to hang nodes on."""

from __future__ import annotations

from qwengpu.dsl.elaborate import elaborate_source
from qwengpu.dsl.netlist import RegisterSpec
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
