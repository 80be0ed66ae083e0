"""The elaborated form of a spec: state declarations plus one step of fixed-width logic.

`qwengpu.dsl.elaborate` turns a spec into a `Design`; the reference interpreter
(`qwengpu.dsl.interp`) and the dataflow-graph builder of the compiler both start here.  A
`Design` describes one step of the machine (one trace record) as:

- **state**: `memories` (addressable: `shape` dimensions of `width`-bit elements, reset to 0)
  and `registers` (one `width`-bit value each, reset to `reset`), in declaration order;
- **nodes**: a list of `Node`s in dependency order (every argument of node `i` is a node `j < i`,
  and `nodes[i].id == i`).  Each node is one operator applied to earlier nodes:
    - `const` (`value`), a literal of `width` bits;
    - `register` (`state`), the register's value at the start of the step;
    - `read` (`state`, `args` = one index node per dimension), a memory element at the start of
      the step; an index out of range for its dimension reads 0;
    - any operator of `qwengpu.dsl.semantics.OPERATORS` (`add`, `mux`, `slice` with `low`, ...),
      whose meaning and width rule are given there;
  `stage` names the pipeline stage that computes it, `name` the HDL wire it defines (if any,
  e.g. `execute.value[2]`), `loc` the HDL source that created it, and `loop` the iteration
  of the `for` loops around it (`lane=2`: what tells apart the unnamed copies one line makes);
- **writes**: `StateWrite`s, applied at the end of the step in list order: when node `enable`
  is 1, element `index` of memory `state` (or register `state`, with an empty index) takes
  the value of node `data`.  An index out of range drops the write; of two enabled writes to
  one element the later one wins;
- **record**: the `RecordField`s the step emits, in order;
- **stop**: a 1-bit node, or None.  When it is 1 the step does nothing: no writes, no record.

All reads see the state as it was when the step began, so the order of writes relative to
reads does not matter.  `format_design` prints the whole thing as text (`%4 = add %1, %2 : u32`)
and `verify_design` checks the invariants above.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from qwengpu.dsl import semantics
from qwengpu.errors import Location


@dataclass(frozen=True)
class Node:
    """One value computed during a step (see the module docstring for the operators)."""

    id: int
    op: str
    args: tuple[int, ...]
    width: int
    value: int | None = None          # const: the literal
    low: int = 0                      # slice: the lowest bit taken
    state: str | None = None          # register / read: the state element
    stage: str | None = None
    name: str | None = None
    loc: Location | None = None
    loop: str | None = None           # the loop iteration that made it (`lane=2`), if any


@dataclass(frozen=True)
class MemorySpec:
    """Addressable state: a `shape` array of `width`-bit elements, all reset to 0."""

    name: str
    shape: tuple[int, ...]
    width: int
    doc: str | None = None
    loc: Location | None = None

    @property
    def size(self) -> int:
        return prod(self.shape)


@dataclass(frozen=True)
class RegisterSpec:
    """A plain `width`-bit register."""

    name: str
    width: int
    reset: int = 0
    doc: str | None = None
    loc: Location | None = None


@dataclass(frozen=True)
class StateWrite:
    """`state[index] <= data when enable`, applied at the end of the step."""

    state: str
    index: tuple[int, ...]            # one node per memory dimension; () for a register
    data: int
    enable: int
    loc: Location | None = None


@dataclass(frozen=True)
class RecordField:
    """A field of the record.  An optional field (`emit f = v when c`) is present only when
    field `when` (emitted earlier, itself always present) holds: bit `when_bit` of it, or
    any bit when `when_bit` is None; an absent field reads 0 (docs/hdl.md, "Optional
    fields").  A `packed` field is the second of `emit (a, b)`: it has no token of its own
    but rides in the high hex digit of the token of the field before it (docs/hdl.md,
    "Two fields in one token")."""
    name: str
    node: int
    width: int
    loc: Location | None = None
    when: str | None = None
    when_bit: int | None = None
    packed: bool = False

    def present(self, values: dict[str, int]) -> bool:
        return field_present(self.when, self.when_bit, values)

    def condition_text(self) -> str:
        return condition_text(self.when, self.when_bit)


def field_present(when: str | None, bit: int | None, values: dict[str, int]) -> bool:
    """Whether a field present `when` (bit `bit` of field `when`, or any bit of it when
    `bit` is None; always when `when` is None) is in a record whose fields hold `values`."""
    if when is None:
        return True
    return bool(values[when] >> bit & 1) if bit is not None else values[when] != 0


def condition_text(when: str | None, bit: int | None) -> str:
    """A field's presence condition in words."""
    if when is None:
        return "always"
    return f"bit {bit} of {when}" if bit is not None else f"{when} != 0"


@dataclass(frozen=True)
class PipelineRegister:
    """A value a stage hands on (`out`): a scalar (shape ()) or an array of elements."""

    name: str
    shape: tuple[int, ...]
    width: int


@dataclass(frozen=True)
class StageSpec:
    name: str
    outputs: tuple[PipelineRegister, ...]
    loc: Location | None = None


@dataclass
class Design:
    """One elaborated spec (see the module docstring)."""

    name: str
    file: str
    params: dict[str, int] = field(default_factory=dict)
    param_docs: dict[str, str] = field(default_factory=dict)
    constants: dict[str, int] = field(default_factory=dict)
    enums: dict[str, dict[str, int]] = field(default_factory=dict)
    # Each enum member's string, where the spec gives one (the ISA's assembly forms).
    enum_texts: dict[str, dict[str, str]] = field(default_factory=dict)
    enum_locs: dict[str, dict[str, Location]] = field(default_factory=dict)
    memories: dict[str, MemorySpec] = field(default_factory=dict)
    registers: dict[str, RegisterSpec] = field(default_factory=dict)
    stages: list[StageSpec] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    writes: list[StateWrite] = field(default_factory=list)
    record: list[RecordField] = field(default_factory=list)
    stop: int | None = None

    def state_width(self, name: str) -> int:
        element = self.memories.get(name) or self.registers[name]
        return element.width

    @property
    def record_bits(self) -> int:
        return sum(f.width for f in self.record)


def _type_name(width: int) -> str:
    return f"u{width}"


def format_node(node: Node, with_locations: bool = True) -> str:
    """`%4 = add %1, %2 : u32  ; execute.sum @spec.hdl:31` (the netlist's text form)."""
    args = ", ".join(f"%{a}" for a in node.args)
    if node.op == "const":
        body = f"const {node.value}"
    elif node.op == "register":
        body = f"register {node.state}"
    elif node.op == "read":
        body = f"read {node.state}[{args}]"
    elif node.op == "slice":
        body = f"slice {args}, {node.low}"
    else:
        body = f"{node.op} {args}"
    text = f"%{node.id} = {body} : {_type_name(node.width)}"
    notes = []
    if node.name:
        notes.append(node.name)
    if with_locations and node.loc:
        notes.append(f"@{node.loc}")
    return text + ("  ; " + " ".join(notes) if notes else "")


def format_design(design: Design, with_locations: bool = True) -> str:
    """The whole design as text, one declaration or node per line."""
    lines = [f"machine {design.name}"]
    lines += [f"param {name} = {value}" for name, value in design.params.items()]
    for memory in design.memories.values():
        dims = "".join(f"[{d}]" for d in memory.shape)
        lines.append(f"memory {memory.name}{dims} : {_type_name(memory.width)}")
    for register in design.registers.values():
        lines.append(f"register {register.name} : {_type_name(register.width)}"
                     f" = {register.reset}")
    stage = object()
    for node in design.nodes:
        if node.stage != stage:
            stage = node.stage
            lines.append(f"stage {stage or '(none)'}")
        lines.append("  " + format_node(node, with_locations))
    for write in design.writes:
        index = "".join(f"[%{i}]" for i in write.index)
        where = f"  @{write.loc}" if with_locations and write.loc else ""
        lines.append(f"write {write.state}{index} <= %{write.data} when %{write.enable}{where}")
    for record_field in design.record:
        when = "" if record_field.when is None else f" when {record_field.condition_text()}"
        packed = " (in the token before)" if record_field.packed else ""
        lines.append(f"emit {record_field.name} = %{record_field.node}"
                     f" : {_type_name(record_field.width)}{when}{packed}")
    if design.stop is not None:
        lines.append(f"stop when %{design.stop}")
    return "\n".join(lines) + "\n"


def verify_design(design: Design) -> None:
    """Check the invariants of the module docstring; `AssertionError` names the first broken."""
    for position, node in enumerate(design.nodes):
        assert node.id == position, f"node {node.id} at position {position}"
        assert all(0 <= a < position for a in node.args), f"%{position} uses a later node"
        widths = [design.nodes[a].width for a in node.args]
        assert node.width >= 1, f"%{position} has width {node.width}"
        if node.op == "const":
            assert node.value is not None and 0 <= node.value < (1 << node.width), node
        elif node.op == "register":
            assert design.registers[node.state].width == node.width, node
        elif node.op == "read":
            memory = design.memories[node.state]
            assert len(node.args) == len(memory.shape), f"%{position}: wrong index count"
            assert memory.width == node.width, node
        else:
            expected = semantics.result_width(node.op, widths, node.width, node.low)
            assert expected == node.width, f"%{position}: width {node.width}, rule {expected}"
    count = len(design.nodes)
    for write in design.writes:
        assert 0 <= write.data < count and 0 <= write.enable < count, write
        assert design.nodes[write.enable].width == 1, write
        assert design.nodes[write.data].width == design.state_width(write.state), write
        expected_dims = len(design.memories[write.state].shape) if write.state in \
            design.memories else 0
        assert len(write.index) == expected_dims, write
    names = [f.name for f in design.record]
    assert len(names) == len(set(names)), "duplicate record field"
    for record_field in design.record:
        assert design.nodes[record_field.node].width == record_field.width, record_field
    if design.stop is not None:
        assert design.nodes[design.stop].width == 1, "stop is not 1 bit"
