"""`NetlistBuilder` (qwengpu/dsl/builder.py): node ids in creation order, the stage and
location on every node, one node per constant value and width, one per register, operators
over constants folded (values worked out by hand), and wire names given once."""

from __future__ import annotations

from qwengpu.dsl.builder import NetlistBuilder
from qwengpu.dsl.netlist import Design, MemorySpec, RecordField, RegisterSpec, verify_design
from qwengpu.dsl.values import Signal
from qwengpu.errors import Location

HERE = Location("t.hdl", 2, 3)


def builder() -> NetlistBuilder:
    design = Design("t", "t.hdl", memories={"m": MemorySpec("m", (4,), 8)},
                    registers={"r": RegisterSpec("r", 8)})
    return NetlistBuilder(design)


def test_constants_are_shared_per_value_and_width():
    build = builder()
    assert build.constant(5, 8) == build.constant(5, 8) == Signal(0, 8)
    assert build.constant(5, 4) == Signal(1, 4)
    assert build.constant_value(Signal(1, 4)) == 5
    assert len(build.design.nodes) == 2


def test_one_node_per_register_and_a_node_per_read():
    build = builder()
    register = build.register(build.design.registers["r"], HERE)
    assert build.register(build.design.registers["r"], None) == register
    index = build.operator("slice", [register], HERE, width=2, low=0)
    first = build.read(build.design.memories["m"], [index], HERE)
    second = build.read(build.design.memories["m"], [index], HERE)
    assert first != second and first.width == 8
    assert build.design.nodes[first.node].state == "m"
    assert build.design.nodes[first.node].args == (index.node,)
    assert build.constant_value(register) is None


def test_nodes_get_ids_in_order_with_stage_and_location():
    build = builder()
    build.stage = "fetch"
    register = build.register(build.design.registers["r"], HERE)
    build.stage = "execute"
    total = build.operator("add", [register, build.constant(3, 8)], HERE)
    equal = build.operator("eq", [total, register], None)
    nodes = build.design.nodes
    assert [node.id for node in nodes] == list(range(len(nodes)))
    assert [(node.op, node.stage) for node in nodes] == [
        ("register", "fetch"), ("const", "execute"), ("add", "execute"), ("eq", "execute")]
    assert nodes[total.node].loc == HERE and nodes[total.node].args == (0, 1)
    assert equal.width == 1 and nodes[equal.node].loc is None
    build.design.record.append(RecordField("e", equal.node, 1))
    verify_design(build.design)


def test_operators_over_constants_fold():
    build = builder()
    total = build.operator("add", [build.constant(200, 8), build.constant(100, 8)], HERE)
    assert build.constant_value(total) == (200 + 100) % 256
    low = build.operator("slice", [build.constant(0b1011_0110, 8)], HERE, width=3, low=2)
    assert build.constant_value(low) == 0b101 and low.width == 3
    wide = build.operator("sext", [build.constant(0b1001, 4)], HERE, width=8)
    assert build.constant_value(wide) == 0b1111_1001
    assert {node.op for node in build.design.nodes} == {"const"}


def test_a_wire_is_named_once_and_constants_and_registers_never():
    build = builder()
    register = build.register(build.design.registers["r"], HERE)
    negated = build.operator("neg", [register], HERE)
    build.name(negated, "s.y")
    build.name(negated, "s.z")
    build.name(register, "s.r")
    constant = build.constant(1, 8)
    build.name(constant, "s.one")
    assert [node.name for node in build.design.nodes] == [None, "s.y", None]
