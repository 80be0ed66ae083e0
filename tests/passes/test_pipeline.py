"""`run_passes` and the default pipeline (`passes/pipeline.py`): stats, dumps, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwengpu.ir import format_graph
from qwengpu.passes import DEFAULT_PIPELINE, format_stats, run_passes

from graph_helpers import spec_graph
from pass_helpers import assert_same_meaning

ROOT = Path(__file__).resolve().parents[2]
SPEC = "register x : u8;\nregister y : u8;\nstage s { emit a = (x + 0) * y; emit b = y * x; }"


def test_default_pipeline_stats_and_meaning():
    graph = spec_graph(SPEC)
    lowered = graph.copy()
    stats = run_passes(lowered, DEFAULT_PIPELINE, check=True)
    assert [s.name for s in stats] == DEFAULT_PIPELINE
    assert all(a.nodes_after == b.nodes_before for a, b in zip(stats, stats[1:]))
    assert stats[0].name == "cut-at-fields" and stats[0].changes == 0    # no write here
    assert stats[1].name == "fold-lanes" and stats[1].changes == 0       # no lanes here
    assert stats[2].changes == 1 and stats[3].changes == 1        # x + 0; y * x == x * y
    assert lowered.level == "digit"
    assert_same_meaning(graph, lowered)
    table = format_stats(stats)
    assert table.splitlines()[0].split()[:2] == ["pass", "changes"]
    assert "lower-digits" in table


def test_dump_after_hands_the_text_form_over():
    dumps = []
    run_passes(spec_graph(SPEC), ["fold-constants", "merge-common"], dump_after="merge-common",
               dump=lambda name, text: dumps.append((name, text)))
    assert len(dumps) == 1 and dumps[0][0] == "merge-common"
    assert dumps[0][1].count(" = mul ") == 1


def test_unknown_pass_is_refused_before_anything_runs():
    graph = spec_graph(SPEC)
    before = len(graph)
    with pytest.raises(KeyError, match="unknown pass 'fold'"):
        run_passes(graph, ["merge-common", "fold"])
    assert len(graph) == before


def test_the_same_spec_gives_the_same_text():
    source = SPEC.replace("emit b = y * x;", "emit b = y * x; emit c = x < y ? x >> y : x - y;")
    texts = []
    for _ in range(2):
        graph = spec_graph(source)
        run_passes(graph, DEFAULT_PIPELINE)
        texts.append(format_graph(graph))
    assert texts[0] == texts[1]
