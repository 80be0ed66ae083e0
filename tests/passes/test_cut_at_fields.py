"""`cut-at-fields`: write cones take the record's fields as `field_input` sources."""

from __future__ import annotations

import pytest
from graph_helpers import spec_graph
from pass_helpers import assert_same_meaning, run_checked

from qwengpu.ir import VerifyError, verify
from qwengpu.passes import DEFAULT_PIPELINE
from qwengpu.ir.check_trace_carried import trace_carried_problems

# The write takes `nx` (emitted) and a bit of it; the step logic that computes `nx` is shared
# with a field and must stay out of the write's cone.
SPEC = """
register x : u8;
register y : u8;
stage s {
    let nx = x + y;
    emit n = nx;
    emit hi = nx[7:4];
    x <= nx + 1 when nx[0];
}
"""


def test_cut_gives_the_write_field_inputs():
    graph = spec_graph(SPEC)
    cut, stats = run_checked(graph, "cut-at-fields")
    assert stats[0].changes == 1
    counts = cut.op_counts()
    assert counts["field_input"] == 1 and counts["add"] == graph.op_counts()["add"] + 1
    write = next(n for _, n in cut.items() if n.op == "write")
    cone = cut.ancestors_of(write.args)
    assert {cut.node(i).op for i in cone} >= {"field_input"}
    assert not any(cut.node(i).op == "register" for i in cone)
    assert_same_meaning(graph, cut)


def test_cut_survives_the_pipeline_and_is_carried():
    graph = spec_graph(SPEC)
    lowered, _ = run_checked(graph, *DEFAULT_PIPELINE)
    assert lowered.op_counts()["field_input"] == 2          # two hex digits of n
    assert trace_carried_problems(lowered) == []
    assert_same_meaning(graph, lowered)


def test_uncut_write_of_uncarried_state_still_fails():
    graph = spec_graph("""
register x : u8;
register y : u8;
stage s {
    emit n = x;
    y <= y + 1;
}
""")
    cut, _ = run_checked(graph, "cut-at-fields")
    assert [p.reaches for p in trace_carried_problems(cut)] == ["y"]


def test_verify_rejects_a_field_input_of_no_field():
    graph = spec_graph(SPEC)
    cut, _ = run_checked(graph, "cut-at-fields")
    node_id = next(i for i, n in cut.items() if n.op == "field_input")
    cut.update(node_id, state="nope")
    with pytest.raises(VerifyError, match="unknown record field 'nope'"):
        verify(cut)
