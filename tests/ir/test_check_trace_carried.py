"""The write-back rule (qwengpu/ir/check_trace_carried.py): every state write must be a
function of record fields, unwritten state and constants.  Small inline specs and a hand-made
digit-level graph, with the problems each must (or must not) have worked out by hand."""

from __future__ import annotations

import pytest

from qwengpu.dsl.netlist import RegisterSpec
from qwengpu.errors import HdlError, Location
from qwengpu.ir import Graph, verify
from qwengpu.ir.check_trace_carried import (check_trace_carried, field_values,
                                            trace_carried_problems, written_state)

from graph_helpers import COUNTER, spec_graph

# Line 1 is `machine t;`, line 2 is empty: `b <= b + a;` is line 10.
NOT_CARRIED = """
register a : u4;
register b : u4;
register k : u4;
memory m[2] : u4;
stage s {
    emit a;
    a <= a + k;
    b <= b + a;
    m[0] <= b;
}
"""


def test_the_counter_is_carried():
    graph = spec_graph(COUNTER)
    assert trace_carried_problems(graph) == []
    check_trace_carried(graph)


def test_fields_and_written_state():
    graph = spec_graph(NOT_CARRIED)
    assert {graph.node(i).state for i in field_values(graph)} == {"a"}
    assert all(graph.node(i).op == "register" for i in field_values(graph))
    assert written_state(graph) == {"a", "b", "m"}


def test_a_write_reading_written_state_that_is_not_emitted():
    graph = spec_graph(NOT_CARRIED)
    problems = trace_carried_problems(graph)
    # `a <= a + k` is fine: a is emitted and k is never written
    assert [(p.state, p.reaches) for p in problems] == [("b", "b"), ("m", "b")]
    assert problems[0].loc == Location("t.hdl", 10, 5)
    assert problems[0].reaches_loc == Location("t.hdl", 10, 10)
    assert str(problems[0]) == (
        "write to 'b' is not carried by the trace: it depends on 'b' (read at t.hdl:10:10), "
        "which the machine writes and the record does not emit (emit the value, or what it "
        "is computed from)")


def test_check_names_every_failing_write():
    with pytest.raises(HdlError) as caught:
        check_trace_carried(spec_graph(NOT_CARRIED))
    lines = caught.value.message.splitlines()
    assert caught.value.loc == Location("t.hdl", 10, 5)
    assert lines[0].startswith("write to 'b' is not carried")
    assert lines[1].startswith("also at t.hdl:11:5: write to 'm' is not carried by the trace: "
                               "it depends on 'b'")
    assert len(lines) == 2


def test_a_digit_level_graph():
    graph = Graph("t", "t.hdl", registers={"r": RegisterSpec("r", 8), "s": RegisterSpec("s", 4)})
    graph.level = "digit"
    low = graph.add("register", 4, state="r")
    high = graph.add("register", 4, state="r", low=4)
    s = graph.add("register", 4, state="s")
    graph.add("field", 8, (low, high), state="f", groups=(2,))
    one = graph.add("const", 1, value=1)
    plus_one = graph.add("lut", 4, (low,), table=tuple((v + 1) % 16 for v in range(16)))
    graph.add("write", 8, (one, plus_one, high), state="r", groups=(1, 2))
    verify(graph)
    assert trace_carried_problems(graph) == []           # r's digits are the field's digits
    graph.add("write", 4, (one, s), state="s")
    assert [(p.state, p.reaches) for p in trace_carried_problems(graph)] == [("s", "s")]
