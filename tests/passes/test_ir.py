"""The IR: building from a design, the text form, evaluation, DOT, and `verify`'s rejections."""

from __future__ import annotations

import pytest

from qwengpu.dsl.netlist import RegisterSpec
from qwengpu.errors import Location
from qwengpu.ir import Encoding, Graph, VerifyError, evaluate, format_graph, to_dot, verify

from pass_helpers import memory_graph, operator_graph, spec_graph

COUNTER = """
register count : u8;
register done : bool;
stage count_up {
    stop when done;
    emit count;
    count <= count + 1;
    done <= 1 when count == 10;
}
"""


def test_build_graph_keeps_locations_and_makes_sinks():
    graph = spec_graph(COUNTER)
    verify(graph)
    ops = graph.op_counts()
    assert ops["write"] == 2 and ops["field"] == 1 and ops["stop"] == 1
    assert all(node.loc is not None for _, node in graph.items() if node.op != "const")
    add = next(node for _, node in graph.items() if node.op == "add")
    assert add.loc.file == "t.hdl" and add.loc.line == 8


def test_text_form_golden():
    assert format_graph(spec_graph(COUNTER), with_locations=False) == """\
graph t (word level)
register count : u8 = 0
register done : u1 = 0
%0 = register done : u1
%1 = register count : u8
%2 = const 1 : u8
%3 = add %1, %2 : u8
%4 = const 1 : u1
%5 = const 10 : u8
%6 = eq %1, %5 : u1
%7 = write count %4, %3
%8 = write done %6, %4
%9 = field count = %1
%10 = stop %0
"""


def test_text_form_with_locations():
    text = format_graph(spec_graph(COUNTER))
    assert "%3 = add %1, %2 : u8 @t.hdl:8:20" in text


def test_evaluate_counter():
    graph = spec_graph(COUNTER)
    assert evaluate(graph, {"count": 10, "done": 0}) == {
        "writes": [("count", (), 11), ("done", (), 1)], "record": {"count": 10}, "stop": 0}
    assert evaluate(graph, {"count": 255, "done": 1})["writes"] == [("count", (), 0)]


def test_evaluate_memory_out_of_range_reads_zero_and_drops_writes():
    graph = memory_graph()
    memory = [10, 20, 30, 40, 50, 60]
    assert evaluate(graph, {"m": memory, "i": 1, "j": 5, "r": 7, "w": 1}) == {
        "writes": [("m", (1,), 7)], "record": {"out": 80}, "stop": 0}
    assert evaluate(graph, {"m": memory, "i": 7, "j": 0, "r": 7, "w": 1}) == {
        "writes": [], "record": {"out": 10}, "stop": 0}


def test_dot_export():
    dot = to_dot(spec_graph(COUNTER))
    assert dot.startswith('digraph "t" {') and "n1 -> n3;" in dot


def _two_registers() -> tuple[Graph, int, int]:
    graph = Graph("bad", "bad.hdl", registers={"a": RegisterSpec("a", 8),
                                               "b": RegisterSpec("b", 4)})
    return graph, graph.add("register", 8, state="a"), graph.add("register", 4, state="b")


def test_verify_rejects_a_cycle():
    graph, a, _ = _two_registers()
    x = graph.add("not", 8, (a,))
    y = graph.add("not", 8, (x,))
    graph.update(x, args=(y,))
    with pytest.raises(VerifyError, match=r"combinational cycle: %\d+ -> %\d+ -> %\d+"):
        verify(graph)


def test_verify_rejects_a_width_mismatch_with_location():
    graph, a, b = _two_registers()
    graph.add("add", 8, (a, b), loc=Location("bad.hdl", 3, 9))
    with pytest.raises(VerifyError, match=r"add %0, %1 : u8 @bad.hdl:3:9: add: operand widths "
                                          r"differ \(8, 4\)"):
        verify(graph)


def test_verify_rejects_a_wrong_result_width():
    graph, a, _ = _two_registers()
    graph.add("eq", 8, (a, a))
    with pytest.raises(VerifyError, match=r"width mismatch: u8, but eq of \(8, 8\) gives u1"):
        verify(graph)


def test_verify_rejects_two_drivers_of_a_record_field():
    graph, a, _ = _two_registers()
    graph.add("field", 8, (a,), state="x")
    graph.add("field", 8, (a,), state="x")
    with pytest.raises(VerifyError, match=r"record field 'x' has two drivers: %2 and %3"):
        verify(graph)


def test_verify_rejects_an_edge_that_is_not_an_argument():
    graph, a, b = _two_registers()
    n = graph.add("not", 8, (a,))
    graph._add_raw_edge(b, n)
    with pytest.raises(VerifyError, match=r"%2 is driven by %1, which is not one of its "
                                          r"arguments \(two drivers\)"):
        verify(graph)


def test_verify_rejects_wrong_arity_and_unknown_ops():
    graph, a, _ = _two_registers()
    graph.add("not", 8, (a, a))
    with pytest.raises(VerifyError, match="not takes 1 operands, got 2"):
        verify(graph)
    graph, a, _ = _two_registers()
    graph.add("frobnicate", 8, (a,))
    with pytest.raises(VerifyError, match="unknown operator 'frobnicate'"):
        verify(graph)


def test_verify_rejects_bad_encodings_and_domains():
    graph, a, b = _two_registers()
    graph.update(b, encoding=Encoding("bit", 2))
    with pytest.raises(VerifyError, match="encoding bit on a u4 value"):
        verify(graph)
    graph, a, b = _two_registers()
    graph.update(b, domain=(3, 1))
    with pytest.raises(VerifyError, match="domain is not sorted"):
        verify(graph)


def test_verify_rejects_a_lut_whose_table_escapes_its_domain():
    graph, a, b = _two_registers()
    graph.add("lut", 4, (b,), table=tuple(range(16)), domain=(0, 1))
    with pytest.raises(VerifyError, match=r"can produce \[2, 3"):
        verify(graph)


def test_verify_rejects_a_sink_with_users_and_bad_writes():
    graph, a, b = _two_registers()
    graph.add("write", 8, (a, a), state="a")
    with pytest.raises(VerifyError, match="write enable is not one bit"):
        verify(graph)


def test_operator_graph_helper_is_valid():
    verify(operator_graph("mux", (1, 8, 8)))
