"""`remove-dead`: drop every node whose value reaches no sink (a write, a record field, stop).

Sinks are the only observable effects of a step, so a node that none of them depends on
can go.  The number of nodes removed is the pass's count of changes.
"""

from __future__ import annotations

from qwengpu.ir import Graph
from qwengpu.passes.registry import register


@register("remove-dead", "remove nodes that reach no write, record field or stop")
def remove_dead(graph: Graph) -> int:
    live = graph.ancestors_of(graph.sinks())
    dead = [n for n in reversed(graph.order()) if n not in live]
    for node_id in dead:
        graph.remove(node_id)
    return len(dead)
