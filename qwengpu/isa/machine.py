"""The instruction set of a machine, read from its elaborated spec.

The spec is the ISA's one source (docs/hdl.md, "The instruction set"): `MachineIsa.from_design`
reads

- the **opcodes** from `enum Op`, each with the assembly form its string gives
  (`qwengpu.isa.syntax`);
- the **instruction fields** from stage decode: every value that is a slice of the fetched
  `instruction` word (`out op : Op = instruction[5:0]`), named by `FIELD_NAMES`;
- the **opcode classes** from stage decode too: every one-bit value that depends on the
  opcode alone (`writes_register`, `is_store`, ...), evaluated for each opcode with the
  netlist's own semantics;
- the other enums (`Cmp`, `Space`, `Special`, `Trap`) with their members' strings.

`qwengpu/isa/table.py` is this reading of specs/qwengpu.hdl written out as Python (by
`python -m qwengpu.isa.generate`), so that the default machine's opcodes are known without
parsing the spec; tests/isa/test_isa_table.py fails when the two drift apart.  Any other spec
(a copy with a new instruction, say) gets its own `MachineIsa` from its design.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu.dsl import semantics
from qwengpu.dsl.netlist import Design
from qwengpu.errors import HdlError
from qwengpu.isa.syntax import Syntax, SyntaxError_, parse_syntax

# The instruction fields, by the names the ISA uses, and the names of the decode values that
# hold them in the spec.  The bits come from the spec.
FIELD_NAMES = {"op": "op", "d": "d", "a": "a_index", "b": "b_index", "c": "c_index",
               "bimm": "b_is_immediate", "pg": "guard_index", "pn": "guard_negated",
               "space": "space", "imm": "imm"}
REQUIRED_FIELDS = ("op", "imm")
REQUIRED_ENUMS = ("Op",)


@dataclass(frozen=True)
class InstructionField:
    """Bits `low .. low + width - 1` of the instruction word."""

    name: str
    low: int
    width: int


@dataclass(frozen=True)
class Opcode:
    name: str
    value: int
    syntax: Syntax
    classes: frozenset[str]


@dataclass
class MachineIsa:
    """What the assembler, the listings and the loader need to know of a machine's ISA."""

    spec: str
    opcodes: dict[str, Opcode]
    fields: dict[str, InstructionField]
    enums: dict[str, dict[str, int]]
    enum_texts: dict[str, dict[str, str]]
    class_names: tuple[str, ...]
    by_value: dict[int, Opcode] = field(init=False)

    def __post_init__(self):
        self.by_value = {opcode.value: opcode for opcode in self.opcodes.values()}

    @classmethod
    def from_design(cls, design: Design) -> "MachineIsa":
        missing = [name for name in REQUIRED_ENUMS if name not in design.enums]
        if missing:
            raise HdlError(f"{design.file}: the spec has no enum {missing[0]} (the opcodes)")
        fields = _instruction_fields(design)
        classes = _opcode_classes(design, fields["op"])
        opcodes = {}
        texts = design.enum_texts.get("Op", {})
        for name, value in design.enums["Op"].items():
            loc = design.enum_locs.get("Op", {}).get(name)
            if name not in texts:
                raise HdlError(f"Op.{name} has no assembly form: write it after the value, "
                               f"e.g. {name} = {value} \"{name.lower()} rd, ra, B\"", loc)
            try:
                syntax = parse_syntax(texts[name])
            except SyntaxError_ as error:
                raise HdlError(f"Op.{name}: {error}", loc) from None
            _check_syntax(name, syntax, fields, design, loc)
            opcodes[name] = Opcode(name, value, syntax,
                                   frozenset(c for c, values in classes.items() if values[value]))
        return cls(design.file, opcodes, fields, dict(design.enums),
                   {name: dict(texts) for name, texts in design.enum_texts.items()},
                   tuple(sorted(classes)))

    @classmethod
    def from_table(cls, table) -> "MachineIsa":
        """The ISA written out by `qwengpu.isa.generate` (a module or an object with its
        names)."""
        opcodes = {name: Opcode(name, value, parse_syntax(text), frozenset(classes))
                   for name, value, text, classes in table.OPCODES}
        fields = {name: InstructionField(name, low, width) for name, low, width in table.FIELDS}
        return cls("specs/qwengpu.hdl", opcodes, fields,
                   {name: dict(members) for name, members in table.ENUMS.items()},
                   {name: dict(texts) for name, texts in table.ENUM_TEXTS.items()},
                   tuple(table.CLASSES))

    def opcodes_in(self, class_name: str) -> list[str]:
        return [name for name, opcode in self.opcodes.items() if class_name in opcode.classes]


def _instruction_fields(design: Design) -> dict[str, InstructionField]:
    words = [node for node in design.nodes if node.name == "fetch.instruction"]
    if not words:
        raise HdlError(f"{design.file}: stage fetch has no `instruction` (the fetched word "
                       "whose slices are the instruction fields)")
    word = words[0].id
    by_hdl_name = {hdl: isa for isa, hdl in FIELD_NAMES.items()}
    fields = {}
    for node in design.nodes:
        if node.op != "slice" or node.args != (word,) or node.stage != "decode" \
                or not node.name:
            continue
        hdl_name = node.name.removeprefix("decode.")
        if hdl_name not in by_hdl_name:
            raise HdlError(f"decode names an instruction field '{hdl_name}' the ISA does not "
                           f"know (known: {', '.join(FIELD_NAMES.values())})", node.loc)
        name = by_hdl_name[hdl_name]
        fields[name] = InstructionField(name, node.low, node.width)
    for name in REQUIRED_FIELDS:
        if name not in fields:
            raise HdlError(f"{design.file}: decode does not take the field "
                           f"'{FIELD_NAMES[name]}' from the instruction")
    return dict(sorted(fields.items(), key=lambda item: item[1].low))


def _opcode_classes(design: Design, op_field: InstructionField) -> dict[str, list[bool]]:
    """Each one-bit decode value that depends on the opcode alone, evaluated for every
    opcode value."""
    nodes = design.nodes
    word = next(node.id for node in nodes if node.name == "fetch.instruction")
    classes = {}
    for node in nodes:
        if node.stage != "decode" or not node.name or node.width != 1 or node.op == "slice":
            continue
        name = node.name.removeprefix("decode.")
        if "[" in name or not _depends_on_word_only(nodes, node.id, word):
            continue
        values = []
        for opcode in range(1 << op_field.width):
            values.append(bool(_evaluate(nodes, node.id, {word: opcode << op_field.low}, {})))
        if _only_the_opcode(nodes, node.id, word, op_field):
            classes[name] = values
    return classes


def _depends_on_word_only(nodes, root: int, word: int) -> bool:
    stack, seen = [root], set()
    while stack:
        current = stack.pop()
        if current in seen or current == word:
            continue
        seen.add(current)
        node = nodes[current]
        if node.op in ("read", "register"):
            return False
        stack.extend(node.args)
    return True


def _only_the_opcode(nodes, root: int, word: int, op_field: InstructionField) -> bool:
    """The value reads no bit of the word outside the opcode field."""
    stack, seen = [root], set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        node = nodes[current]
        if node.op == "slice" and node.args == (word,):
            if node.low < op_field.low or node.low + node.width > op_field.low + op_field.width:
                return False
            continue
        stack.extend(node.args)
    return True


def _evaluate(nodes, node_id: int, known: dict[int, int], memo: dict[int, int]) -> int:
    if node_id in known:
        return known[node_id]
    if node_id in memo:
        return memo[node_id]
    node = nodes[node_id]
    if node.op == "const":
        value = node.value
    else:
        operands = [_evaluate(nodes, arg, known, memo) for arg in node.args]
        value = semantics.evaluate(node.op, operands, [nodes[a].width for a in node.args],
                                   node.width, node.low)
    memo[node_id] = value
    return value


def _check_syntax(name: str, syntax: Syntax, fields, design: Design, loc) -> None:
    for used in sorted(syntax.fields):
        if used not in fields:
            raise HdlError(f"Op.{name}'s assembly form uses field '{used}', which decode "
                           "does not take from the instruction", loc)
    enums = [enum for _field, enum in syntax.placeholders]
    enums += [operand.enum for operand in syntax.operands if operand.kind == "enum"]
    for enum in enums:
        if enum not in design.enums:
            raise HdlError(f"Op.{name}'s assembly form names enum {enum}, which the spec "
                           "does not declare", loc)
