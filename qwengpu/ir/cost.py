"""What a digit-level graph would cost the backend: MLP units and gadget depth (estimates).

Each `lut`/`sum`/`carry`/`select`/`priority` is one depth-1 MLP gadget whose unit count the
digit table estimates (`DigitOp.cost`); luts with the same inputs share their AND units (a
multiplier's low and high partial-product digits come from one set of units), so they are
counted once per input tuple, at the largest of them.  Depth is the longest chain of digit operators
from a state read to a sink: a lower bound on the MLP sublayers one step needs.  The
scheduler turns these into layers; this module only measures.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from qwengpu.ir.digits import DIGIT_OPS
from qwengpu.ir.graph import Graph


@dataclass(frozen=True)
class CostEstimate:
    units_by_op: dict[str, int]
    units: int
    depth: int
    gadgets: int


def estimate_cost(graph: Graph) -> CostEstimate:
    units: Counter = Counter()
    shared_luts: dict[tuple[int, ...], int] = {}
    depth: dict[int, int] = {}
    gadgets = 0
    for node_id in graph.order():
        node = graph.node(node_id)
        below = max((depth[a] for a in node.args), default=0)
        if node.op not in DIGIT_OPS:
            depth[node_id] = below
            continue
        gadgets += 1
        depth[node_id] = below + 1
        domains = [graph.domain(a) for a in node.args]
        constant = [graph.const_value(a) is not None for a in node.args]
        cost = DIGIT_OPS[node.op].cost(node, domains, constant)
        if node.op == "sum" and len(node.args) == 1:
            cost = min(cost, len(domains[0]))   # a relabelling: one unit per input value
        if node.op == "lut":
            shared_luts[node.args] = max(shared_luts.get(node.args, 0), cost)
        else:
            units[node.op] += cost
    units["lut"] = sum(shared_luts.values())
    return CostEstimate(dict(sorted(units.items())), sum(units.values()),
                        max(depth.values(), default=0), gadgets)


def format_cost(cost: CostEstimate) -> str:
    parts = ", ".join(f"{op} {n}" for op, n in cost.units_by_op.items())
    return (f"gadgets {cost.gadgets}, MLP units {cost.units} ({parts}), "
            f"depth {cost.depth}\n")
