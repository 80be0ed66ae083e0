"""The compiler's dataflow IR: one wrapper around a networkx graph, and its checker.

A `Graph` holds the logic of one machine step.  Each node is an `IrNode` record: an operator
(`op`), a result `width` in bits, its arguments in order (`args`, node ids), and the fields
some operators need (`value` of a `const`, `low` bit of a `slice` or of a state digit, `state`
element of a port, the `table`/`terms`/`base` of a digit-level lookup), plus what the later
stages need to know about it: the set of values it can hold (`domain`, None = all `2^width`),
its residual `encoding`, and where it came from (`stage`, `name`, `loc`).  Edges run from an
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

Passes never touch the networkx graph: they go through `Graph`'s methods.  `verify` checks
every invariant and raises `VerifyError` (a compiler bug, not a user mistake).  `build_graph`
makes a `Graph` from an elaborated `Design`; `evaluate` runs it; `format_graph` prints it.
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
from qwengpu.passes.digits import ANALOG_OPS, DIGIT_OPS, DIGIT_BITS, affine_fit

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

    def function_key(self) -> tuple:
        """What the node computes, without where it came from (for merging equal nodes)."""
        args = tuple(sorted(self.args)) if self.op in COMMUTATIVE_OPS else self.args
        return (self.op, self.width, args, self.value, self.low, self.state, self.groups,
                self.table, self.terms, self.base)


_ORIGIN_FIELDS = ("stage", "name", "loc")


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
        self._next_id = max(self._next_id, node_id + 1)
        self._graph.add_node(node_id, record=record)
        for arg in record.args:
            self._graph.add_edge(arg, node_id)
        return node_id

    def update(self, node_id: int, **changes) -> None:
        """Change fields of a node's record (its edges follow a change of `args`)."""
        old = self.node(node_id)
        new = replace(old, **changes)
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


# ---- verify ----------------------------------------------------------------------------------

def verify(graph: Graph) -> None:
    """Check every invariant of the IR; `VerifyError` names the first node that breaks one.

    Arity and widths follow the semantics table (word operators) or the digit table; every
    argument exists and its edge is the only one feeding that operand (one driver per value,
    one driver per record field, at most one stop); the graph has no cycles; domains and
    encodings fit their widths; a digit-level graph holds no value wider than a digit."""
    cycle = graph.find_cycle()
    if cycle is not None:
        path = " -> ".join(f"%{n}" for n in cycle + cycle[:1])
        raise VerifyError(f"combinational cycle: {path}")
    fields_seen: dict[str, int] = {}
    field_widths = {n.state: n.width for _, n in graph.items() if n.op == "field"}
    stops = []
    for node_id, node in graph.items():
        problem = _check_node(graph, node_id, node)
        if node.op == "field_input" and problem is None:
            problem = _check_field_input(node, field_widths)
        if problem:
            raise VerifyError(f"{format_node(graph, node_id)}: {problem}")
        if node.op == "field":
            if node.state in fields_seen:
                raise VerifyError(f"record field {node.state!r} has two drivers: "
                                  f"%{fields_seen[node.state]} and %{node_id}")
            fields_seen[node.state] = node_id
        if node.op == "stop":
            stops.append(node_id)
    if len(stops) > 1:
        raise VerifyError(f"stop has two drivers: {', '.join(f'%{s}' for s in stops)}")
    _check_lane_bindings(graph)
    for source, target in graph.edges():
        if source not in graph.node(target).args:
            raise VerifyError(f"%{target} is driven by %{source}, which is not one of its "
                              f"arguments (two drivers)")


def _check_node(graph: Graph, node_id: int, node: IrNode) -> str | None:
    for arg in node.args:
        if arg not in graph:
            return f"argument %{arg} does not exist"
        if graph.node(arg).op in SINK_OPS:
            return f"argument %{arg} is a sink, which has no value"
    problem = _check_analog_reads(graph, node)
    if problem:
        return problem
    widths = [graph.node(a).width for a in node.args]
    if node.op in SINK_OPS:
        if graph.users(node_id):
            return "a sink has users"
        return _check_sink(graph, node, widths)
    if node.width < 1:
        return f"width {node.width}"
    if graph.level == "digit" and node.width > DIGIT_BITS and node.op not in ANALOG_OPS:
        return f"u{node.width} value left in a digit-level graph"
    if node.domain is not None:
        if not node.domain or any(not 0 <= v < 1 << node.width for v in node.domain):
            return f"domain {node.domain} outside u{node.width}"
        if list(node.domain) != sorted(set(node.domain)):
            return "domain is not sorted and unique"
    if node.encoding is not None:
        problem = _check_encoding(graph, node_id, node)
        if problem:
            return problem
    if node.op == "const":
        if node.args or node.value is None or not 0 <= node.value < 1 << node.width:
            return f"constant {node.value} does not fit u{node.width}"
        return None
    if node.op in ("register", "read"):
        return _check_state_source(graph, node, widths)
    if node.op == "field_input":
        return None        # checked in `verify`, which knows the record's fields
    if node.op == "next_lane":
        return "next_lane takes no arguments" if node.args else None
    if node.op in semantics.OPERATORS:
        try:
            expected = semantics.result_width(node.op, widths, node.width, node.low)
        except ValueError as error:
            return str(error)
        if expected != node.width:
            return f"width mismatch: u{node.width}, but {node.op} of {tuple(widths)} gives " \
                   f"u{expected}"
        return None
    if node.op in DIGIT_OPS:
        row = DIGIT_OPS[node.op]
        problem = row.check(node, widths)
        if problem:
            return problem
        domains = [graph.domain(a) for a in node.args]
        if node.op == "select" and any(v >= len(node.args) - 1 for v in domains[0]):
            return f"selector can be {max(domains[0])}, but there are {len(node.args) - 1} arms"
        image = row.image(node, domains, widths)
        allowed = set(graph.domain(node_id))
        if not image <= allowed:
            return f"can produce {sorted(image - allowed)}, outside its domain or width"
        return None
    return f"unknown operator {node.op!r}"


def _check_analog_reads(graph: Graph, node: IrNode) -> str | None:
    """An analog value is read only linearly: an affine term of a `sum`."""
    for index, arg in enumerate(node.args):
        if graph.node(arg).op not in ANALOG_OPS:
            continue
        if node.op != "sum":
            return f"reads the analog value %{arg} ({node.op} reads one-hot values only)"
        term = node.terms[index] if node.terms and index < len(node.terms) else ()
        points = [(v, term[v]) for v in graph.domain(arg) if v < len(term)]
        if affine_fit(points) is None:
            return f"reads the analog value %{arg} through a term that is not affine"
    return None


def _check_sink(graph: Graph, node: IrNode, widths: list[int]) -> str | None:
    groups = node.groups or (1,) * len(node.args)
    if sum(groups) != len(node.args) or any(g < 1 for g in groups):
        return f"groups {groups} do not cover {len(node.args)} arguments"
    firsts = [sum(groups[:i]) for i in range(len(groups))]
    group_widths = [_group_width(widths[f:f + g]) for f, g in zip(firsts, groups)]
    if node.op == "stop":
        return None if group_widths == [1] else f"stop takes one bit, got {group_widths}"
    if node.op == "field":
        if len(groups) != 1 or group_widths[0] > node.width:
            return f"record field of u{node.width} fed {group_widths}"
        return None
    if node.state in graph.registers:
        dims, width = 0, graph.registers[node.state].width
    elif node.state in graph.memories:
        dims, width = len(graph.memories[node.state].shape), graph.memories[node.state].width
    else:
        return f"write to unknown state {node.state!r}"
    if len(groups) != dims + 2:
        return f"write to {node.state} needs enable, {dims} index and data, got {len(groups)}"
    if group_widths[0] != 1:
        return "write enable is not one bit"
    if group_widths[-1] > width:
        return f"write of u{group_widths[-1]} into u{width} state {node.state}"
    return None


def _group_width(widths: list[int]) -> int:
    """Width of a value given as digits (all but the last sit in full 4-bit slots)."""
    if len(widths) == 1:
        return widths[0]
    return DIGIT_BITS * (len(widths) - 1) + widths[-1]


def _check_lane_bindings(graph: Graph) -> None:
    """Only record fields with a `lane` may depend on `next_lane`, at a lane it can hold."""
    lanes = [i for i, n in graph.items() if n.op == "next_lane"]
    bound = set(lanes)
    for lane_id in lanes:
        bound |= nx.descendants(graph._graph, lane_id)
    held = {v for lane_id in lanes for v in graph.domain(lane_id)}
    for node_id, node in graph.items():
        if node.op not in SINK_OPS:
            continue
        if node.lane is not None and (node.op != "field" or node.lane < 0 or
                                      (lanes and node.lane not in held)):
            raise VerifyError(f"{format_node(graph, node_id)}: lane {node.lane} on a "
                              f"{node.op} (next_lane holds {sorted(held)})")
        if node.lane is None and node_id in bound:
            raise VerifyError(f"{format_node(graph, node_id)}: depends on next_lane but "
                              "names no lane to read it at")


def _check_field_input(node: IrNode, field_widths: dict[str, int]) -> str | None:
    if node.args:
        return "a field input takes no arguments"
    if node.state not in field_widths:
        return f"field input of unknown record field {node.state!r}"
    if node.low < 0 or node.low + node.width > field_widths[node.state]:
        return f"bits {node.low}..{node.low + node.width - 1} outside u" \
               f"{field_widths[node.state]} field {node.state}"
    return None


def _check_state_source(graph: Graph, node: IrNode, widths: list[int]) -> str | None:
    spec = graph.registers.get(node.state) if node.op == "register" else \
        graph.memories.get(node.state)
    if spec is None:
        return f"{node.op} of unknown state {node.state!r}"
    if node.low < 0 or node.low + node.width > spec.width:
        return f"bits {node.low}..{node.low + node.width - 1} outside u{spec.width} " \
               f"{node.state}"
    if node.op == "read":
        groups = node.groups or (1,) * len(node.args)
        if len(groups) != len(spec.shape) or sum(groups) != len(node.args):
            return f"read of {node.state} needs {len(spec.shape)} indices, got {groups}"
    elif node.args:
        return "a register read takes no arguments"
    return None


def _check_encoding(graph: Graph, node_id: int, node: IrNode) -> str | None:
    encoding = node.encoding
    size = len(graph.domain(node_id)) if node.width <= DIGIT_BITS else None
    if encoding.kind == "bit" and (node.width != 1 or encoding.dims != 2):
        return f"encoding {encoding} on a u{node.width} value"
    if encoding.kind == "hex" and (size != 16 or encoding.dims != 16):
        return f"encoding {encoding} on a value of {size} possible values"
    if encoding.kind == "enum" and (size is None or encoding.dims < size):
        return f"encoding {encoding} cannot hold {size} values"
    if encoding.kind == "word" and (node.width <= DIGIT_BITS or
                                    encoding.dims != word_dims(node.width)):
        return f"encoding {encoding} on a u{node.width} value"
    if encoding.kind == "analog" and (node.op not in ANALOG_OPS or encoding.dims != 1):
        return f"encoding {encoding} on a {node.op} value"
    if encoding.kind not in ("bit", "hex", "enum", "word", "analog"):
        return f"unknown encoding {encoding}"
    return None


def word_dims(width: int) -> int:
    """Residual dims of a `width`-bit value held as one-hot digits (16 per full digit)."""
    full, rest = divmod(width, DIGIT_BITS)
    return 16 * full + (1 << rest if rest else 0)


# ---- build_graph -----------------------------------------------------------------------------

def build_graph(design: Design) -> Graph:
    """The IR of an elaborated design: netlist nodes keep their ids; sinks follow them.

    State reads become source nodes (`register`, `read`), each `StateWrite` a `write` sink
    (args: enable, index..., data), each record field a `field` sink, and `stop` a sink."""
    graph = Graph(design.name, design.file, design.memories, design.registers)
    for node in design.nodes:
        graph.add_record(IrNode(op=node.op, width=node.width, args=tuple(node.args),
                                value=node.value, low=node.low if node.op == "slice" else 0,
                                state=node.state, stage=node.stage, name=node.name,
                                loc=node.loc), node.id)
    for write in design.writes:
        graph.add("write", design.state_width(write.state),
                  (write.enable, *write.index, write.data), state=write.state, loc=write.loc)
    for record_field in design.record:
        graph.add("field", record_field.width, (record_field.node,), state=record_field.name,
                  loc=record_field.loc)
    if design.stop is not None:
        graph.add("stop", 1, (design.stop,), loc=design.nodes[design.stop].loc)
    return graph


# ---- evaluate --------------------------------------------------------------------------------

def evaluate(graph: Graph, state_inputs: dict, node_values: dict | None = None) -> dict:
    """Run one step of the graph on a machine state; returns what the step produces.

    `state_inputs` maps each register to its value and each memory to its elements (a flat
    row-major list, nested lists, or a dict from index tuples; missing elements are 0).
    The result is `{"writes": [(state, index, value), ...], "record": {field: value},
    "stop": 0 or 1}`: the enabled writes whose index is in range, in program order.  Word
    graphs and digit graphs of the same design give equal results.  `node_values`, when
    given, receives every node's value (for checks that look inside a compiled model)."""
    memories = {name: _flat_memory(spec, state_inputs.get(name))
                for name, spec in graph.memories.items()}
    values: dict[int, int] = {} if node_values is None else node_values
    lanes = _LaneValues(graph)
    writes, record, stop = [], {}, 0
    for node_id in _evaluation_order(graph):
        node = graph.node(node_id)
        if node.op == "field_input":
            field_node = next(n for _, n in graph.items()
                              if n.op == "field" and n.state == node.state)
            whole = _group_values(graph, field_node,
                                  lanes.args(field_node, values, field_node.lane))[0]
            values[node_id] = (whole >> node.low) & semantics.mask(node.width)
            continue
        if node_id in lanes.bound and node.op not in SINK_OPS:
            for lane in lanes.held:
                lanes.values[lane][node_id] = lane if node.op == "next_lane" else \
                    _evaluate_node(graph, node, lanes.args(node, values, lane), state_inputs,
                                   memories)
            continue
        args = lanes.args(node, values, node.lane)
        if node.op in SINK_OPS:
            operands = _group_values(graph, node, args)
            if node.op == "field":
                record[node.state] = operands[0]
            elif node.op == "stop":
                stop = operands[0]
            elif operands[0]:
                index = tuple(operands[1:-1])
                if node.state in graph.memories and \
                        _flat_index(graph.memories[node.state], index) is None:
                    continue
                writes.append((node_id, node.state, index, operands[-1]))
            continue
        values[node_id] = _evaluate_node(graph, node, args, state_inputs, memories)
    writes.sort()
    return {"writes": [w[1:] for w in writes], "record": record, "stop": stop}


class _LaneValues:
    """The values of the nodes that depend on `next_lane`, once per lane it can hold."""

    def __init__(self, graph: Graph):
        sources = [i for i, n in graph.items() if n.op == "next_lane"]
        self.bound = set(sources)
        for source in sources:
            self.bound |= nx.descendants(graph._graph, source)
        self.held = sorted({v for source in sources for v in graph.domain(source)})
        self.values: dict[int, dict[int, int]] = {lane: {} for lane in self.held}

    def args(self, node: IrNode, values: dict[int, int], lane: int | None) -> list[int]:
        """The argument values of `node` with `next_lane` bound to `lane`."""
        return [self.values[lane][a] if a in self.bound else values[a] for a in node.args]


def _evaluation_order(graph: Graph) -> list[int]:
    """Dependency order, with each `field_input` after the value of its record field."""
    inputs = [i for i, n in graph.items() if n.op == "field_input"]
    if not inputs:
        return graph.order()
    order = graph._graph.copy()
    fields = {n.state: n for _, n in graph.items() if n.op == "field"}
    for node_id in inputs:
        for arg in fields[graph.node(node_id).state].args:
            order.add_edge(arg, node_id)
    return list(nx.lexicographical_topological_sort(order, key=lambda n: n))


def _evaluate_node(graph, node, args, state_inputs, memories) -> int:
    if node.op == "const":
        return node.value
    if node.op == "register":
        whole = state_inputs.get(node.state, graph.registers[node.state].reset)
        return (whole >> node.low) & semantics.mask(node.width)
    if node.op == "read":
        spec = graph.memories[node.state]
        flat = _flat_index(spec, tuple(_group_values(graph, node, args)))
        whole = 0 if flat is None else memories[node.state][flat]
        return (whole >> node.low) & semantics.mask(node.width)
    widths = [graph.node(a).width for a in node.args]
    if node.op in DIGIT_OPS:
        return DIGIT_OPS[node.op].evaluate(node, args, widths)
    return semantics.evaluate(node.op, args, widths, node.width, node.low)


def _group_values(graph: Graph, node: IrNode, args: list[int]) -> list[int]:
    """The logical operands of a sink or read: digit groups put back together."""
    groups = node.groups or (1,) * len(args)
    out, position = [], 0
    for count in groups:
        out.append(sum(v << (DIGIT_BITS * k) for k, v in enumerate(args[position:position
                                                                       + count])))
        position += count
    return out


def _flat_index(spec: MemorySpec, index: tuple[int, ...]) -> int | None:
    flat = 0
    for i, n in zip(index, spec.shape):
        if not 0 <= i < n:
            return None
        flat = flat * n + i
    return flat


def _flat_memory(spec: MemorySpec, given) -> list[int]:
    if given is None:
        return [0] * spec.size
    if isinstance(given, dict):
        flat = [0] * spec.size
        for index, value in given.items():
            position = _flat_index(spec, tuple(index) if isinstance(index, tuple) else (index,))
            if position is not None:
                flat[position] = value
        return flat
    items = list(given)
    while items and isinstance(items[0], (list, tuple)):
        items = [x for row in items for x in row]
    return items + [0] * (spec.size - len(items))


def random_state(graph: Graph, rng, style: str = "uniform") -> dict:
    """A machine state for the meaning tests: `uniform` bits, or `edges` (0, 1, all ones,
    the sign bit, small numbers) which reach the corners of adders and comparators."""
    def value(width: int) -> int:
        if style == "edges" and rng.random() < 0.7:
            top = semantics.mask(width)
            return rng.choice([0, 1, 2, top, top - 1, 1 << (width - 1), rng.randrange(16)]) & top
        return rng.getrandbits(width)
    state: dict = {name: value(spec.width) for name, spec in graph.registers.items()}
    for name, spec in graph.memories.items():
        state[name] = [value(spec.width) for _ in range(spec.size)]
    return state


# ---- text form -------------------------------------------------------------------------------

def _type_text(graph: Graph, node_id: int, node: IrNode) -> str:
    text = f"u{node.width}"
    if node.domain is not None:
        text += " {" + ",".join(str(v) for v in node.domain) + "}"
    if node.encoding is not None:
        text += f" {node.encoding}"
    return text


def _table_text(table: tuple[int, ...]) -> str:
    if len(table) <= 16 and all(v < 16 for v in table):
        return "".join(f"{v:x}" for v in table)
    digest = 0
    for v in table:
        digest = (digest * 1000003 + v + 1) & 0xFFFFFFFF
    return f"#{digest:08x}"


def format_node(graph: Graph, node_id: int, with_locations: bool = True) -> str:
    """One node as text: `%4 = add %1, %2 : u32 @qwengpu.hdl:31`."""
    node = graph.node(node_id)
    args = ", ".join(f"%{a}" for a in node.args)
    if node.op == "const":
        body = f"const {node.value}"
    elif node.op == "register":
        body = f"register {node.state}" + (f"[bit {node.low}]" if node.low else "")
    elif node.op == "read":
        body = f"read {node.state}[{args}]" + (f"[bit {node.low}]" if node.low else "")
    elif node.op == "field_input":
        body = f"field_input {node.state}" + (f"[bit {node.low}]" if node.low else "")
    elif node.op == "slice":
        body = f"slice {args}, {node.low}"
    elif node.op == "write":
        body = f"write {node.state} {args}"
    elif node.op == "field":
        body = f"field {node.state} = {args}"
        if node.lane is not None:
            body += f" at lane {node.lane}"
    elif node.op in DIGIT_OPS:
        detail = node.label or ""
        if node.table is not None:
            detail += (" " if detail else "") + _table_text(node.table)
        if node.op == "mul_column":
            detail += (" " if detail else "") + f"column {node.low}"
        if node.op == "sum":
            detail += f" base {node.base} terms " + \
                " ".join(_table_text(t) for t in node.terms)
        body = f"{node.op} {args}" + (f" {{{detail}}}" if detail else "")
    else:
        body = f"{node.op} {args}" if args else node.op
    if node.groups is not None and any(g > 1 for g in node.groups):
        body += " groups " + ",".join(map(str, node.groups))
    text = f"%{node_id} = {body}"
    if node.op not in SINK_OPS:
        text += f" : {_type_text(graph, node_id, node)}"
    if node.name:
        text += f" ; {node.name}"
    if with_locations and node.loc:
        text += f" @{node.loc}"
    return text


def format_graph(graph: Graph, with_locations: bool = True) -> str:
    """The whole graph: state declarations, then every node in dependency order."""
    lines = [f"graph {graph.name} ({graph.level} level)"]
    for memory in graph.memories.values():
        dims = "".join(f"[{d}]" for d in memory.shape)
        lines.append(f"memory {memory.name}{dims} : u{memory.width}")
    for register in graph.registers.values():
        lines.append(f"register {register.name} : u{register.width} = {register.reset}")
    lines += [format_node(graph, n, with_locations) for n in graph.order()]
    return "\n".join(lines) + "\n"


def to_dot(graph: Graph, with_locations: bool = False) -> str:
    """Graphviz DOT text (render with `dot -Tsvg` where graphviz is installed)."""
    lines = [f'digraph "{graph.name}" {{', "  rankdir=TB;",
             '  node [shape=box, fontname="monospace", fontsize=9];']
    for node_id in graph.order():
        node = graph.node(node_id)
        label = format_node(graph, node_id, with_locations).replace('"', r'\"')
        shape = {"write": "house", "field": "house", "stop": "house", "const": "plaintext",
                 "register": "cylinder", "read": "cylinder",
                 "field_input": "cylinder", "next_lane": "cylinder"}.get(node.op, "box")
        lines.append(f'  n{node_id} [label="{label}", shape={shape}];')
    for source, target in graph.edges():
        lines.append(f"  n{source} -> n{target};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def keep_origin(record: IrNode) -> dict:
    """The origin fields of a node, to copy onto the nodes that replace it."""
    return {name: getattr(record, name) for name in _ORIGIN_FIELDS}
