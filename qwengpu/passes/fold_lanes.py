"""`fold-lanes`: one cone computes the per-lane record fields, for the lane emitted next.

A record emits one byte per token pass, so a pass that emits a byte of `rval2` only needs
lane 2's ALU; yet every pass computes every field's cone.  This pass finds record fields
whose *exclusive* cones (the nodes that reach no sink but that field) have the same shape,
up to their leaves (state reads, constants, nodes other sinks use too: the fault scan, the
masks), and replaces them by one cone.  Where the members' leaves differ, the folded cone
reads `select(next_lane, leaf_0, leaf_1, ...)` (a chain of word `mux`es on
`next_lane == k`, which `flatten-selects` makes one gadget per digit); `next_lane` is a new
source, "the lane whose field the current pass emits".  Member `k` of a group (in record
order) becomes `field F_k = root at lane k`: `evaluate` reads its cone with `next_lane`
bound to `k`, so the graph keeps its meaning and is checked like any other.  The plan
computes `next_lane` from `tok.next` (the lane of the field in the slot emitted next).

Nodes that another sink also uses keep their per-lane copies; state reads are leaves too
(their bank must stay a constant).  A group is folded only where that saves more digit
operations than its lane selects add (`_Folder.worth`: a field that is one mux over a
lane's register is left alone).  Run at word level, after `cut-at-fields` (the write cones
then read the fields back, so they never share the folded cones).
"""

from __future__ import annotations

import re
from dataclasses import replace

from qwengpu.ir import SINK_OPS, SOURCE_OPS, Graph, IrNode
from qwengpu.passes.registry import register

LEAF = 0           # the shape of a leaf: any value the folded cone reads from outside
SHARED = -1        # the owner of a node that reaches more than one sink
DEAD = -2          # the owner of a node that reaches no sink (the cut leaves some behind)


@register("fold-lanes", "compute per-lane record fields with one cone, chosen by next_lane")
def fold_lanes(graph: Graph) -> int:
    if graph.level != "word" or any(n.op == "next_lane" for _, n in graph.items()):
        return 0
    owner = exclusive_owners(graph)
    groups = [group for group in isomorphic_fields(graph, owner)
              if _Folder(graph, owner).worth(_roots(graph, group))]
    if not groups:
        return 0
    lanes = max(len(group) for group in groups)
    width = max(1, (lanes - 1).bit_length())
    next_lane = graph.add("next_lane", width,
                          domain=None if lanes == 1 << width else tuple(range(lanes)))
    for group in groups:
        root = _Folder(graph, owner, next_lane).fold(_roots(graph, group))
        for lane, field_id in enumerate(group):
            graph.update(field_id, args=(root,), lane=lane)
    return sum(len(group) for group in groups)


def _roots(graph: Graph, group: list[int]) -> tuple[int, ...]:
    return tuple(graph.node(f).args[0] for f in group)


def exclusive_owners(graph: Graph) -> dict[int, int]:
    """For every node, the one record field it (transitively) feeds, `SHARED` or `DEAD`."""
    owner: dict[int, int] = {}
    for node_id in reversed(graph.order()):
        node = graph.node(node_id)
        if node.op in SINK_OPS:
            continue
        found = set()
        for user in graph.users(node_id):
            user_node = graph.node(user)
            if user_node.op in SINK_OPS:
                found.add(user if user_node.op == "field" and user_node.lane is None
                          else SHARED)
            elif owner[user] != DEAD:
                found.add(owner[user])
        owner[node_id] = DEAD if not found else found.pop() if len(found) == 1 else SHARED
    return owner


def isomorphic_fields(graph: Graph, owner: dict[int, int]) -> list[list[int]]:
    """Groups (two or more, in record order) of fields whose exclusive cones have one shape."""
    shapes: dict[tuple, int] = {}
    shape_of: dict[int, int] = {}

    def shape(node_id: int) -> int:
        node = graph.node(node_id)
        if owner[node_id] < 0 or node.op in SOURCE_OPS:
            return LEAF
        if node_id not in shape_of:
            key = _attributes(node) + tuple((graph.node(a).width, shape(a)) for a in node.args)
            shape_of[node_id] = shapes.setdefault(key, len(shapes) + 1)
        return shape_of[node_id]

    by_shape: dict[tuple, list[int]] = {}
    for field_id, node in graph.items():
        if node.op == "field" and node.lane is None and len(node.args) == 1:
            root_shape = shape(node.args[0])
            if root_shape != LEAF:
                by_shape.setdefault((node.width, root_shape), []).append(field_id)
    return [group for group in by_shape.values() if len(group) > 1]


def _attributes(node: IrNode) -> tuple:
    """What a node computes from its arguments (its function key without the arguments)."""
    return (node.op, node.width, node.value, node.low, node.state, node.groups, node.table,
            node.terms, node.base, node.domain)


class _Folder:
    """Builds the folded cone of member tuples (node `k` of a tuple is lane `k`'s)."""

    def __init__(self, graph: Graph, owner: dict[int, int], next_lane: int | None = None):
        self.graph = graph
        self.owner = owner
        self.next_lane = next_lane
        self.folded: dict[tuple[int, ...], int] = {}
        self.lane_tests: dict[int, int] = {}

    def worth(self, roots: tuple[int, ...]) -> bool:
        """Whether folding saves more digit operations than the lane selects add: each
        folded node saves `lanes - 1` copies of its digits, each leaf position costs a mux
        of its digits per lane that differs from lane 0."""
        saved = added = 0
        seen, stack = set(), [roots]
        while stack:
            members = stack.pop()
            if members in seen:
                continue
            seen.add(members)
            nodes = [self.graph.node(m) for m in members]
            digits = -(-nodes[0].width // 4)
            if self._same_function(members, nodes):
                saved += digits * (len(members) - 1)
                stack.extend(tuple(n.args[i] for n in nodes) for i in range(len(nodes[0].args)))
            else:
                added += digits * len(self._differing_lanes(members))
        return saved > added

    def fold(self, members: tuple[int, ...]) -> int:
        """A node whose value with `next_lane` bound to `k` is the value of `members[k]`."""
        if members not in self.folded:
            nodes = [self.graph.node(m) for m in members]
            if self._same_function(members, nodes):
                args = tuple(self.fold(tuple(n.args[i] for n in nodes))
                             for i in range(len(nodes[0].args)))
                self.folded[members] = self.graph.add_record(
                    replace(nodes[0], args=args, name=_at_next_lane([n.name for n in nodes]),
                            loop=_at_next_lane([n.loop for n in nodes])))
            else:
                self.folded[members] = self._select(members)
        return self.folded[members]

    def _differing_lanes(self, members: tuple[int, ...]) -> list[int]:
        """The lanes whose member differs from lane 0's (another node, not an equal constant)."""
        graph, first = self.graph, members[0]
        constant = graph.const_value(first)
        return [lane for lane, member in enumerate(members) if lane and member != first and
                (constant is None or graph.const_value(member) != constant)]

    def _same_function(self, members, nodes) -> bool:
        first = nodes[0]
        return first.op not in SOURCE_OPS and \
            all(self.owner[m] >= 0 for m in members) and \
            all(_attributes(n) == _attributes(first) and
                self._arg_widths(n) == self._arg_widths(first) for n in nodes[1:])

    def _arg_widths(self, node: IrNode) -> tuple[int, ...]:
        return tuple(self.graph.node(a).width for a in node.args)

    def _select(self, members: tuple[int, ...]) -> int:
        """`members[next_lane]`, as a chain of muxes (lanes equal to lane 0 are skipped)."""
        graph, chosen = self.graph, members[0]
        for lane in self._differing_lanes(members):
            chosen = graph.add("mux", graph.node(members[0]).width,
                               (self._is_lane(lane), members[lane], chosen),
                               **_origin(graph.node(members[0])))
        return chosen

    def _is_lane(self, lane: int) -> int:
        """A 1-bit node: `next_lane == lane`."""
        if lane not in self.lane_tests:
            graph, width = self.graph, self.graph.node(self.next_lane).width
            constant = graph.add("const", width, value=lane)
            self.lane_tests[lane] = graph.add("eq", 1, (self.next_lane, constant),
                                              name=f"next_lane == {lane}")
        return self.lane_tests[lane]


def _at_next_lane(texts: list[str | None]) -> str | None:
    """One name for the members' names (or loop iterations): where they differ, by the
    numbers of their lanes, the number is `next_lane` (`x[lane=0]`, `x[lane=1]` ->
    `x[lane=next_lane]`); None where they differ otherwise."""
    if any(text is None for text in texts):
        return None
    pieces = [re.split(r"(\d+)", text) for text in texts]
    if len({len(p) for p in pieces}) != 1:
        return None
    joined = []
    for index, column in enumerate(zip(*pieces)):
        if len(set(column)) == 1:
            joined.append(column[0])
        elif index % 2:                     # a number
            joined.append("next_lane")
        else:
            return None
    return "".join(joined)


def _origin(node: IrNode) -> dict:
    return {"stage": node.stage, "loc": node.loc}
