"""The ISA has one source, the spec: qwengpu/isa/table.py is what `MachineIsa.from_design`
reads from specs/qwengpu.hdl, and this test fails when the two drift apart (run
`python -m qwengpu.isa.generate` after editing the spec)."""

from __future__ import annotations

from qwengpu.isa import DEFAULT_ISA, Cmp, Op, Special, Space, Trap
from qwengpu.isa.generate import TABLE, default_isa_from_spec, table_source


def test_the_table_is_the_spec_s():
    assert TABLE.read_text() == table_source(default_isa_from_spec()), \
        "qwengpu/isa/table.py is out of date: run `python -m qwengpu.isa.generate`"


def test_the_enums_are_the_spec_s():
    isa = default_isa_from_spec()
    assert {op.name: op.value for op in Op} == {n: o.value for n, o in isa.opcodes.items()}
    for enum, name in ((Cmp, "Cmp"), (Space, "Space"), (Special, "Special"), (Trap, "Trap")):
        assert {member.name: member.value for member in enum} == isa.enums[name]


def test_fields_and_classes_come_from_decode():
    fields = {name: (f.low, f.width) for name, f in DEFAULT_ISA.fields.items()}
    assert fields["op"] == (0, 6) and fields["imm"] == (32, 32) and fields["space"] == (27, 2)
    assert set(DEFAULT_ISA.opcodes_in("is_serial")) == \
        set(DEFAULT_ISA.opcodes_in("is_atomic")) | {"ST_U8", "ST_U16"}
    assert "LD" in DEFAULT_ISA.opcodes_in("writes_register")
    assert "ST" not in DEFAULT_ISA.opcodes_in("writes_register")
    assert DEFAULT_ISA.opcodes_in("bad_opcode") == ["INVALID"]
