"""The elaborated form (qwengpu/dsl/netlist.py) on a design built by hand: its text form
(`format_node`, `format_design`, with and without locations), `verify_design` accepting it and
naming each broken invariant of the module docstring, and the small helpers (`size`,
`state_width`, `record_bits`).  specs/counter.hdl's text is in test_elaborate.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from qwengpu.dsl.netlist import (Design, MemorySpec, Node, RecordField, RegisterSpec, StateWrite,
                                 format_design, format_node, verify_design)
from qwengpu.errors import Location


def hand_design() -> Design:
    """r : u4 (reset 1), m[2][3] : u8; reads m[1][r[1:0]], writes it and r, stops on r[3]."""
    nodes = [
        Node(0, "register", (), 4, state="r"),
        Node(1, "const", (), 1, value=1, stage="s"),
        Node(2, "slice", (0,), 2, low=0, stage="s"),
        Node(3, "read", (1, 2), 8, state="m", stage="s", name="s.x", loc=Location("t.hdl", 3, 5)),
        Node(4, "slice", (0,), 1, low=3, stage="s"),
        Node(5, "zext", (0,), 8, stage="s"),
        Node(6, "add", (0, 0), 4, stage="s"),
    ]
    return Design("t", "t.hdl", params={"N": 2},
                  memories={"m": MemorySpec("m", (2, 3), 8)},
                  registers={"r": RegisterSpec("r", 4, reset=1)}, nodes=nodes,
                  writes=[StateWrite("m", (1, 2), 5, 1, Location("t.hdl", 4, 5)),
                          StateWrite("r", (), 6, 4)],
                  record=[RecordField("x", 3, 8), RecordField("r", 0, 4)], stop=4)


HAND_TEXT = """\
machine t
param N = 2
memory m[2][3] : u8
register r : u4 = 1
stage (none)
  %0 = register r : u4
stage s
  %1 = const 1 : u1
  %2 = slice %0, 0 : u2
  %3 = read m[%1, %2] : u8  ; s.x @t.hdl:3:5
  %4 = slice %0, 3 : u1
  %5 = zext %0 : u8
  %6 = add %0, %0 : u4
write m[%1][%2] <= %5 when %1  @t.hdl:4:5
write r <= %6 when %4
emit x = %3 : u8
emit r = %0 : u4
stop when %4
"""


def test_format_design():
    design = hand_design()
    assert format_design(design) == HAND_TEXT
    assert format_design(design, with_locations=False) == \
        HAND_TEXT.replace(" @t.hdl:3:5", "").replace("  @t.hdl:4:5", "")


def test_format_node():
    node = hand_design().nodes[3]
    assert format_node(node) == "%3 = read m[%1, %2] : u8  ; s.x @t.hdl:3:5"
    assert format_node(node, with_locations=False) == "%3 = read m[%1, %2] : u8  ; s.x"
    assert format_node(Node(9, "const", (), 32, value=7)) == "%9 = const 7 : u32"


def test_sizes_and_widths():
    design = hand_design()
    assert design.memories["m"].size == 6
    assert (design.state_width("m"), design.state_width("r")) == (8, 4)
    assert design.record_bits == 12


def _renumbered(design):
    design.nodes[2] = replace(design.nodes[2], id=7)


def _forward_use(design):
    design.nodes[2] = replace(design.nodes[2], args=(5,))


def _wrong_width(design):
    design.nodes[6] = replace(design.nodes[6], width=5)


def _constant_too_big(design):
    design.nodes[1] = replace(design.nodes[1], value=2)


def _register_width(design):
    design.nodes[0] = replace(design.nodes[0], width=3)


def _wide_enable(design):
    design.writes[1] = replace(design.writes[1], enable=0)


def _missing_index(design):
    design.writes[0] = replace(design.writes[0], index=(1,))


def _duplicate_field(design):
    design.record.append(RecordField("x", 3, 8))


def _wide_stop(design):
    design.stop = 0


@pytest.mark.parametrize("break_it, message", [
    (_renumbered, "node 7 at position 2"),
    (_forward_use, "%2 uses a later node"),
    (_wrong_width, "%6: width 5, rule 4"),
    (_constant_too_big, "value=2"),
    (_register_width, "state='r'"),
    (_wide_enable, "StateWrite(state='r'"),
    (_missing_index, "StateWrite(state='m', index=(1,)"),
    (_duplicate_field, "duplicate record field"),
    (_wide_stop, "stop is not 1 bit"),
], ids=lambda case: case.__name__.strip("_") if callable(case) else "")
def test_verify_design_names_the_broken_invariant(break_it, message):
    design = hand_design()
    verify_design(design)
    break_it(design)
    with pytest.raises(AssertionError) as caught:
        verify_design(design)
    assert message in str(caught.value)
