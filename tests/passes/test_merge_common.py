"""`merge-common`: equal nodes merge (commutative operands in any order, reads too, cascading),
sinks never do; the meaning is kept and the graph verifies."""

from __future__ import annotations

from qwengpu.ir import format_graph

from graph_helpers import memory_graph, spec_graph
from pass_helpers import assert_same_meaning, run_checked

SPEC = """
register x : u8;
register y : u8;
stage s {
    emit a = (x + y) ^ (y + x);
    emit b = (x + y) & x;
    emit c = (y + x) & x;
}
"""


def test_commutative_duplicates_merge_and_cascade():
    graph = spec_graph(SPEC)
    merged, stats = run_checked(graph, "merge-common")
    counts = merged.op_counts()
    assert counts["add"] == 1 and counts["and"] == 1 and counts["xor"] == 1
    assert stats[0].changes == graph.op_counts()["add"] - 1 + graph.op_counts()["and"] - 1
    assert counts["field"] == 3
    assert_same_meaning(graph, merged)


def test_golden_after_merging():
    merged, _ = run_checked(spec_graph(SPEC), "merge-common")
    assert format_graph(merged, with_locations=False) == """\
graph t (word level)
register x : u8 = 0
register y : u8 = 0
%0 = register x : u8
%1 = register y : u8
%2 = add %0, %1 : u8
%4 = xor %2, %2 : u8
%6 = and %2, %0 : u8
%9 = field a = %4
%10 = field b = %6
%11 = field c = %6
"""


def test_non_commutative_operands_keep_their_order():
    graph = spec_graph("register x : u8;\nregister y : u8;\n"
                       "stage s { emit a = x - y; emit b = y - x; }")
    merged, stats = run_checked(graph, "merge-common")
    assert stats[0].changes == 0 and merged.op_counts()["sub"] == 2


def test_reads_of_the_same_element_merge():
    graph = memory_graph()
    graph.add("field", 8, (graph.add("read", 8, (0,), state="m"),), state="again")
    merged, stats = run_checked(graph, "merge-common")
    assert stats[0].changes == 1 and merged.op_counts()["read"] == 2
    assert_same_meaning(graph, merged)


def test_digit_graphs_merge_too():
    graph = spec_graph(SPEC)
    lowered, stats = run_checked(graph, "lower-digits", "merge-common", "remove-dead")
    assert stats[1].changes > 0
    assert_same_meaning(graph, lowered)
