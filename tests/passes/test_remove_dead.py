"""`remove-dead`: nodes that reach no write, record field or stop go; everything else stays."""

from __future__ import annotations

from graph_helpers import spec_graph
from pass_helpers import assert_same_meaning, run_checked

SPEC = """
register x : u8;
register y : u8;
register done : bool;
stage s {
    let unused = (x * y) + 3;
    let also_unused = unused ^ x;
    stop when done;
    emit a = x + 1;
    y <= x when x == 4;
}
"""


def test_dead_chain_goes_and_sinks_stay():
    graph = spec_graph(SPEC)
    cleaned, stats = run_checked(graph, "remove-dead")
    counts = cleaned.op_counts()
    assert "mul" not in counts and "xor" not in counts
    assert counts["stop"] == 1 and counts["write"] == 1 and counts["field"] == 1
    assert stats[0].changes == len(graph) - len(cleaned) >= 3
    assert_same_meaning(graph, cleaned)


def test_nothing_dead_is_zero_changes():
    cleaned, _ = run_checked(spec_graph(SPEC), "remove-dead")
    again, stats = run_checked(cleaned, "remove-dead")
    assert stats[0].changes == 0 and len(again) == len(cleaned)


def test_dead_digits_after_lowering_go():
    graph = spec_graph(SPEC)
    lowered, stats = run_checked(graph, "lower-digits", "remove-dead")
    assert stats[1].changes > 0
    assert_same_meaning(graph, lowered)
