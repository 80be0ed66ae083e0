"""`evaluate(graph, state_inputs)`: the value of every node of a step graph, for the tests
that hold a pass's output to its input (seeded random states: `random_state`).
"""

from __future__ import annotations

import networkx as nx

from qwengpu.dsl import semantics
from qwengpu.dsl.netlist import MemorySpec
from qwengpu.ir.digits import DIGIT_BITS, DIGIT_OPS
from qwengpu.ir.graph import SINK_OPS, Graph, IrNode

def evaluate(graph: Graph, state_inputs: dict, node_values: dict | None = None) -> dict:
    """Run one step of the graph on a machine state; returns what the step produces.

    `state_inputs` maps each register to its value and each memory to its elements (a flat
    row-major list, nested lists, or a dict from index tuples; missing elements are 0).
    The result is `{"writes": [(state, index, value), ...], "record": {field: value},
    "stop": 0 or 1}`: the enabled writes whose index is in range, in program order.  Word
    graphs and digit graphs of the same design give equal results.  `node_values`, when
    given, receives every node's value (for checks that look inside a compiled model)."""
    memories = {name: _flat_memory(spec, state_inputs.get(name))
                for name, spec in graph.memories.items()}
    values: dict[int, int] = {} if node_values is None else node_values
    lanes = _LaneValues(graph)
    writes, record, stop = [], {}, 0
    for node_id in _evaluation_order(graph):
        node = graph.node(node_id)
        if node.op == "field_input":
            field_node = next(n for _, n in graph.items()
                              if n.op == "field" and n.state == node.state)
            whole = _group_values(graph, field_node,
                                  lanes.args(field_node, values, field_node.lane))[0]
            values[node_id] = (whole >> node.low) & semantics.mask(node.width)
            continue
        if node_id in lanes.bound and node.op not in SINK_OPS:
            for lane in lanes.held:
                lanes.values[lane][node_id] = lane if node.op == "next_lane" else \
                    _evaluate_node(graph, node, lanes.args(node, values, lane), state_inputs,
                                   memories)
            continue
        args = lanes.args(node, values, node.lane)
        if node.op in SINK_OPS:
            operands = _group_values(graph, node, args)
            if node.op == "field":
                record[node.state] = operands[0]
            elif node.op == "stop":
                stop = operands[0]
            elif operands[0]:
                index = tuple(operands[1:-1])
                if node.state in graph.memories and \
                        _flat_index(graph.memories[node.state], index) is None:
                    continue
                writes.append((node_id, node.state, index, operands[-1]))
            continue
        values[node_id] = _evaluate_node(graph, node, args, state_inputs, memories)
    writes.sort()
    return {"writes": [w[1:] for w in writes], "record": record, "stop": stop}


class _LaneValues:
    """The values of the nodes that depend on `next_lane`, once per lane it can hold."""

    def __init__(self, graph: Graph):
        sources = [i for i, n in graph.items() if n.op == "next_lane"]
        self.bound = set(sources)
        for source in sources:
            self.bound |= nx.descendants(graph._graph, source)
        self.held = sorted({v for source in sources for v in graph.domain(source)})
        self.values: dict[int, dict[int, int]] = {lane: {} for lane in self.held}

    def args(self, node: IrNode, values: dict[int, int], lane: int | None) -> list[int]:
        """The argument values of `node` with `next_lane` bound to `lane`."""
        return [self.values[lane][a] if a in self.bound else values[a] for a in node.args]


def _evaluation_order(graph: Graph) -> list[int]:
    """Dependency order, with each `field_input` after the value of its record field."""
    inputs = [i for i, n in graph.items() if n.op == "field_input"]
    if not inputs:
        return graph.order()
    order = graph._graph.copy()
    fields = {n.state: n for _, n in graph.items() if n.op == "field"}
    for node_id in inputs:
        for arg in fields[graph.node(node_id).state].args:
            order.add_edge(arg, node_id)
    return list(nx.lexicographical_topological_sort(order, key=lambda n: n))


def _evaluate_node(graph, node, args, state_inputs, memories) -> int:
    if node.op == "const":
        return node.value
    if node.op == "register":
        whole = state_inputs.get(node.state, graph.registers[node.state].reset)
        return (whole >> node.low) & semantics.mask(node.width)
    if node.op == "read":
        spec = graph.memories[node.state]
        flat = _flat_index(spec, tuple(_group_values(graph, node, args)))
        whole = 0 if flat is None else memories[node.state][flat]
        return (whole >> node.low) & semantics.mask(node.width)
    widths = [graph.node(a).width for a in node.args]
    if node.op in DIGIT_OPS:
        return DIGIT_OPS[node.op].evaluate(node, args, widths)
    return semantics.evaluate(node.op, args, widths, node.width, node.low)


def _group_values(graph: Graph, node: IrNode, args: list[int]) -> list[int]:
    """The logical operands of a sink or read: digit groups put back together."""
    groups = node.groups or (1,) * len(args)
    out, position = [], 0
    for count in groups:
        out.append(sum(v << (DIGIT_BITS * k) for k, v in enumerate(args[position:position
                                                                       + count])))
        position += count
    return out


def _flat_index(spec: MemorySpec, index: tuple[int, ...]) -> int | None:
    flat = 0
    for i, n in zip(index, spec.shape):
        if not 0 <= i < n:
            return None
        flat = flat * n + i
    return flat


def _flat_memory(spec: MemorySpec, given) -> list[int]:
    if given is None:
        return [0] * spec.size
    if isinstance(given, dict):
        flat = [0] * spec.size
        for index, value in given.items():
            position = _flat_index(spec, tuple(index) if isinstance(index, tuple) else (index,))
            if position is not None:
                flat[position] = value
        return flat
    items = list(given)
    while items and isinstance(items[0], (list, tuple)):
        items = [x for row in items for x in row]
    return items + [0] * (spec.size - len(items))


def random_state(graph: Graph, rng, style: str = "uniform") -> dict:
    """A machine state for the meaning tests: `uniform` bits, or `edges` (0, 1, all ones,
    the sign bit, small numbers) which reach the corners of adders and comparators."""
    def value(width: int) -> int:
        if style == "edges" and rng.random() < 0.7:
            top = semantics.mask(width)
            return rng.choice([0, 1, 2, top, top - 1, 1 << (width - 1), rng.randrange(16)]) & top
        return rng.getrandbits(width)
    state: dict = {name: value(spec.width) for name, spec in graph.registers.items()}
    for name, spec in graph.memories.items():
        state[name] = [value(spec.width) for _ in range(spec.size)]
    return state
