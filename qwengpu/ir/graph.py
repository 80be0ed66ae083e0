"""The compiler's dataflow IR: one wrapper around a networkx graph.

A `Graph` holds the logic of one machine step.  Each node is an `IrNode` record: an operator
(`op`), a result `width` in bits, its arguments in order (`args`, node ids), and the fields
some operators need (`value` of a `const`, `low` bit of a `slice` or of a state digit, `state`
element of a port, the `table`/`terms`/`base` of a digit-level lookup), plus what the later
stages need to know about it: the set of values it can hold (`domain`, None = all `2^width`),
its residual `encoding`, and where it came from (`stage`, `name`, `loc`, the `loop`
iteration and the `digit` of its word a lowered node works on: what a value the spec leaves
unnamed is called by).  Edges run from an
argument to its user; the record's `args` tuple is the authority on operand order, and the
edges mirror it so that networkx algorithms (reachability, cycles, order) work directly.

Node kinds:
- sources: `const`, `register` (a state register, or one digit of it: bits `low..low+width-1`),
  `read` (an element of a memory, or one digit of it; args are the index), `field_input`
  (record field `state` as read back from the trace, or one digit of it; `cut-at-fields`
  puts it into the write cones, so it has the value the same step gives the field),
  `next_lane` (the lane whose record field the current token pass emits: `fold-lanes` makes
  one cone serve the per-lane fields, and a `field` with a `lane` evaluates its cone with
  `next_lane` bound to that lane);
- word operators: the rows of `qwengpu.dsl.semantics.OPERATORS`;
- digit operators: the rows of `qwengpu.passes.digits.DIGIT_OPS` (`lut`, `sum`, `carry`,
  `select`, `priority`), produced by `lower-digits` and `flatten-selects`;
- sinks: `write` (args: enable, index..., data), `field` (a record field, `state` is its name)
  and `stop`.  After lowering, a sink's index and data arrive as digits: `groups` says how
  many args make up each logical operand (least significant digit first).

Passes never touch the networkx graph: they go through `Graph`'s methods.  `build_graph`
makes a `Graph` from an elaborated `Design`; `qwengpu.ir.verify` checks every invariant,
`qwengpu.ir.evaluate` runs a graph, `qwengpu.ir.text` prints it.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, replace
from typing import Iterable, Iterator

import networkx as nx

from qwengpu.dsl import semantics
from qwengpu.dsl.netlist import Design, MemorySpec, RegisterSpec
from qwengpu.errors import Location
from qwengpu.ir.digits import DIGIT_BITS

SOURCE_OPS = ("const", "register", "read", "field_input", "next_lane")
SINK_OPS = ("write", "field", "stop")
WORD_OPS = tuple(semantics.OPERATORS)
COMMUTATIVE_OPS = ("add", "mul", "and", "or", "xor", "eq", "ne")


class VerifyError(Exception):
    """A broken IR invariant: always a compiler bug."""


@dataclass(frozen=True)
class Encoding:
    """How a value sits in the residual stream: one-hot over `dims` entries.

    Kinds: `bit` (2 dims), `hex` (a 4-bit digit, 16 dims), `enum` (a small set of values,
    one dim each), `word` (a value still wider than a digit: its digits' dims together),
    `analog` (one dim holding the number itself, scaled: `mul_column`)."""

    kind: str
    dims: int

    def __str__(self) -> str:
        return self.kind if self.kind in ("bit", "hex", "analog") else f"{self.kind}{self.dims}"


@dataclass(frozen=True)
class IrNode:
    """One node of the IR (see the module docstring for the meaning of each field)."""

    op: str
    width: int
    args: tuple[int, ...] = ()
    value: int | None = None
    low: int = 0
    state: str | None = None
    groups: tuple[int, ...] | None = None
    table: tuple[int, ...] | None = None
    terms: tuple[tuple[int, ...], ...] | None = None
    base: int = 0
    domain: tuple[int, ...] | None = None
    encoding: Encoding | None = None
    label: str | None = None
    stage: str | None = None
    name: str | None = None
    loc: Location | None = None
    lane: int | None = None        # `field`: the binding of `next_lane` its cone is read at
    digit: int | None = None       # the digit of its word a lowered node works on (names)
    loop: str | None = None        # the `for` iteration that made it (`lane=2`; names)

    def function_key(self) -> tuple:
        """What the node computes, without where it came from (for merging equal nodes)."""
        args = tuple(sorted(self.args)) if self.op in COMMUTATIVE_OPS else self.args
        return (self.op, self.width, args, self.value, self.low, self.state, self.groups,
                self.table, self.terms, self.base)


_ORIGIN_FIELDS = ("stage", "name", "loc", "digit", "loop")


class Graph:
    """The logic of one machine step, with the state declarations it reads and writes."""

    def __init__(self, name: str = "", file: str = "",
                 memories: dict[str, MemorySpec] | None = None,
                 registers: dict[str, RegisterSpec] | None = None):
        self.name = name
        self.file = file
        self.memories = dict(memories or {})
        self.registers = dict(registers or {})
        self.level = "word"             # "digit" once lower-digits has run
        self._graph = nx.DiGraph()
        self._next_id = 0

    # ---- reading ---------------------------------------------------------------------------

    @property
    def next_id(self) -> int:
        """The id the next new node will get (nodes with ids from here on are new)."""
        return self._next_id

    def __len__(self) -> int:
        return self._graph.number_of_nodes()

    def __contains__(self, node_id: int) -> bool:
        return node_id in self._graph

    def node(self, node_id: int) -> IrNode:
        return self._graph.nodes[node_id]["record"]

    def ids(self) -> list[int]:
        return sorted(self._graph.nodes)

    def items(self) -> Iterator[tuple[int, IrNode]]:
        for node_id in self.ids():
            yield node_id, self.node(node_id)

    def users(self, node_id: int) -> list[int]:
        return sorted(self._graph.successors(node_id))

    def order(self) -> list[int]:
        """Node ids in dependency order, ties broken by id (deterministic)."""
        return list(nx.lexicographical_topological_sort(self._graph, key=lambda n: n))

    def sinks(self) -> list[int]:
        return [i for i, n in self.items() if n.op in SINK_OPS]

    def op_counts(self) -> Counter:
        return Counter(n.op for _, n in self.items())

    def domain(self, node_id: int) -> tuple[int, ...]:
        """The values node `node_id` can hold (small widths only: enumerates them)."""
        record = self.node(node_id)
        if record.op == "const":
            return (record.value,)
        if record.domain is not None:
            return record.domain
        return tuple(range(1 << record.width))

    def const_value(self, node_id: int) -> int | None:
        record = self.node(node_id)
        return record.value if record.op == "const" else None

    def ancestors_of(self, node_ids: Iterable[int]) -> set[int]:
        """The given nodes and everything they depend on."""
        seen = set(node_ids)
        stack = list(seen)
        while stack:
            for parent in self._graph.predecessors(stack.pop()):
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
        return seen

    def find_cycle(self) -> list[int] | None:
        try:
            return [u for u, _ in nx.find_cycle(self._graph)]
        except nx.NetworkXNoCycle:
            return None

    def edges(self) -> list[tuple[int, int]]:
        return sorted(self._graph.edges)

    # ---- changing --------------------------------------------------------------------------

    def add(self, op: str, width: int, args: Iterable[int] = (), **record_fields) -> int:
        """Append a node; returns its id (ids grow, so creation order is kept)."""
        record = IrNode(op=op, width=width, args=tuple(args), **record_fields)
        return self.add_record(record)

    def add_record(self, record: IrNode, node_id: int | None = None) -> int:
        if node_id is None:
            node_id = self._next_id
        if node_id in self._graph:
            raise VerifyError(f"node %{node_id} already exists")
        self._check_args(node_id, record.args)
        self._next_id = max(self._next_id, node_id + 1)
        self._graph.add_node(node_id, record=record)
        for arg in record.args:
            self._graph.add_edge(arg, node_id)
        return node_id

    def _check_args(self, node_id: int, args) -> None:
        """An argument must be a node already (networkx would make an empty one)."""
        for arg in args:
            if arg not in self._graph:
                raise VerifyError(f"%{node_id}: argument %{arg} does not exist")

    def update(self, node_id: int, **changes) -> None:
        """Change fields of a node's record (its edges follow a change of `args`)."""
        old = self.node(node_id)
        new = replace(old, **changes)
        self._check_args(node_id, new.args)
        self._graph.nodes[node_id]["record"] = new
        if new.args != old.args:
            for arg in set(old.args) - set(new.args):
                self._graph.remove_edge(arg, node_id)
            for arg in new.args:
                self._graph.add_edge(arg, node_id)

    def replace_uses(self, old: int, new: int) -> int:
        """Make every user of `old` use `new` instead; returns the number of users changed."""
        users = self.users(old)
        for user in users:
            args = tuple(new if a == old else a for a in self.node(user).args)
            self.update(user, args=args)
        return len(users)

    def remove(self, node_id: int) -> None:
        if self.users(node_id):
            raise VerifyError(f"removing %{node_id}, which is still used by "
                              f"{', '.join(f'%{u}' for u in self.users(node_id))}")
        self._graph.remove_node(node_id)

    def copy(self) -> "Graph":
        return copy.deepcopy(self)

    # Deliberately raw: lets the rejection tests of `verify` build a broken graph.
    def _add_raw_edge(self, source: int, target: int) -> None:
        self._graph.add_edge(source, target)


def word_dims(width: int) -> int:
    """Residual dims of a `width`-bit value held as one-hot digits (16 per full digit)."""
    full, rest = divmod(width, DIGIT_BITS)
    return 16 * full + (1 << rest if rest else 0)


def build_graph(design: Design) -> Graph:
    """The IR of an elaborated design: netlist nodes keep their ids; sinks follow them.

    State reads become source nodes (`register`, `read`), each `StateWrite` a `write` sink
    (args: enable, index..., data), each record field a `field` sink, and `stop` a sink."""
    graph = Graph(design.name, design.file, design.memories, design.registers)
    for node in design.nodes:
        graph.add_record(IrNode(op=node.op, width=node.width, args=tuple(node.args),
                                value=node.value, low=node.low if node.op == "slice" else 0,
                                state=node.state, stage=node.stage, name=node.name,
                                loc=node.loc, loop=node.loop), node.id)
    for write in design.writes:
        graph.add("write", design.state_width(write.state),
                  (write.enable, *write.index, write.data), state=write.state, loc=write.loc)
    for record_field in design.record:
        graph.add("field", record_field.width, (record_field.node,), state=record_field.name,
                  loc=record_field.loc)
    if design.stop is not None:
        graph.add("stop", 1, (design.stop,), loc=design.nodes[design.stop].loc)
    return graph


def keep_origin(record: IrNode) -> dict:
    """The origin fields of a node, to copy onto the nodes that replace it."""
    return {name: getattr(record, name) for name in _ORIGIN_FIELDS}
