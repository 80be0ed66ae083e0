"""The IR's text form and Graphviz picture (qwengpu/ir/text.py): `format_node` of every kind
of node, with and without locations, `format_graph` (a golden of specs/counter.hdl's graph)
and `to_dot`.  The expected lines are written by hand from the form the module docstring
gives: `%4 = add %1, %2 : u32 @file:line`."""

from __future__ import annotations

import re

from qwengpu.dsl.netlist import MemorySpec, RegisterSpec
from qwengpu.errors import Location
from qwengpu.ir import Encoding, Graph, format_graph, format_node, to_dot

from graph_helpers import COUNTER, spec_graph


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


def test_dot_export():
    dot = to_dot(spec_graph(COUNTER))
    assert dot.startswith('digraph "t" {') and "n1 -> n3;" in dot


def _ports_graph() -> Graph:
    return Graph("t", "t.hdl", memories={"m": MemorySpec("m", (4, 2), 8)},
                 registers={"r": RegisterSpec("r", 8, reset=3)})


def test_state_ports_name_their_state_and_digit():
    graph = _ports_graph()
    high = graph.add("register", 4, state="r", low=4)
    low = graph.add("register", 4, state="r")
    read = graph.add("read", 4, (high, low), state="m", low=4, name="s.x",
                     loc=Location("t.hdl", 3, 5))
    graph.add("field", 4, (read,), state="out", lane=1)
    graph.add("field_input", 2, state="out", low=2)
    graph.add("next_lane", 1)
    graph.add("write", 8, (low, high, low, read, read), state="m", groups=(1, 1, 1, 2))
    graph.add("stop", 1, (low,))
    lines = [format_node(graph, i) for i in graph.ids()]
    assert lines == [
        "%0 = register r[bit 4] : u4",
        "%1 = register r : u4",
        "%2 = read m[%0, %1][bit 4] : u4 ; s.x @t.hdl:3:5",
        "%3 = field out = %2 at lane 1",
        "%4 = field_input out[bit 2] : u2",
        "%5 = next_lane : u1",
        "%6 = write m %1, %0, %1, %2, %2 groups 1,1,1,2",
        "%7 = stop %1",
    ]
    without = format_node(graph, read, with_locations=False)
    assert without == "%2 = read m[%0, %1][bit 4] : u4 ; s.x"


def test_digit_operators_show_their_tables_domains_and_encodings():
    graph = _ports_graph()
    digit = graph.add("register", 4, state="r")
    graph.add("lut", 4, (digit,), table=tuple(15 - v for v in range(16)), label="flip")
    graph.add("sum", 2, (digit,), terms=((0, 1, 2, 3) * 4,), base=0, table=(0, 1, 2, 3),
              domain=(1, 2), encoding=Encoding("enum", 2))
    graph.add("mul_column", 7, (digit, digit, digit), low=1, groups=(2, 1),
              encoding=Encoding("analog", 1))
    graph.add("slice", 2, (digit,), low=1)
    big = graph.add("lut", 8, (digit, digit), table=tuple(range(256)))
    lines = [format_node(graph, i) for i in (1, 2, 3, 4)]
    assert lines == [
        "%1 = lut %0 {flip fedcba9876543210} : u4",
        "%2 = sum %0 {0123 base 0 terms 0123012301230123} : u2 {1,2} enum2",
        "%3 = mul_column %0, %0, %0 {column 1} groups 2,1 : u7 analog",
        "%4 = slice %0, 1 : u2",
    ]
    # a table too long to spell out is shown by a digest
    assert re.fullmatch(r"%5 = lut %0, %0 \{#[0-9a-f]{8}\} : u8", format_node(graph, big))


def test_format_graph_declares_state_and_level():
    graph = _ports_graph()
    graph.level = "digit"
    graph.add("const", 1, value=1)
    assert format_graph(graph) == ("graph t (digit level)\nmemory m[4][2] : u8\n"
                                   "register r : u8 = 3\n%0 = const 1 : u1\n")


def test_dot_shapes_and_escaped_labels():
    graph = _ports_graph()
    digit = graph.add("register", 4, state="r", name='say "hi"')
    graph.add("field", 4, (digit,), state="out")
    dot = to_dot(graph)
    assert r'n0 [label="%0 = register r : u4 ; say \"hi\"", shape=cylinder];' in dot
    assert 'n1 [label="%1 = field out = %0", shape=house];' in dot
    assert dot.rstrip().endswith("n0 -> n1;\n}")
