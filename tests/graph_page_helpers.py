"""What the page of `hdlc graph` must show, computed from the schedule alone (never from the
page): the chips' order, every edge of the scheduled graph, the cone of a chip, and a longest
chain.  tests/backend_torch/test_graph_data.py and test_graph_page.py hold the page to these.

Chips are numbered as graph_data.py documents: the embedding's values (in
`plan.embedding`'s order), then the plan's ops in plan order, then the lm_head."""

from __future__ import annotations

import networkx as nx

MIXER_KINDS = ("scratch", "memory")        # DeltaNet heads hold state: a cone stops there


def chip_graph(plan) -> nx.DiGraph:
    """Chips as nodes (with `op`, or `embedding`/`lm_head`), an edge where one reads what
    the other wrote."""
    graph = nx.DiGraph()
    writer = {}
    for index, value in enumerate(plan.embedding):
        graph.add_node(index, kind="embedding", op=None)
        writer[value] = index
    first = len(plan.embedding)
    for k, op in enumerate(plan.ops):
        graph.add_node(first + k, kind=op.kind, op=op)
        for value in op.outputs:
            writer[value] = first + k
    head = first + len(plan.ops)
    graph.add_node(head, kind="lm_head", op=None)
    for k, op in enumerate(plan.ops):
        for value in op.inputs:
            graph.add_edge(writer[value], first + k)
    for value in plan.emission.values():
        graph.add_edge(writer[value], head)
    return graph


def cone(graph: nx.DiGraph, start: int, forward: bool) -> set[int]:
    """The chips reached from `start` against (back) or along (forward) the edges, not
    going on past a chip that holds state."""
    step = graph.successors if forward else graph.predecessors
    reached, todo = set(), [start]
    while todo:
        chip = todo.pop()
        if chip != start and graph.nodes[chip]["kind"] in MIXER_KINDS:
            continue
        for other in step(chip):
            if other not in reached and other != start:
                reached.add(other)
                todo.append(other)
    return reached
