"""`verify(graph)`: every invariant of the IR, checked after every pass in the tests.

Arity and widths per operator, one driver per value, no combinational cycles, sinks and
state ports well formed, lane bindings, field inputs, encodings.  A broken invariant raises
`VerifyError` naming the first node that breaks it: always a compiler bug, never a user
mistake (docs/passes.md).
"""

from __future__ import annotations

import networkx as nx

from qwengpu.dsl import semantics
from qwengpu.ir.digits import ANALOG_OPS, DIGIT_BITS, DIGIT_OPS, affine_fit
from qwengpu.ir.graph import SINK_OPS, Graph, IrNode, VerifyError, word_dims
from qwengpu.ir.text import format_node

def verify(graph: Graph) -> None:
    """Check every invariant of the IR; `VerifyError` names the first node that breaks one.

    Arity and widths follow the semantics table (word operators) or the digit table; every
    argument exists and its edge is the only one feeding that operand (one driver per value,
    one driver per record field, at most one stop); the graph has no cycles; domains and
    encodings fit their widths; a digit-level graph holds no value wider than a digit."""
    cycle = graph.find_cycle()
    if cycle is not None:
        path = " -> ".join(f"%{n}" for n in cycle + cycle[:1])
        raise VerifyError(f"combinational cycle: {path}")
    fields_seen: dict[str, int] = {}
    field_widths = {n.state: n.width for _, n in graph.items() if n.op == "field"}
    stops = []
    for node_id, node in graph.items():
        problem = _check_node(graph, node_id, node)
        if node.op == "field_input" and problem is None:
            problem = _check_field_input(node, field_widths)
        if problem:
            raise VerifyError(f"{format_node(graph, node_id)}: {problem}")
        if node.op == "field":
            if node.state in fields_seen:
                raise VerifyError(f"record field {node.state!r} has two drivers: "
                                  f"%{fields_seen[node.state]} and %{node_id}")
            fields_seen[node.state] = node_id
        if node.op == "stop":
            stops.append(node_id)
    if len(stops) > 1:
        raise VerifyError(f"stop has two drivers: {', '.join(f'%{s}' for s in stops)}")
    _check_lane_bindings(graph)
    for source, target in graph.edges():
        if source not in graph.node(target).args:
            raise VerifyError(f"%{target} is driven by %{source}, which is not one of its "
                              f"arguments (two drivers)")


def _check_node(graph: Graph, node_id: int, node: IrNode) -> str | None:
    for arg in node.args:
        if arg not in graph:
            return f"argument %{arg} does not exist"
        if graph.node(arg).op in SINK_OPS:
            return f"argument %{arg} is a sink, which has no value"
    problem = _check_analog_reads(graph, node)
    if problem:
        return problem
    widths = [graph.node(a).width for a in node.args]
    if node.op in SINK_OPS:
        if graph.users(node_id):
            return "a sink has users"
        return _check_sink(graph, node, widths)
    if node.width < 1:
        return f"width {node.width}"
    if graph.level == "digit" and node.width > DIGIT_BITS and node.op not in ANALOG_OPS:
        return f"u{node.width} value left in a digit-level graph"
    if node.domain is not None:
        if not node.domain or any(not 0 <= v < 1 << node.width for v in node.domain):
            return f"domain {node.domain} outside u{node.width}"
        if list(node.domain) != sorted(set(node.domain)):
            return "domain is not sorted and unique"
    if node.encoding is not None:
        problem = _check_encoding(graph, node_id, node)
        if problem:
            return problem
    if node.op == "const":
        if node.args or node.value is None or not 0 <= node.value < 1 << node.width:
            return f"constant {node.value} does not fit u{node.width}"
        return None
    if node.op in ("register", "read"):
        return _check_state_source(graph, node, widths)
    if node.op == "field_input":
        return None        # checked in `verify`, which knows the record's fields
    if node.op == "next_lane":
        return "next_lane takes no arguments" if node.args else None
    if node.op in semantics.OPERATORS:
        try:
            expected = semantics.result_width(node.op, widths, node.width, node.low)
        except ValueError as error:
            return str(error)
        if expected != node.width:
            return f"width mismatch: u{node.width}, but {node.op} of {tuple(widths)} gives " \
                   f"u{expected}"
        return None
    if node.op in DIGIT_OPS:
        row = DIGIT_OPS[node.op]
        problem = row.check(node, widths)
        if problem:
            return problem
        domains = [graph.domain(a) for a in node.args]
        if node.op == "select" and any(v >= len(node.args) - 1 for v in domains[0]):
            return f"selector can be {max(domains[0])}, but there are {len(node.args) - 1} arms"
        image = row.image(node, domains, widths)
        allowed = set(graph.domain(node_id))
        if not image <= allowed:
            return f"can produce {sorted(image - allowed)}, outside its domain or width"
        return None
    return f"unknown operator {node.op!r}"


def _check_analog_reads(graph: Graph, node: IrNode) -> str | None:
    """An analog value is read only linearly: an affine term of a `sum`."""
    for index, arg in enumerate(node.args):
        if graph.node(arg).op not in ANALOG_OPS:
            continue
        if node.op != "sum":
            return f"reads the analog value %{arg} ({node.op} reads one-hot values only)"
        term = node.terms[index] if node.terms and index < len(node.terms) else ()
        points = [(v, term[v]) for v in graph.domain(arg) if v < len(term)]
        if affine_fit(points) is None:
            return f"reads the analog value %{arg} through a term that is not affine"
    return None


def _check_sink(graph: Graph, node: IrNode, widths: list[int]) -> str | None:
    groups = node.groups or (1,) * len(node.args)
    if sum(groups) != len(node.args) or any(g < 1 for g in groups):
        return f"groups {groups} do not cover {len(node.args)} arguments"
    firsts = [sum(groups[:i]) for i in range(len(groups))]
    group_widths = [_group_width(widths[f:f + g]) for f, g in zip(firsts, groups)]
    if node.op == "stop":
        return None if group_widths == [1] else f"stop takes one bit, got {group_widths}"
    if node.op == "field":
        if len(groups) != 1 or group_widths[0] > node.width:
            return f"record field of u{node.width} fed {group_widths}"
        return None
    if node.state in graph.registers:
        dims, width = 0, graph.registers[node.state].width
    elif node.state in graph.memories:
        dims, width = len(graph.memories[node.state].shape), graph.memories[node.state].width
    else:
        return f"write to unknown state {node.state!r}"
    if len(groups) != dims + 2:
        return f"write to {node.state} needs enable, {dims} index and data, got {len(groups)}"
    if group_widths[0] != 1:
        return "write enable is not one bit"
    if group_widths[-1] > width:
        return f"write of u{group_widths[-1]} into u{width} state {node.state}"
    return None


def _group_width(widths: list[int]) -> int:
    """Width of a value given as digits (all but the last sit in full 4-bit slots)."""
    if len(widths) == 1:
        return widths[0]
    return DIGIT_BITS * (len(widths) - 1) + widths[-1]


def _check_lane_bindings(graph: Graph) -> None:
    """Only record fields with a `lane` may depend on `next_lane`, at a lane it can hold."""
    lanes = [i for i, n in graph.items() if n.op == "next_lane"]
    bound = set(lanes)
    for lane_id in lanes:
        bound |= nx.descendants(graph._graph, lane_id)
    held = {v for lane_id in lanes for v in graph.domain(lane_id)}
    for node_id, node in graph.items():
        if node.op not in SINK_OPS:
            continue
        if node.lane is not None and (node.op != "field" or node.lane < 0 or
                                      (lanes and node.lane not in held)):
            raise VerifyError(f"{format_node(graph, node_id)}: lane {node.lane} on a "
                              f"{node.op} (next_lane holds {sorted(held)})")
        if node.lane is None and node_id in bound:
            raise VerifyError(f"{format_node(graph, node_id)}: depends on next_lane but "
                              "names no lane to read it at")


def _check_field_input(node: IrNode, field_widths: dict[str, int]) -> str | None:
    if node.args:
        return "a field input takes no arguments"
    if node.state not in field_widths:
        return f"field input of unknown record field {node.state!r}"
    if node.low < 0 or node.low + node.width > field_widths[node.state]:
        return f"bits {node.low}..{node.low + node.width - 1} outside u" \
               f"{field_widths[node.state]} field {node.state}"
    return None


def _check_state_source(graph: Graph, node: IrNode, widths: list[int]) -> str | None:
    spec = graph.registers.get(node.state) if node.op == "register" else \
        graph.memories.get(node.state)
    if spec is None:
        return f"{node.op} of unknown state {node.state!r}"
    if node.low < 0 or node.low + node.width > spec.width:
        return f"bits {node.low}..{node.low + node.width - 1} outside u{spec.width} " \
               f"{node.state}"
    if node.op == "read":
        groups = node.groups or (1,) * len(node.args)
        if len(groups) != len(spec.shape) or sum(groups) != len(node.args):
            return f"read of {node.state} needs {len(spec.shape)} indices, got {groups}"
    elif node.args:
        return "a register read takes no arguments"
    return None


def _check_encoding(graph: Graph, node_id: int, node: IrNode) -> str | None:
    encoding = node.encoding
    size = len(graph.domain(node_id)) if node.width <= DIGIT_BITS else None
    if encoding.kind == "bit" and (node.width != 1 or encoding.dims != 2):
        return f"encoding {encoding} on a u{node.width} value"
    if encoding.kind == "hex" and (size != 16 or encoding.dims != 16):
        return f"encoding {encoding} on a value of {size} possible values"
    if encoding.kind == "enum" and (size is None or encoding.dims < size):
        return f"encoding {encoding} cannot hold {size} values"
    if encoding.kind == "word" and (node.width <= DIGIT_BITS or
                                    encoding.dims != word_dims(node.width)):
        return f"encoding {encoding} on a u{node.width} value"
    if encoding.kind == "analog" and (node.op not in ANALOG_OPS or encoding.dims != 1):
        return f"encoding {encoding} on a {node.op} value"
    if encoding.kind not in ("bit", "hex", "enum", "word", "analog"):
        return f"unknown encoding {encoding}"
    return None
