"""The control-flow graph of a PTX kernel body: basic blocks, natural loops and dominators.

`blocks(body)` cuts the body at labels and after branches, returns and traps, and links each
block to the ones it can go to (a guarded branch to its target and the next block).
`loops(blocks)` finds each block's dominators and the natural loops (a back edge goes to a
block that dominates its tail; the loop is what reaches the tail without passing the head),
with networkx; a cycle that is entered midway (no such head: not in nvcc's output) is
reported too, so that the analysis can widen everywhere on it.  Used by the range analysis
(`qwengpu.ptx.ranges`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from qwengpu.ptx import ir

BLOCK_ENDS = ("bra", "ret", "exit", "brx", "trap")


@dataclass
class Block:
    statements: list[ir.Instruction]
    successors: list[int] = field(default_factory=list)
    predecessors: list[int] = field(default_factory=list)
    taken: int | None = None          # the block its closing `bra` goes to


def blocks(body: list[ir.Statement]) -> list[Block]:
    cut, label_block, current = [], {}, []
    for statement in body:
        if isinstance(statement, ir.Label):
            if current:
                cut.append(Block(current))
                current = []
            label_block[statement.name] = len(cut)
            continue
        current.append(statement)
        if statement.opcode in BLOCK_ENDS:
            cut.append(Block(current))
            current = []
    cut.append(Block(current))
    for index, block in enumerate(cut):
        last = block.statements[-1] if block.statements else None
        ends = last is not None and last.guard is None and last.opcode in BLOCK_ENDS
        if last is not None and last.opcode == "bra" and last.operands:
            target = last.operands[0]
            if isinstance(target, ir.Symbol) and target.name in label_block:
                block.taken = label_block[target.name]
                block.successors.append(block.taken)
        if not ends and index + 1 < len(cut):
            block.successors.append(index + 1)
    for index, block in enumerate(cut):
        for successor in block.successors:
            cut[successor].predecessors.append(index)
    return cut


def loops(graph: list[Block]) -> tuple[dict[int, set[int]], set[int], dict[int, set[int]]]:
    """Natural loops by head (head -> its blocks), the blocks where widening must happen (every
    natural loop's head, and every block of a cycle entered midway, which has none), and each
    reachable block's dominators (networkx's immediate dominators, followed up)."""
    edges = nx.DiGraph()
    edges.add_nodes_from(range(len(graph)))
    edges.add_edges_from((index, successor) for index, block in enumerate(graph)
                         for successor in block.successors)
    reachable = edges.subgraph(nx.descendants(edges, 0) | {0}).copy()
    immediate = nx.immediate_dominators(reachable, 0)
    dominators = {}
    for node in reachable:
        chain, current = {node}, node
        while current != 0:
            current = immediate[current]
            chain.add(current)
        dominators[node] = chain
    back_edges = [(tail, head) for tail, head in reachable.edges if head in dominators[tail]]
    forward = reachable.copy()
    forward.remove_edges_from(back_edges)
    irreducible = set().union(*(component for component in
                                nx.strongly_connected_components(forward)
                                if len(component) > 1))
    natural = {}
    for head in {head for _, head in back_edges} - irreducible:
        inside = reachable.copy()
        inside.remove_node(head)
        natural[head] = {head}.union(*({tail} | (nx.ancestors(inside, tail) if tail != head
                                                 else set())
                                       for tail, target in back_edges if target == head))
    return natural, set(natural) | irreducible, dominators
