"""Control-flow graph and liveness of virtual code.

The CFG is a networkx `DiGraph` of basic blocks (node = index of the block's first instruction,
attribute `instructions` = the block's instruction indices).  A branch has two successors when
it is guarded and one when not; an unguarded `exit` has none.  Liveness is the usual backward
dataflow to a fixed point; a guarded write that is not a full definition also reads its
destination (lanes whose guard fails keep the old value), which `VInstr.uses` already says.

Liveness per thread is the right notion on a SIMT machine: every lane has its own registers
and follows its own path through the same CFG, whichever order the warp issues them in.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from qwengpu.isa import Op
from qwengpu.ptx.vcode import LabelRef, VInstr, VLabel


def strip_labels(code: list) -> tuple[list[VInstr], dict[str, int]]:
    """The instructions of `code` and, for each label, the index of the instruction after it."""
    instructions: list[VInstr] = []
    labels: dict[str, int] = {}
    for item in code:
        if isinstance(item, VLabel):
            labels[item.name] = len(instructions)
        else:
            instructions.append(item)
    return instructions, labels


def successors(instructions: list[VInstr], labels: dict[str, int], index: int) -> list[int]:
    ins = instructions[index]
    following = [index + 1] if index + 1 < len(instructions) else []
    if ins.op == Op.BRA:
        target = labels[ins.imm.name] if isinstance(ins.imm, LabelRef) else int(ins.imm)
        targets = [target] if target < len(instructions) else []
        return sorted(set(targets + following)) if ins.guarded else targets
    if ins.op == Op.EXIT:
        return following if ins.guarded else []
    return following


def control_flow_graph(instructions: list[VInstr], labels: dict[str, int]) -> nx.DiGraph:
    """Basic blocks and the edges between them."""
    count = len(instructions)
    leaders = {0} if count else set()
    for index in range(count):
        following = successors(instructions, labels, index)
        if instructions[index].op in (Op.BRA, Op.EXIT):
            leaders.update(following)
            if index + 1 < count:
                leaders.add(index + 1)
    leaders.update(target for target in labels.values() if target < count)
    starts = sorted(leaders)
    graph = nx.DiGraph()
    for position, start in enumerate(starts):
        end = starts[position + 1] if position + 1 < len(starts) else count
        graph.add_node(start, instructions=list(range(start, end)))
    for start in starts:
        last = graph.nodes[start]["instructions"][-1]
        for target in successors(instructions, labels, last):
            graph.add_edge(start, target)
    return graph


@dataclass
class Liveness:
    """What is live before (`live_in`) and after (`live_out`) each instruction."""

    instructions: list[VInstr]
    live_in: list[frozenset]
    live_out: list[frozenset]


def liveness(instructions: list[VInstr], labels: dict[str, int]) -> Liveness:
    graph = control_flow_graph(instructions, labels)
    block_in: dict[int, frozenset] = {block: frozenset() for block in graph}
    # Reverse postorder of the reversed graph converges fastest; any order is correct.
    order = list(nx.dfs_postorder_nodes(graph, source=0)) if graph else []
    order += sorted(set(graph) - set(order))
    changed = True
    while changed:
        changed = False
        for block in order:
            live = frozenset().union(*(block_in[succ] for succ in graph.successors(block)))
            for index in reversed(graph.nodes[block]["instructions"]):
                live = _transfer(instructions[index], live)
            if live != block_in[block]:
                block_in[block] = live
                changed = True
    live_in: list[frozenset] = [frozenset()] * len(instructions)
    live_out: list[frozenset] = [frozenset()] * len(instructions)
    for block in graph:
        live = frozenset().union(*(block_in[succ] for succ in graph.successors(block)))
        for index in reversed(graph.nodes[block]["instructions"]):
            live_out[index] = live
            live = _transfer(instructions[index], live)
            live_in[index] = live
    return Liveness(instructions, live_in, live_out)


def _transfer(ins: VInstr, live_after: frozenset) -> frozenset:
    return (live_after - frozenset(ins.defs())) | frozenset(ins.uses())
