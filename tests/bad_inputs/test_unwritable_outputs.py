"""Outputs the tools cannot write: refused with the path and why, exit status 1, never a
traceback; `hdlc compile -o` onto a file is refused before any weight is built; `hdlc graph`
writes only what its output's suffix says (a page or text, not text into a .pdf)."""

from __future__ import annotations

from qwengpu import compiler

COUNTER = "specs/counter.hdl"


def test_graph_outputs(tmp_path, refused):
    assert "hdlc graph writes a page (.html) or text (.txt), not .pdf" in \
        refused(["graph", COUNTER, "-o", tmp_path / "x.pdf"])
    assert "not a file without a suffix" in refused(["graph", COUNTER, "-o", tmp_path])
    assert "cannot write the page" in refused(["graph", COUNTER, "-o",
                                               tmp_path / "no" / "x.html"])


def test_passes_dot_to_a_folder_that_does_not_exist(tmp_path, refused):
    target = tmp_path / "no" / "graph.dot"
    assert f"{target}: cannot write the Graphviz file" in refused(
        ["passes", COUNTER, "--run", "--dot", target])


def test_compile_onto_a_file_is_refused_before_the_weights(tmp_path, refused, monkeypatch):
    def no_step(*_arguments):
        raise AssertionError("a compile step ran before the output was checked")
    for step in compiler.STEPS:
        monkeypatch.setitem(compiler.STEP_FUNCTIONS, step, no_step)
    existing = tmp_path / "model"
    existing.write_text("not a directory")
    err = refused(["compile", COUNTER, "-o", existing])
    assert "exists and is not a directory" in err
    assert "does not exist" in refused(["compile", COUNTER, "-o",
                                        tmp_path / "no" / "model"])
