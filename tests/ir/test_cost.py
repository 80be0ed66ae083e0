"""`estimate_cost` and `format_cost` (qwengpu/ir/cost.py) on graphs small enough to count by
hand: MLP units per digit operator (luts with the same inputs counted once), gadgets, and the
depth of the longest chain of digit operators."""

from __future__ import annotations

from qwengpu.ir import verify
from qwengpu.ir.cost import CostEstimate, estimate_cost, format_cost

from graph_helpers import COUNTER, register_graph, spec_graph


def tiny_digit_graph():
    """a, b : u2, c : u1; two luts over (a, b), a sum reading one, a carry of c and b."""
    graph, (a, b, c) = register_graph(a=2, b=2, c=1)
    mixed = graph.add("lut", 2, (a, b), table=tuple((i & 3) ^ (i >> 2) for i in range(16)))
    other = graph.add("lut", 2, (a, b), table=tuple((i & 3) & (i >> 2) for i in range(16)))
    parity = graph.add("sum", 1, (mixed,), terms=((0, 1, 2, 3),), table=(0, 1, 0, 1))
    carry = graph.add("carry", 1, (c, b))
    for name, node, width in (("p", parity, 1), ("q", other, 2), ("k", carry, 1)):
        graph.add("field", width, (node,), state=name)
    verify(graph)
    return graph


def test_estimate_of_a_tiny_digit_graph():
    # lut: 4 x 4 input values = 16 units, shared by both luts; sum: the table changes at each
    # of the totals 0..3 = 4 units; carry: one unit per input = 2; lut -> sum is 2 deep
    assert estimate_cost(tiny_digit_graph()) == CostEstimate(
        {"carry": 2, "lut": 16, "sum": 4}, units=22, depth=2, gadgets=4)


def test_format_cost():
    assert format_cost(estimate_cost(tiny_digit_graph())) == \
        "gadgets 4, MLP units 22 (carry 2, lut 16, sum 4), depth 2\n"


def test_a_word_level_graph_has_no_gadgets():
    assert estimate_cost(spec_graph(COUNTER)) == CostEstimate({"lut": 0}, 0, 0, 0)
