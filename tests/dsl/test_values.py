"""What names stand for during elaboration (qwengpu/dsl/values.py): `ArrayValue`'s shape and
row-major leaves, `WireArray` collecting elements one `let x[i]` at a time (and the errors
its docstring promises), and `Scope`'s lookup through parents with no shadowing."""

from __future__ import annotations

import pytest

from qwengpu.dsl.values import ArrayValue, Const, Scope, Signal, WireArray
from qwengpu.errors import HdlError, Location


def at(line: int) -> Location:
    return Location("t.hdl", line, 1)


def test_array_value_shape_and_leaves():
    grid = ArrayValue([[Signal(0, 8), Signal(1, 8), Signal(2, 8)],
                       [Signal(3, 8), Signal(4, 8), Signal(5, 8)]])
    assert grid.shape == (2, 3)
    assert [s.node for s in grid.leaves()] == [0, 1, 2, 3, 4, 5]
    assert ArrayValue([Const(7)]).shape == (1,) and ArrayValue([]).shape == (0,)
    assert ArrayValue([Const(7), Const(8)]).leaves() == [Const(7), Const(8)]


def test_wire_array_builds_its_array_from_elements_in_any_order():
    wires = WireArray("x", at(1))
    for node, index in enumerate([(1, 0), (0, 1), (0, 0), (1, 1)]):
        wires.define(index, Signal(node, 4), at(2))
    assert wires.shape() == (2, 2) and wires.width == 4
    value = wires.as_value(at(5))
    assert [[s.node for s in row] for row in value.items] == [[2, 1], [0, 3]]


@pytest.mark.parametrize("index, signal, message", [
    ((0,), Signal(9, 4), r"x\[0\] is already defined"),
    ((1,), Signal(9, 8), r"width mismatch: x\[1\] is u8 but earlier elements are u4"),
    ((1, 0), Signal(9, 4), "x has 1 dimensions, not 2"),
])
def test_wire_array_refuses_a_bad_element(index, signal, message):
    wires = WireArray("x", at(1))
    wires.define((0,), Signal(0, 4), at(2))
    with pytest.raises(HdlError, match=message) as caught:
        wires.define(index, signal, at(3))
    assert caught.value.loc == at(3)


def test_wire_array_with_a_hole_names_the_missing_element():
    wires = WireArray("x", at(1))
    wires.define((0,), Signal(0, 4), at(2))
    wires.define((2,), Signal(1, 4), at(3))
    with pytest.raises(HdlError, match=r"x\[1\] is never defined \(the array has elements up "
                                       r"to x\[2\]\)") as caught:
        wires.shape()
    assert caught.value.loc == at(1)


def test_a_wire_array_used_as_a_whole_takes_no_more_elements():
    wires = WireArray("x", at(1))
    wires.define((0,), Signal(0, 4), at(2))
    wires.as_value(at(4))
    with pytest.raises(HdlError, match=r"x\[1\] is defined after x was used as a whole "
                                       r"\(at t.hdl:4:1\)"):
        wires.define((1,), Signal(1, 4), at(5))


def test_scope_looks_names_up_through_its_parents():
    outer = Scope(None, "global")
    outer.define("n", Const(4), at(1))
    inner = Scope(Scope(outer, "stage"), "loop")
    inner.define("i", Const(0), at(3))
    assert inner.lookup("n") == Const(4) and inner.where("n") == at(1)
    assert inner.lookup("i") == Const(0) and outer.lookup("i") is None
    assert inner.lookup("missing") is None and inner.where("missing") is None
    assert inner.nearest("stage").kind == "stage" and inner.nearest("loop") is inner
    assert inner.nearest("global") is outer


def test_scope_never_lets_a_name_shadow_another():
    outer = Scope(None, "global")
    outer.define("n", Const(4), at(1))
    inner = Scope(outer, "stage")
    with pytest.raises(HdlError, match=r"n is already defined \(at t.hdl:1:1\)"):
        inner.define("n", Const(5), at(2))
    inner.define("m", Const(5), at(2))
    # defining into the outer scope from the inner one: m is visible there already
    with pytest.raises(HdlError, match=r"m is already defined \(at t.hdl:2:1\)"):
        outer.define("m", Const(6), at(3), seen_from=inner)
    outer.define("k", Const(6), at(3), seen_from=inner)
    assert inner.lookup("k") == Const(6)
