"""`flatten-selects`: an if-else chain of selects becomes one `priority` gadget.

A `match` in the HDL elaborates to a chain of muxes, `c1 ? x1 : (c2 ? x2 : (... : d))`, and
lowering keeps it a chain of digit `select`s: one MLP sublayer per arm, the deepest paths of
the machine (the ALU's result is a 17-arm match).  When the else-arm of a `select` (or
`priority`) is another `select`/`priority` used by nothing else, the two merge into one
`priority` node whose conditions are tried in order -- the same value, one gadget deep, at
the cost of the arms it gathers.  Walking in dependency order merges a whole chain in one run.
A select whose selector is a one-input function of another value also becomes a `priority`:
its conditions read the function of the one-hot input directly, one level earlier.
"""

from __future__ import annotations

from qwengpu.ir.digit_build import DigitBuilder
from qwengpu.ir import Graph, keep_origin
from qwengpu.passes.registry import register

Chain = tuple[list[tuple[int, tuple[int, ...]]], list[int], int]


def as_chain(graph: Graph, node_id: int) -> Chain | None:
    """(conditions as (input, 0/1 table), arms, default) of a select or priority node."""
    node = graph.node(node_id)
    if node.op == "priority":
        count = len(node.terms)
        return (list(zip(node.args[:count], node.terms)), list(node.args[count:2 * count]),
                node.args[-1])
    if node.op == "select":
        selector, arms = node.args[0], node.args[1:]
        width = graph.node(selector).width
        conditions = [(selector, tuple(int(v == i) for v in range(1 << width)))
                      for i in range(1, len(arms))]
        return conditions, list(arms[1:]), arms[0]
    return None


@register("flatten-selects", "merge if-else chains of selects into one priority gadget")
def flatten_selects(graph: Graph) -> int:
    build = DigitBuilder(graph)
    merged = 0
    for node_id in graph.order():
        if node_id not in graph:
            continue
        outer = as_chain(graph, node_id)
        if outer is None:
            continue
        conditions, arms, default = outer
        inner = as_chain(graph, default)
        if inner is None or graph.users(default) != [node_id] or \
                graph.node(default).width > graph.node(node_id).width:
            inner = None
            if not any(build.unary_of(c) is not None for c, _ in conditions):
                continue
            # Not a chain, but its selector is a function of another value: as a priority,
            # the function is read for free and the select sits one level lower.
            inner = ([], [], default)
        node = graph.node(node_id)
        build.origin = keep_origin(node)
        result = build.priority([(c, lambda v, t=t: t[v]) for c, t in conditions + inner[0]],
                                arms + inner[1], inner[2], node.width, node.label)
        if result != node_id:
            graph.replace_uses(node_id, result)
            graph.remove(node_id)
            if default != inner[2] and not graph.users(default):
                graph.remove(default)
            merged += 1
    return merged
