"""The control-flow graph of a PTX kernel body: basic blocks, natural loops and dominators.

`blocks(body)` cuts the body at labels and after branches, returns and traps, and links each
block to the ones it can go to (a guarded branch to its target and the next block).
`loops(blocks)` finds the heads of cycles (targets of edges back in depth-first order from
block 0), the natural loop of each head that dominates its back edges, and each block's
dominators.  Used by the range analysis (`qwengpu.ptx.ranges`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    """Natural loops by header (header -> its blocks), every head of a cycle (the targets
    of edges back in depth-first order, where widening happens), and each block's
    dominators."""
    order, seen, on_stack, back_edges = [], set(), set(), []

    def visit(start: int):
        stack = [(start, iter(graph[start].successors))]
        seen.add(start)
        on_stack.add(start)
        while stack:
            node, successors = stack[-1]
            for successor in successors:
                if successor in on_stack:
                    back_edges.append((node, successor))
                elif successor not in seen:
                    seen.add(successor)
                    on_stack.add(successor)
                    stack.append((successor, iter(graph[successor].successors)))
                    break
            else:
                stack.pop()
                on_stack.discard(node)
                order.append(node)

    visit(0)
    dominators = _dominators(graph, order[::-1])
    natural, heads = {}, {head for _, head in back_edges}
    for head in heads:
        latches = [latch for latch, target in back_edges if target == head]
        if not all(head in dominators[latch] for latch in latches):
            continue                                    # entered in the middle: irreducible
        body, work = {head}, list(latches)
        while work:
            node = work.pop()
            if node not in body:
                body.add(node)
                work.extend(graph[node].predecessors)
        natural[head] = body
    return natural, heads, dominators


def _dominators(graph: list[Block], reverse_postorder: list[int]) -> dict[int, set[int]]:
    reachable = set(reverse_postorder)
    dominators = {node: set(reachable) for node in reachable}
    dominators[0] = {0}
    changed = True
    while changed:
        changed = False
        for node in reverse_postorder[1:]:
            incoming = [dominators[p] for p in graph[node].predecessors if p in reachable]
            new = set.intersection(*incoming) | {node} if incoming else {node}
            if new != dominators[node]:
                dominators[node], changed = new, True
    return dominators
