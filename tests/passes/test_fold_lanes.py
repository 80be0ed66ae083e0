"""`fold-lanes`: per-lane record fields computed by one cone, read at each field's lane."""

from __future__ import annotations

import pytest
from graph_helpers import spec_graph
from pass_helpers import assert_same_meaning, run_checked

from qwengpu.ir import VerifyError, evaluate, format_graph, verify
from qwengpu.passes import DEFAULT_PIPELINE
from qwengpu.ir.check_trace_carried import trace_carried_problems

# Three lanes, one ALU each (the lane number is one of its constants); `big[lane]` also
# feeds `mask`, a value every lane shares, so it must keep its per-lane copies.
SPEC = """
memory acc[3][4] : u8;
register t : u4;
stage s {
    let i = t[1:0];
    for lane in 0..3 {
        let a = acc[lane][i];
        let big[lane] = a >= 0x80;
        let v[lane] = match t[3:2] {
            0 => a + 3 + lane,
            1 => a ^ 0x5a,
            2 => big[lane] ? a : a - acc[lane][i + 1],
            _ => (a << 1) | zext(t, 8),
        };
    }
    let mask = pack(big);
    emit t, mask, v;
    for lane in 0..3 {
        acc[lane][i] <= v[lane] when !mask[lane];
    }
    t <= t + 1;
}
"""


def folded(spec: str = SPEC):
    graph = spec_graph(spec)
    out, stats = run_checked(graph, "cut-at-fields", "fold-lanes")
    return graph, out, stats[1].changes


def fields(graph):
    return {n.state: n for _, n in graph.items() if n.op == "field"}


def test_lane_fields_share_one_cone():
    graph, out, changes = folded()
    assert changes == 3
    v = [fields(out)[f"v{k}"] for k in range(3)]
    assert [f.lane for f in v] == [0, 1, 2] and len({f.args for f in v}) == 1
    assert fields(out)["mask"].lane is None
    lanes = [n for _, n in out.items() if n.op == "next_lane"]
    assert len(lanes) == 1 and lanes[0].domain == (0, 1, 2)
    step = out.ancestors_of(v[0].args)
    counts = {op: sum(out.node(i).op == op for i in step) for op in ("sub", "shl", "ule")}
    assert counts == {"sub": 1, "shl": 1, "ule": 3}       # the comparisons stay per lane
    assert_same_meaning(graph, out)


def test_folded_graph_survives_the_pipeline():
    graph = spec_graph(SPEC)
    lowered, stats = run_checked(graph, *DEFAULT_PIPELINE)
    assert stats[1].name == "fold-lanes" and stats[1].changes == 3
    assert trace_carried_problems(lowered) == []
    assert_same_meaning(graph, lowered)


def test_text_form_names_the_lane():
    _, out, _ = folded()
    text = format_graph(out, with_locations=False)
    assert "next_lane : u2 {0,1,2}" in text
    root = fields(out)["v2"].args[0]
    assert f"field v2 = %{root} at lane 2" in text


def test_the_lane_tests_are_named():
    _, out, _ = folded()
    tests = sorted(n.name for _, n in out.items()
                   if n.op == "eq" and any(out.node(a).op == "next_lane" for a in n.args))
    assert tests == ["next_lane == 1", "next_lane == 2"]


def test_a_field_reads_the_cone_at_its_lane():
    _, out, _ = folded()
    state = {"t": 0b0001, "acc": [[10, 20, 30, 40], [50, 60, 70, 80], [90, 100, 110, 120]]}
    record = evaluate(out, state)["record"]
    assert [record[f"v{k}"] for k in range(3)] == [20 + 3, 60 + 4, 100 + 5]


def test_cones_of_different_shapes_are_left_alone():
    _, _, changes = folded("""
memory acc[2][4] : u8;
register t : u4;
stage s {
    let v0 = acc[0][t[1:0]] + 3;
    let v1 = acc[1][t[1:0]] ^ 0x5a;
    emit t, v0, v1;
}
""")
    assert changes == 0


def test_a_field_shared_with_a_write_stays_per_lane():
    graph, out, changes = folded("""
register x : u8;
register y : u8;
stage s {
    let a = (x + 1) ^ (x << 1);
    let b = (y + 1) ^ (y << 1);
    emit a, b;
    x <= a;
}
""")
    # without the cut, `a` would also feed the write; after it, both cones are the field's
    assert changes == 2
    assert_same_meaning(graph, out)


def test_a_fold_that_saves_nothing_is_not_made():
    # one mux per lane: folding would trade 2 muxes for a 3-way select of `x[lane]`
    _, out, changes = folded("""
memory x[3] : u8;
register t : u1;
stage s {
    for lane in 0..3 {
        let v[lane] = t ? x[lane] : 0;
    }
    emit v;
}
""")
    assert changes == 0 and "next_lane" not in out.op_counts()


def test_verify_rejects_a_lane_value_without_a_lane():
    _, out, _ = folded()
    v0 = next(i for i, n in out.items() if n.op == "field" and n.state == "v0")
    out.update(v0, lane=None)
    with pytest.raises(VerifyError, match="depends on next_lane but names no lane"):
        verify(out)


def test_verify_rejects_a_lane_next_lane_cannot_hold():
    _, out, _ = folded()
    v0 = next(i for i, n in out.items() if n.op == "field" and n.state == "v0")
    out.update(v0, lane=3)
    with pytest.raises(VerifyError, match="lane 3 on a field"):
        verify(out)


def test_a_folded_node_is_named_for_the_lane_it_serves():
    """`v[lane]` of lanes 0..2 become one node: `s.v[next_lane]`, made in `lane=next_lane`."""
    _, out, _ = folded()
    root = out.node(fields(out)["v0"].args[0])
    assert root.name == "s.v[next_lane]"
    loops = {n.loop for _, n in out.items() if n.name is None and n.loop is not None
             and n.op not in ("const", "register", "read")}
    assert "lane=next_lane" in loops
