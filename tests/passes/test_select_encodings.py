"""`select-encodings`: bits, hex digits and small enumerations get one-hot encodings of the
right size; wide words (before lowering) get their digits' dims; the totals add up."""

from __future__ import annotations

from qwengpu.ir import Encoding, format_graph
from qwengpu.passes.select_encodings import residual_dims

from graph_helpers import operator_graph, spec_graph
from pass_helpers import assert_same_meaning, run_checked


def test_digit_encodings_after_lowering():
    graph = operator_graph("add", (5, 5))
    encoded, stats = run_checked(graph, "lower-digits", "remove-dead", "select-encodings")
    kinds = {str(n.encoding) for _, n in encoded.items() if n.encoding}
    assert kinds == {"hex", "bit", "enum3"}
    assert all(n.encoding is None for _, n in encoded.items()
               if n.op in ("const", "field", "write", "stop"))
    dims = residual_dims(encoded)
    assert dims["total"] == dims["hex"] + dims["bit"] + dims["enum"]
    assert dims["hex"] == 16 * 3 and dims["bit"] == 2 * 3 and dims["enum"] == 3
    assert stats[2].changes == sum(1 for _, n in encoded.items() if n.encoding)
    assert_same_meaning(graph, encoded)


def test_word_encodings_before_lowering():
    encoded, _ = run_checked(operator_graph("add", (7, 7)), "select-encodings")
    assert {n.encoding for _, n in encoded.items() if n.encoding} == {Encoding("word", 24)}


def test_restricted_domains_get_small_enums():
    graph = spec_graph("register x : u32;\nstage s { emit y = sext(x, 64)[63:32] + 1; }")
    encoded, _ = run_checked(graph, "fold-constants", "lower-digits", "fold-constants",
                             "merge-common", "remove-dead", "select-encodings")
    assert any(str(n.encoding) == "enum2" for _, n in encoded.items())   # sign fill {0, 15}
    assert "enum2" in format_graph(encoded, with_locations=False)


def test_second_run_changes_nothing():
    encoded, _ = run_checked(operator_graph("mul", (8, 8)), "lower-digits", "select-encodings")
    again, stats = run_checked(encoded, "select-encodings")
    assert stats[0].changes == 0
