"""What optional record fields ask of a spec: the field bits a write's enable requires, and the
check that no write reads a field its record may leave out.

A compiled model commits a record's writes from the fields it reads back from the record
scratch (docs/compiler.md, "Execution model").  A field the record leaves out is not written
there, so the scratch still holds the bytes an earlier record gave it; the interpreter reads 0.
Both agree exactly when every write reads an optional field only where the field is present:

- in a write's index and data, when the enable requires the field's condition: the enable is
  an AND with `F[bit]` (or with `F`, a 1-bit field, or `F != 0`) and the field is present
  `when F` (bit `bit` of F, or any bit of it);
- in the enable itself, when the use sits under an AND whose other side requires the
  condition (`mwen[j] & (maddr[j] == a)`: when lane j stores nothing, the AND is 0 whatever
  `maddr[j]` holds).

`check_optional_reads(design)` refuses any other use, at the write's HDL line, naming the
field; `required_field_bits` also says which port tokens a record needs
(`qwengpu.trace.write_ports.port_conditions`).
"""

from __future__ import annotations

from qwengpu.dsl.netlist import Design, RecordField
from qwengpu.errors import HdlError

Bit = tuple[str, "int | None"]   # (always-present field, bit); bit None: the field is not 0


def required_field_bits(design: Design, node_id: int) -> set[Bit]:
    """Bits of always-present fields that must be 1 for 1-bit node `node_id` to be 1
    (`(F, None)`: F must not be 0)."""
    return _required(design, node_id, _carriers(design, lambda f: f.when is None))


def _required(design: Design, node_id: int, always: dict[int, RecordField]) -> set[Bit]:
    node = design.nodes[node_id]
    if node.width != 1:
        return set()
    if node.op == "slice" and node.args[0] in always:
        return {(always[node.args[0]].name, node.low)}
    if node_id in always:
        return {(always[node_id].name, 0)}
    if node.op == "ne" and len(node.args) == 2:
        zero = [a for a in node.args if design.nodes[a].op == "const" and not design.nodes[a].value]
        other = [a for a in node.args if a not in zero]
        if zero and len(other) == 1 and other[0] in always:
            return {(always[other[0]].name, None)}
    if node.op == "and":
        return {bit for arg in node.args for bit in _required(design, arg, always)}
    return set()


def check_optional_reads(design: Design) -> None:
    """`HdlError` at a write that may read an optional field its record leaves out."""
    if all(f.when is None for f in design.record):
        return
    carriers = _carriers(design, lambda f: True)
    always = _carriers(design, lambda f: f.when is None)
    memo: dict[tuple[int, frozenset], set[str]] = {}

    def unguarded(node_id: int, assumed: frozenset) -> set[str]:
        """Optional fields read in the cone of `node_id` whose condition `assumed` (bits
        known to be 1 there) does not give."""
        key = (node_id, assumed)
        if key in memo:
            return memo[key]
        field = carriers.get(node_id)
        if field is not None:               # the commit reads the field here, not its cone
            result = set() if _given(field, assumed) else {field.name}
        else:
            node = design.nodes[node_id]
            result = set()
            for position, arg in enumerate(node.args):
                guards = assumed
                if node.op == "and" and node.width == 1:
                    guards = assumed | frozenset(
                        bit for other, a in enumerate(node.args) if other != position
                        for bit in _required(design, a, always))
                result |= unguarded(arg, guards)
        memo[key] = result
        return result

    by_name = {f.name: f for f in design.record}
    for write in design.writes:
        enabled = frozenset(_required(design, write.enable, always))
        reads = unguarded(write.enable, frozenset())
        for node_id in (write.data, *write.index):
            reads |= unguarded(node_id, enabled)
        if reads:
            name = sorted(reads)[0]
            field = by_name[name]
            raise HdlError(f"this write to {write.state} reads record field {name}, which a "
                           f"record leaves out unless {field.condition_text()}, and its enable "
                           f"does not require that: a compiled model would read the bytes an "
                           f"earlier record left (guard the write or the use with "
                           f"`{field.when}`, or emit {name} always)", write.loc)


def _given(field: RecordField, assumed: frozenset) -> bool:
    """Whether bits `assumed` to be 1 make optional `field` present."""
    if field.when is None:
        return True
    if field.when_bit is not None:
        return (field.when, field.when_bit) in assumed
    return any(name == field.when for name, _ in assumed)


def _carriers(design: Design, which) -> dict[int, RecordField]:
    """Node -> the record field that carries it (the first in record order, as
    `cut-at-fields` takes it), among the fields `which` accepts."""
    carriers: dict[int, RecordField] = {}
    for field in design.record:
        carriers.setdefault(field.node, field)
    return {node: field for node, field in carriers.items() if which(field)}
