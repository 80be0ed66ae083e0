"""`merge-common`: common-subexpression merging.

Two nodes that apply the same operator, with the same attributes, to the same arguments (in
any order for a commutative operator) compute the same value; the later one's users move to
the earlier one and the later node goes.  Walking in dependency order makes merges cascade
in one pass (merging two arguments makes their users equal too).  State reads merge as well:
every read sees the state as it was when the step began.  Sinks never merge.
"""

from __future__ import annotations

from qwengpu.ir import SINK_OPS, Graph
from qwengpu.passes.registry import register


@register("merge-common", "merge nodes that compute the same value")
def merge_common(graph: Graph) -> int:
    first_of: dict[tuple, int] = {}
    merged = 0
    for node_id in graph.order():
        node = graph.node(node_id)
        if node.op in SINK_OPS:
            continue
        key = node.function_key()
        keeper = first_of.setdefault(key, node_id)
        if keeper != node_id:
            graph.replace_uses(node_id, keeper)
            graph.remove(node_id)
            merged += 1
    return merged
