"""The reference interpreter: runs an elaborated `Design` one step (one record) at a time.

This is the golden model of a machine described in the HDL.  It compiles the design's step
once into Python source (`step_source`) and `exec`s it, so a step costs a few hundred Python
expressions rather than a walk over the netlist.  The generated code is made from the
semantics table's templates (`qwengpu.dsl.semantics.python_expression`), so the interpreter
and constant folding cannot disagree about what an operator means.  On the way it drops nodes
nothing uses, merges nodes that compute the same thing, and inlines single-use nodes into their
user, which makes the arms of a mux lazy.

    sim = Simulator(load_design("specs/qwengpu.hdl"))
    sim.write_memory("prog", [0], word)           # fill state
    record = sim.step()                           # dict field -> int, or None when stopped

State lives in `sim.memories` (flat row-major lists, one per memory) and `sim.registers`
(one int per register); `read_memory`/`write_memory` take multi-dimensional indices.  Steps are
deterministic: the same state gives the same record and the same next state.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from qwengpu.dsl import semantics
from qwengpu.dsl.netlist import Design, Node
from qwengpu.errors import CapacityError, HdlError, Location

# Inlining stops at this nesting depth (CPython's parser limits nested parentheses).
MAX_INLINE_DEPTH = 40


def _flat_offset(shape: Sequence[int], index: Sequence[int]) -> int:
    offset = 0
    for size, position in zip(shape, index):
        offset = offset * size + position
    return offset


class _StepCompiler:
    """Turns a design into the source of `def step(memories, registers)`."""

    def __init__(self, design: Design):
        self.design = design
        self.nodes = design.nodes
        self.canonical = self._merge_common()
        self.uses = Counter()
        self.expressions: dict[int, str] = {}
        self.depth: dict[int, int] = {}
        self.lines: list[str] = []

    def _merge_common(self) -> list[int]:
        """canonical[i]: the first node computing exactly what node i computes."""
        seen: dict[tuple, int] = {}
        canonical = []
        for node in self.nodes:
            args = tuple(canonical[a] for a in node.args)
            key = (node.op, args, node.width, node.value, node.low, node.state)
            canonical.append(seen.setdefault(key, node.id))
        return canonical

    def _live(self, roots: Iterable[int]) -> set[int]:
        live, stack = set(), [self.canonical[r] for r in roots]
        while stack:
            node = stack.pop()
            if node in live:
                continue
            live.add(node)
            stack.extend(self.canonical[a] for a in self.nodes[node].args)
        return live

    def _use(self, node_id: int) -> str:
        node_id = self.canonical[node_id]
        return self.expressions[node_id]

    def _expression(self, node: Node) -> str:
        if node.op == "const":
            return str(node.value)
        if node.op == "register":
            return f"reg_{node.state}"
        args = [self._use(a) for a in node.args]
        if node.op == "read":
            return self._read_expression(node, args)
        widths = [self.nodes[a].width for a in node.args]
        return semantics.python_expression(node.op, args, widths, node.width, node.low)

    def _read_expression(self, node: Node, args: list[str]) -> str:
        memory = self.design.memories[node.state]
        terms, checks = [], []
        stride = 1
        for size, arg_id, text in reversed(list(zip(memory.shape, node.args, args))):
            index_node = self.nodes[self.canonical[arg_id]]
            if index_node.op == "const":
                if index_node.value >= size:
                    return "0"
                if index_node.value:
                    terms.append(str(index_node.value * stride))
            else:
                if (1 << index_node.width) > size:
                    checks.append(f"{text} < {size}")
                terms.append(text if stride == 1 else f"{text} * {stride}")
            stride *= size
        offset = " + ".join(reversed(terms)) or "0"
        access = f"mem_{node.state}[{offset}]"
        if checks:
            return f"({access} if {' and '.join(checks)} else 0)"
        return access

    def _emit_nodes(self, wanted: set[int], done: set[int]) -> None:
        for node in self.nodes:
            node_id = node.id
            if node_id not in wanted or node_id in done or self.canonical[node_id] != node_id:
                continue
            done.add(node_id)
            text = self._expression(node)
            depth = 1 + max((self.depth[self.canonical[a]] for a in node.args), default=0)
            inline = node.op in ("const", "register") or (
                self.uses[node_id] <= 1 and depth < MAX_INLINE_DEPTH)
            if inline:
                self.expressions[node_id] = text
                self.depth[node_id] = depth
            else:
                name = f"v{node_id}"
                self.lines.append(f"    {name} = {text}")
                self.expressions[node_id] = name
                self.depth[node_id] = 0

    def compile(self) -> str:
        design = self.design
        roots = [w.data for w in design.writes] + [w.enable for w in design.writes]
        roots += [i for w in design.writes for i in w.index]
        roots += [f.node for f in design.record]
        stop_roots = [design.stop] if design.stop is not None else []
        live = self._live(roots + stop_roots)
        for node_id in live:
            for arg in self.nodes[node_id].args:
                self.uses[self.canonical[arg]] += 1
        for root in roots + stop_roots:
            self.uses[self.canonical[root]] += 1

        self.lines.append("def step(memories, registers):")
        for name in design.memories:
            self.lines.append(f"    mem_{name} = memories[{name!r}]")
        for name in design.registers:
            self.lines.append(f"    reg_{name} = registers[{name!r}]")
        done: set[int] = set()
        if design.stop is not None:
            # The stop condition first, so that a stopped machine costs almost nothing.
            self._emit_nodes(self._live(stop_roots), done)
            self.lines.append(f"    if {self._use(design.stop)}:")
            self.lines.append("        return None")
        self._emit_nodes(live, done)
        # Every value the record and the writes need is computed before any state changes.
        settled = {f.name: self._settled(f.node, f"field_{number}")
                   for number, f in enumerate(design.record)}
        fields = ", ".join(f"{name!r}: {text}" for name, text in settled.items())
        for number, f in enumerate(design.record):
            # an absent optional field reads 0 in the trace: its value must be 0 then
            if f.when is not None and settled[f.name] != "0":
                when = settled[f.when]
                present = f"{when} >> {f.when_bit} & 1" if f.when_bit is not None else when
                self.lines.append(f"    if not ({present}) and {settled[f.name]}:")
                self.lines.append(f"        absent_but_nonzero({number}, {settled[f.name]})")
        self._emit_writes()
        self.lines.append(f"    return {{{fields}}}")
        return "\n".join(self.lines) + "\n"

    def _settled(self, node_id: int, local: str) -> str:
        """A name or literal holding the node's value (assigned now if it was inline)."""
        text = self._use(node_id)
        if text.isidentifier() or text.isdigit():
            return text
        self.lines.append(f"    {local} = {text}")
        return local

    def _emit_writes(self) -> None:
        design = self.design
        pending = []
        for number, write in enumerate(design.writes):
            parts = {"data": write.data, "enable": write.enable}
            parts.update({f"index{d}": i for d, i in enumerate(write.index)})
            names = {key: self._settled(node_id, f"w{number}_{key}")
                     for key, node_id in parts.items()}
            pending.append((write, names))
        for write, names in pending:
            enable = names["enable"]
            indent = "    " if enable == "1" else "        "
            if enable == "0":
                continue
            if enable != "1":
                self.lines.append(f"    if {enable}:")
            if write.state in design.registers:
                self.lines.append(f"{indent}registers[{write.state!r}] = {names['data']}")
                continue
            memory = design.memories[write.state]
            index = [names[f"index{d}"] for d in range(len(memory.shape))]
            checks = [f"{text} < {size}" for text, size, node_id in
                      zip(index, memory.shape, write.index)
                      if (1 << self.nodes[node_id].width) > size]
            stride, terms = 1, []
            for text, size in reversed(list(zip(index, memory.shape))):
                if text.isdigit():
                    if int(text):
                        terms.append(str(int(text) * stride))
                else:
                    terms.append(text if stride == 1 else f"{text} * {stride}")
                stride *= size
            terms = terms or ["0"]
            target = f"mem_{write.state}[{' + '.join(reversed(terms))}]"
            if checks:
                self.lines.append(f"{indent}if {' and '.join(checks)}:")
                self.lines.append(f"{indent}    {target} = {names['data']}")
            else:
                self.lines.append(f"{indent}{target} = {names['data']}")


def step_source(design: Design) -> str:
    """The Python source of the compiled step function (for reading and debugging)."""
    return _StepCompiler(design).compile()


def compile_step(design: Design):
    """The compiled step function: `step(memories, registers) -> record | None`."""
    def absent_but_nonzero(number: int, value: int):
        field = design.record[number]
        raise HdlError(f"record field {field.name} is absent (its condition, "
                       f"{field.condition_text()}, does not hold) but is {value}: an absent field "
                       "reads 0 in the trace, so the spec must make it 0 then (e.g. "
                       f"`{field.when} ? value : 0`)", field.loc)

    namespace: dict = {"absent_but_nonzero": absent_but_nonzero}
    source = step_source(design)
    try:
        code = compile(source, f"<step of {design.file}>", "exec")
    except RecursionError:
        raise CapacityError(f"machine {design.name}: too large for the reference interpreter "
                            "(its step nests deeper than Python compiles); use smaller "
                            "parameters", Location(design.file)) from None
    exec(code, namespace)  # noqa: S102
    step = namespace["step"]
    step.source = source
    return step


class Simulator:
    """Runs a design step by step; see the module docstring.

    `step_function` lets several simulators of one design share one compiled step
    (`compile_step(design)`); by default the design is compiled here."""

    def __init__(self, design: Design, step_function=None):
        self.design = design
        self._step = step_function or compile_step(design)
        self.source = self._step.source
        self.memories: dict[str, list[int]] = {}
        self.registers: dict[str, int] = {}
        self.steps = 0
        self.reset()

    def reset(self) -> None:
        """Memories to zero, registers to their reset values."""
        self.memories = {name: [0] * memory.size for name, memory in self.design.memories.items()}
        self.registers = {name: register.reset
                          for name, register in self.design.registers.items()}
        self.steps = 0

    def step(self) -> dict[str, int] | None:
        """One step: the record it emits, or None when the stop condition holds."""
        record = self._step(self.memories, self.registers)
        if record is not None:
            self.steps += 1
        return record

    def run(self, max_steps: int) -> list[dict[str, int]]:
        """Step until the machine stops or `max_steps` records have been emitted."""
        records = []
        while len(records) < max_steps:
            record = self.step()
            if record is None:
                break
            records.append(record)
        return records

    # ---- state access with range and width checks

    def _memory(self, name: str):
        if name not in self.design.memories:
            raise KeyError(f"{self.design.name} has no memory named {name!r}")
        return self.design.memories[name]

    def read_memory(self, name: str, index: Sequence[int]) -> int:
        memory = self._memory(name)
        return self.memories[name][self._offset(memory, index)]

    def write_memory(self, name: str, index: Sequence[int], value: int) -> None:
        """Set one element; `value` is taken modulo 2**width."""
        memory = self._memory(name)
        self.memories[name][self._offset(memory, index)] = value & semantics.mask(memory.width)

    def load_memory(self, name: str, values: Sequence[int], start: int = 0) -> None:
        """Set consecutive elements (row-major) from flat offset `start`."""
        memory = self._memory(name)
        if start < 0 or start + len(values) > memory.size:
            raise IndexError(f"{len(values)} values from {start} do not fit in {name} "
                             f"({memory.size} elements)")
        word_mask = semantics.mask(memory.width)
        self.memories[name][start:start + len(values)] = [v & word_mask for v in values]

    def set_register(self, name: str, value: int) -> None:
        if name not in self.design.registers:
            raise KeyError(f"{self.design.name} has no register named {name!r}")
        self.registers[name] = value & semantics.mask(self.design.registers[name].width)

    @staticmethod
    def _offset(memory, index: Sequence[int]) -> int:
        index = tuple(index)
        if len(index) != len(memory.shape) or not all(
                0 <= i < n for i, n in zip(index, memory.shape)):
            raise IndexError(f"{memory.name}{list(index)} is outside shape {list(memory.shape)}")
        return _flat_offset(memory.shape, index)
