"""`fold-constants`: each identity fires (shape), keeps the meaning (seeded random states),
and leaves a graph that verifies; sympy's boolean minimisation; digit-level folding."""

from __future__ import annotations

import pytest

from qwengpu.ir import Graph, evaluate, verify
from qwengpu.ir.digit_build import DigitBuilder
from qwengpu.ir.digits import GENERATE, PROPAGATE
from qwengpu.passes.fold_constants import WORD_RULES
from qwengpu.dsl.netlist import RegisterSpec

from graph_helpers import spec_graph
from pass_helpers import assert_same_meaning, run_checked

HEADER = """
register x : u8;
register y : u8;
register p : bool;
register q : bool;
register r : bool;
"""
SOURCES = {"const", "register", "read", "field", "write", "stop"}


def _computing_ops(graph) -> list[str]:
    return sorted(n.op for _, n in graph.items() if n.op not in SOURCES)


# (expression, the operators left after fold-constants and remove-dead)
CASES = [
    ("x + 0", []), ("0 + x", []), ("x - 0", []), ("x - x", []), ("0 - x", ["neg"]),
    ("x * 0", []), ("x * 1", []), ("x * 8", ["shl"]),
    ("x & 0", []), ("x & 255", []), ("x & x", []),
    ("x | 0", []), ("x | 255", []), ("x | x", []),
    ("x ^ 0", []), ("x ^ x", []), ("x ^ 255", ["not"]), ("~~x", []), ("-(-x)", []),
    ("x << 0", []), ("x >> 9", []), ("u8(0) >> y", []), ("x >>> 0", []),
    ("zext(x == x, 8)", []), ("zext(x < x, 8)", []), ("zext(x <= 255, 8)", []),
    ("zext(p == 1, 8)", ["zext"]), ("zext(p == 0, 8)", ["not", "zext"]),
    ("zext(p != 0, 8)", ["zext"]),
    ("p ? x : x", []), ("zext(p ? u1(1) : u1(0), 8)", ["zext"]), ("!p ? x : y", ["mux"]),
    ("x[7:0]", []), ("{x, y}[11:8]", ["slice"]), ("{x, y}[7:0]", []),
    ("zext(x, 16)[7:0]", []), ("zext(zext(x, 12)[11:4], 8)", ["slice", "zext"]),
    ("x[6:1][3:2]", ["slice"]), ("zext(zext(x[3:0], 6), 8)", ["slice", "zext"]),
    ("zext((p & q) | (p & !q), 8)", ["zext"]),
    ("zext((p | q) & !(p | q), 8)", []),
    ("zext((p & q) | (p & r) | (p & !q & !r), 8)", ["zext"]),
]


@pytest.mark.parametrize("expression,left", CASES)
def test_identity(expression, left):
    graph = spec_graph(HEADER + f"stage s {{ emit result = {expression}; }}")
    folded, stats = run_checked(graph, "fold-constants", "remove-dead")
    assert _computing_ops(folded) == sorted(left)
    assert stats[0].changes >= 1 or _computing_ops(graph) == sorted(left)
    assert_same_meaning(graph, folded)


def test_every_rule_is_written_as_a_rewrite():
    assert all("->" in rule.rewrite for rule in WORD_RULES)
    assert len({rule.rewrite for rule in WORD_RULES}) == len(WORD_RULES)


def test_nothing_to_fold_is_zero_changes():
    graph = spec_graph(HEADER + "stage s { emit result = x + y; }")
    folded, stats = run_checked(graph, "fold-constants")
    assert stats[0].changes == 0 and _computing_ops(folded) == ["add"]


def test_folding_reaches_a_fixed_point():
    graph = spec_graph(HEADER + "stage s { emit result = ((x ^ 0) & 255) + (y - y); }")
    folded, _ = run_checked(graph, "fold-constants", "remove-dead")
    assert _computing_ops(folded) == []
    again, stats = run_checked(folded, "fold-constants")
    assert stats[0].changes == 0


def test_sympy_rebuilds_a_smaller_cone():
    graph = spec_graph(HEADER + "stage s { emit result = (p & q) | (p & r); }")
    folded, _ = run_checked(graph, "fold-constants", "remove-dead")
    assert _computing_ops(folded) == ["and", "or"]      # p & (q | r)
    assert_same_meaning(graph, folded)


def _digit_graph() -> tuple[Graph, DigitBuilder, int, int]:
    graph = Graph("d", "d.hdl", registers={"a": RegisterSpec("a", 4), "b": RegisterSpec("b", 4)})
    graph.level = "digit"
    a = graph.add("register", 4, state="a")
    b = graph.add("register", 4, state="b")
    return graph, DigitBuilder(graph), a, b


def test_digits_lut_with_a_constant_input_becomes_a_one_input_sum():
    graph, build, a, b = _digit_graph()
    three = build.const(3, 4)
    lut = graph.add("lut", 4, (a, b), table=tuple((x ^ y) for y in range(16) for x in range(16)))
    graph.update(lut, args=(a, three))
    graph.add("field", 4, (lut,), state="out")
    folded, stats = run_checked(graph, "fold-constants", "remove-dead")
    assert folded.op_counts()["sum"] == 1 and "lut" not in folded.op_counts()
    for value in range(16):
        assert evaluate(folded, {"a": value})["record"]["out"] == value ^ 3


def test_digits_chains_of_one_input_functions_compose():
    graph, build, a, b = _digit_graph()
    not_a = graph.add("sum", 4, (a,), terms=(tuple(15 - v for v in range(16)),), base=0,
                      table=tuple(range(16)))
    xor = graph.add("lut", 4, (not_a, b),
                    table=tuple((x ^ y) for y in range(16) for x in range(16)))
    graph.add("field", 4, (xor,), state="out")
    folded, _ = run_checked(graph, "fold-constants", "remove-dead")
    assert folded.op_counts()["lut"] == 1 and "sum" not in folded.op_counts()
    assert_same_meaning(graph, folded, samples=60)


def test_digits_carry_with_known_classes_and_select_with_known_selector():
    graph, build, a, b = _digit_graph()
    gp_a = graph.add("sum", 2, (a,), terms=(tuple(min(v, 2) for v in range(16)),), base=0,
                     table=(0, 1, 2), domain=(0, 1, 2))
    propagate, generate = build.const(PROPAGATE, 2), build.const(GENERATE, 2)
    zero = build.const(0, 1)
    carry = graph.add("carry", 1, (zero, generate, gp_a, propagate))
    choose = graph.add("select", 4, (build.const(1, 1), a, b))
    graph.add("field", 1, (carry,), state="carry")
    graph.add("field", 4, (choose,), state="choose")
    folded, _ = run_checked(graph, "fold-constants", "remove-dead")
    counts = folded.op_counts()
    assert "carry" not in counts and "select" not in counts   # both became simpler nodes
    assert_same_meaning(graph, folded, samples=60)


def test_digits_domains_narrow_to_what_inputs_produce():
    graph, build, a, b = _digit_graph()
    small = graph.add("sum", 4, (a,), terms=(tuple(v & 3 for v in range(16)),), base=0,
                      table=(0, 1, 2, 3), domain=(0, 1, 2, 3))
    pair = graph.add("lut", 4, (small, b), table=tuple((x + y) & 15 for y in range(16)
                                                       for x in range(16)))
    graph.add("field", 4, (pair,), state="out")
    verify(graph)
    folded, stats = run_checked(graph, "fold-constants")
    lut = next(n for _, n in folded.items() if n.op == "lut")
    assert sum(1 for v in lut.table if v) <= 4 * 16    # unreachable entries are zeroed
    assert_same_meaning(graph, folded, samples=60)


def test_digits_or_chains_merge_into_one_sum():
    graph = spec_graph(HEADER + "register s : bool;\n"
                       "stage t { emit result = p | q | r | s; emit both = p & q & !r; }")
    lowered, _ = run_checked(graph, "lower-digits", "fold-constants", "remove-dead")
    assert lowered.op_counts()["sum"] == 2                  # one vote per output
    assert_same_meaning(graph, lowered, samples=40)


def test_digits_priority_with_a_condition_that_always_holds():
    graph, build, a, b = _digit_graph()
    always = graph.add("priority", 4, (a, b, a, b), terms=(tuple(int(v == 3) for v in range(16)),),
                       domain=None)
    graph.update(always, args=(build.const(3, 4), b, a))
    graph.add("field", 4, (always,), state="out")
    folded, _ = run_checked(graph, "fold-constants", "remove-dead")
    assert "priority" not in folded.op_counts()
    assert evaluate(folded, {"a": 1, "b": 9})["record"]["out"] == 9
