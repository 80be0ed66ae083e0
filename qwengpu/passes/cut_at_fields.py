"""`cut-at-fields`: cut every write cone at the record's fields (docs/compiler.md, "Execution
model").

The compiled model commits a step's writes on the token that closes the record, from the
fields it reads back from the record scratch.  A write cone is therefore computed from
`field_input` sources ("field F as read back"), never from the step logic that computes F:
each use, inside a write cone, of a value some record field carries becomes a use of a
`field_input` of that field, and the nodes between it and the write are copied (the step
logic keeps the originals).  Run first, at word level: the later passes cannot merge commit
logic with step logic (a `field_input` never equals the node computing its field), and
`lower-digits` splits a `field_input` into one per digit, which the plan maps to the
scratch read-outs.  The graph computes the same writes (`evaluate` gives a `field_input` the
value of its field), so the pass is checked like any other.
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu.ir import SOURCE_OPS, SINK_OPS, Graph, keep_origin
from qwengpu.passes.registry import register


@register("cut-at-fields", "cut write cones at the record fields (field_input sources)")
def cut_at_fields(graph: Graph) -> int:
    carried: dict[int, str] = {}
    for _, node in graph.items():
        if node.op == "field" and len(node.args) == 1:
            carried.setdefault(node.args[0], node.state)
    inputs: dict[str, int] = {}
    copies: dict[int, int] = {}

    def field_input(value_id: int) -> int:
        name = carried[value_id]
        if name not in inputs:
            inputs[name] = graph.add("field_input", graph.node(value_id).width, state=name,
                                     **keep_origin(graph.node(value_id)))
        return inputs[name]

    def cut(root: int) -> int:
        """The id computing `root` from field inputs (a copy, or `root` when unchanged)."""
        stack = [(root, False)]
        while stack:
            node_id, expanded = stack.pop()
            if node_id in copies:
                continue
            node = graph.node(node_id)
            if node_id in carried:
                copies[node_id] = field_input(node_id)
            elif node.op in SOURCE_OPS and not node.args:
                copies[node_id] = node_id
            elif not expanded:
                stack.append((node_id, True))
                stack.extend((a, False) for a in node.args if a not in copies)
            else:
                args = tuple(copies[a] for a in node.args)
                copies[node_id] = node_id if args == node.args else \
                    graph.add_record(_with_args(node, args))
        return copies[root]

    changes = 0
    for write_id in [i for i, n in graph.items() if n.op == "write"]:
        write = graph.node(write_id)
        args = tuple(cut(a) for a in write.args)
        if args != write.args:
            graph.update(write_id, args=args)
            changes += 1
    return changes


def _with_args(node, args):
    assert node.op not in SINK_OPS
    return replace(node, args=args)
