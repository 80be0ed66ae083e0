"""Outputs the tools cannot write: refused with the path and why, exit status 1, never a
traceback; `hdlc compile -o` onto a file is refused before any weight is built; `hdlc graph`
writes only what its output's suffix says (a page or text, not text into a .pdf)."""

from __future__ import annotations

import time

from qwengpu.cli import main

COUNTER = "specs/counter.hdl"


def refused(capsys, argv) -> str:
    capsys.readouterr()
    code = main([str(arg) for arg in argv])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    return err


def test_graph_outputs(tmp_path, capsys):
    assert "hdlc graph writes a page (.html) or text (.txt), not .pdf" in \
        refused(capsys, ["graph", COUNTER, "-o", tmp_path / "x.pdf"])
    assert "not a file without a suffix" in refused(capsys, ["graph", COUNTER, "-o", tmp_path])
    assert "cannot write the page" in refused(capsys, ["graph", COUNTER, "-o",
                                                       tmp_path / "no" / "x.html"])


def test_passes_dot_to_a_folder_that_does_not_exist(tmp_path, capsys):
    target = tmp_path / "no" / "graph.dot"
    assert f"{target}: cannot write the Graphviz file" in refused(
        capsys, ["passes", COUNTER, "--run", "--dot", target])


def test_compile_onto_a_file_is_refused_before_the_weights(tmp_path, capsys):
    existing = tmp_path / "model"
    existing.write_text("not a directory")
    started = time.perf_counter()
    err = refused(capsys, ["compile", COUNTER, "-o", existing])
    assert "exists and is not a directory" in err
    assert "weights" not in err and time.perf_counter() - started < 5
    assert "does not exist" in refused(capsys, ["compile", COUNTER, "-o",
                                                tmp_path / "no" / "model"])
