"""`hdlc passes`: the listing, `--run` with `--stats`/`--dump-after`/`--passes`, and errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwengpu.cli import main

ROOT = Path(__file__).resolve().parents[2]
COUNTER = str(ROOT / "specs" / "counter.hdl")


def test_lists_passes_with_summaries(capsys):
    assert main(["passes"]) == 0
    out = capsys.readouterr().out
    assert "merge-common      merge nodes that compute the same value" in out
    assert "default pipeline: cut-at-fields,fold-lanes,fold-constants,merge-common" in out


def test_run_with_stats(capsys):
    assert main(["passes", COUNTER, "--run", "--stats"]) == 0
    out = capsys.readouterr().out
    assert "lower-digits" in out and "residual dims:" in out and "MLP units" in out


def test_run_with_dump_after_and_chosen_passes(capsys):
    assert main(["passes", COUNTER, "--run", "--passes", "fold-constants,lower-digits",
                 "--dump-after", "lower-digits", "--no-locations"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("// after lower-digits\ngraph counter (digit level)")
    assert "@" not in out


def test_spec_without_run_prints_the_built_graph(capsys, tmp_path):
    dot = tmp_path / "g.dot"
    assert main(["passes", COUNTER, "--dot", str(dot)]) == 0
    assert "= add %1, %2 : u8 @" in capsys.readouterr().out
    assert dot.read_text().startswith("digraph")


def test_unknown_pass_is_a_user_error(capsys):
    assert main(["passes", COUNTER, "--run", "--passes", "fold"]) == 1
    assert "unknown pass 'fold'" in capsys.readouterr().err


def test_dump_after_a_pass_not_run_is_a_usage_error():
    with pytest.raises(SystemExit) as exit_info:
        main(["passes", COUNTER, "--run", "--passes", "remove-dead", "--dump-after",
              "merge-common"])
    assert exit_info.value.code == 2


def test_bad_spec_is_a_located_user_error(capsys, tmp_path):
    spec = tmp_path / "bad.hdl"
    spec.write_text("machine bad;\nregister x : u8;\nstage s { emit y = x + ; }\n")
    assert main(["passes", str(spec), "--run"]) == 1
    assert "bad.hdl:3" in capsys.readouterr().err
