"""`verify` (qwengpu/ir/verify.py): well-formed graphs pass, and each broken invariant is a
`VerifyError` that names the node breaking it in the IR's text form.  (The file is not called
test_verify.py: tests/backend_torch/test_verify.py holds that name, and pytest imports test
files by their base name.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from qwengpu.dsl.elaborate import load_design
from qwengpu.dsl.netlist import MemorySpec, RegisterSpec
from qwengpu.errors import Location
from qwengpu.ir import Encoding, Graph, VerifyError, build_graph, verify

from graph_helpers import COUNTER, register_graph, spec_graph

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _two_registers() -> tuple[Graph, int, int]:
    graph, (a, b) = register_graph(a=8, b=4)
    return graph, a, b


@pytest.mark.parametrize("spec", ["counter.hdl", "tiny.hdl"])
def test_verify_accepts_the_graph_of_a_spec(spec):
    verify(build_graph(load_design(SPECS / spec)))


def test_verify_accepts_a_mux_over_registers():
    graph, (select, x, y) = register_graph(s=1, x=8, y=8)
    graph.add("field", 8, (graph.add("mux", 8, (select, x, y)),), state="out")
    verify(graph)
    verify(spec_graph(COUNTER))


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


# ---- more broken graphs: each builder breaks one invariant of a graph over a : u8, b : u4

def _sink_with_a_user(graph, a, b):
    field = graph.add("field", 8, (a,), state="x")
    graph.add("not", 8, (field,))


def _wide_value_in_a_digit_graph(graph, a, b):
    graph.level = "digit"


def _constant_too_wide(graph, a, b):
    graph.add("const", 4, value=16)


def _register_of_unknown_state(graph, a, b):
    graph.add("register", 4, state="nope")


def _register_digit_outside_its_register(graph, a, b):
    graph.add("register", 4, state="b", low=2)


def _two_stops(graph, a, b):
    bit = graph.add("slice", 1, (b,), low=0)
    graph.add("stop", 1, (bit,))
    graph.add("stop", 1, (bit,))


def _write_to_unknown_state(graph, a, b):
    graph.add("write", 8, (graph.add("const", 1, value=1), a), state="c")


def _unbound_next_lane(graph, a, b):
    lane = graph.add("next_lane", 1)
    graph.add("field", 1, (lane,), state="x")


def _lane_on_a_write(graph, a, b):
    graph.add("write", 8, (graph.add("const", 1, value=1), a), state="a", lane=0)


def _field_input_of_unknown_field(graph, a, b):
    graph.add("field_input", 4, state="y")


def _analog_read_by_a_not(graph, a, b):
    column = graph.add("mul_column", 6, (b, b), groups=(1, 1))     # up to 15 + 14 + 12 + 8
    graph.add("not", 6, (column,))


def _selector_beyond_the_arms(graph, a, b):
    selector = graph.add("slice", 2, (b,), low=0)
    graph.add("select", 8, (selector, a, a))


@pytest.mark.parametrize("broken, message", [
    (_sink_with_a_user, "%2 = field x = %0: a sink has users"),
    (_wide_value_in_a_digit_graph, "%0 = register a : u8: u8 value left in a digit-level graph"),
    (_constant_too_wide, "%2 = const 16 : u4: constant 16 does not fit u4"),
    (_register_of_unknown_state, "%2 = register nope : u4: register of unknown state 'nope'"),
    (_register_digit_outside_its_register,
     "%2 = register b[bit 2] : u4: bits 2..5 outside u4 b"),
    (_two_stops, "stop has two drivers: %3, %4"),
    (_write_to_unknown_state, "%3 = write c %2, %0: write to unknown state 'c'"),
    (_unbound_next_lane, "%3 = field x = %2: depends on next_lane but names no lane"),
    (_lane_on_a_write, "%3 = write a %2, %0: lane 0 on a write"),
    (_field_input_of_unknown_field,
     "%2 = field_input y : u4: field input of unknown record field 'y'"),
    (_analog_read_by_a_not, "%3 = not %2 : u6: reads the analog value %2"),
    (_selector_beyond_the_arms, "%3 = select %2, %0, %0 : u8: selector can be 3, but there "
                                "are 2 arms"),
], ids=lambda case: case.__name__.strip("_") if callable(case) else "")
def test_verify_names_the_node_that_breaks_an_invariant(broken, message):
    graph, a, b = _two_registers()
    broken(graph, a, b)
    with pytest.raises(VerifyError) as caught:
        verify(graph)
    assert str(caught.value).startswith(message)


def test_verify_checks_the_index_count_of_a_read():
    graph = Graph("t", "t.hdl", memories={"m": MemorySpec("m", (2, 3), 8)},
                  registers={"i": RegisterSpec("i", 2)})
    index = graph.add("register", 2, state="i")
    graph.add("read", 8, (index,), state="m")
    with pytest.raises(VerifyError, match=r"%1 = read m\[%0\] : u8: read of m needs 2 "
                                          r"indices, got \(1,\)"):
        verify(graph)
