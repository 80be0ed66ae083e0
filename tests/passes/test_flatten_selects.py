"""`flatten-selects`: a match (an if-else chain of selects) becomes one `priority` gadget per
digit; the meaning is kept, the depth drops, shared inner arms are left alone."""

from __future__ import annotations

from qwengpu.ir import evaluate
from qwengpu.ir.cost import estimate_cost

from graph_helpers import spec_graph
from pass_helpers import assert_same_meaning, run_checked

LOWER = ("fold-constants", "merge-common", "remove-dead", "lower-digits", "fold-constants",
         "merge-common", "remove-dead")

MATCH = """
register op : u3;
register a : u8;
register b : u8;
stage s {
    emit result = match op { 0 => a + b, 1 => a - b, 2 => a ^ b, 3 => a & b, 5 => b, _ => a };
}
"""


def test_a_match_becomes_one_priority_per_digit():
    graph = spec_graph(MATCH)
    chains, _ = run_checked(graph, *LOWER)
    flat, stats = run_checked(chains, "flatten-selects", "remove-dead")
    assert stats[0].changes > 0
    counts = flat.op_counts()
    assert counts["priority"] == 2 and "select" not in counts   # two hex digits
    assert estimate_cost(flat).depth < estimate_cost(chains).depth
    assert_same_meaning(graph, flat, samples=80)
    for op in range(8):
        state = {"op": op, "a": 200, "b": 100}
        expected = {0: 44, 1: 100, 2: 200 ^ 100, 3: 200 & 100, 5: 100}.get(op, 200)
        assert evaluate(flat, state)["record"]["result"] == expected


def test_an_inner_select_used_elsewhere_stays():
    graph = spec_graph("""
register c : bool;
register d : bool;
register a : u4;
register b : u4;
stage s {
    let inner = d ? a : b;
    emit x = c ? b : inner;
    emit y = inner;
}
""")
    chains, _ = run_checked(graph, *LOWER)
    flat, stats = run_checked(chains, "flatten-selects")
    assert stats[0].changes == 0 and flat.op_counts()["select"] == 2
    assert_same_meaning(graph, flat)


def test_second_run_changes_nothing():
    chains, _ = run_checked(spec_graph(MATCH), *LOWER)
    flat, _ = run_checked(chains, "flatten-selects")
    again, stats = run_checked(flat, "flatten-selects")
    assert stats[0].changes == 0
