"""Outputs the tools cannot write: refused with the path and why, exit status 1, never a
traceback; `hdlc compile -o` onto a file is refused before any weight is built; `hdlc graph`
writes only what its output's suffix says (a page or text, not text into a .pdf).  Missing
folders above an output are created (docs/launch.md, "Outputs"); only a path below a file or
an unwritable folder is refused."""

from __future__ import annotations

import pytest

from qwengpu import compiler

COUNTER = "specs/counter.hdl"


def test_graph_outputs(tmp_path, refused):
    assert "hdlc graph writes a page (.html) or text (.txt), not .pdf" in \
        refused(["graph", COUNTER, "-o", tmp_path / "x.pdf"])
    assert "not a file without a suffix" in refused(["graph", COUNTER, "-o", tmp_path])
    (tmp_path / "file").write_text("")
    assert "cannot write the page: " in refused(["graph", COUNTER, "-o",
                                                 tmp_path / "file" / "x.html"])


def test_outputs_make_missing_folders(tmp_path):
    from qwengpu.cli import main
    page = tmp_path / "new" / "deeper" / "x.html"
    dot = tmp_path / "other" / "graph.dot"
    assert main(["graph", COUNTER, "-o", str(page)]) == 0 and page.read_text()
    assert main(["passes", COUNTER, "--run", "--dot", str(dot)]) == 0 and dot.read_text()


def test_an_unwritable_folder_is_refused(tmp_path, refused):
    import os
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):
        pytest.skip("running as a user who can write any folder")
    assert "is not writable" in refused(["graph", COUNTER, "-o", locked / "sub" / "x.html"])


def test_passes_dot_below_a_file(tmp_path, refused):
    (tmp_path / "file").write_text("")
    target = tmp_path / "file" / "graph.dot"
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
    assert "is a file, not a folder" in refused(["compile", COUNTER, "-o",
                                                 existing / "model"])


def test_compile_makes_missing_folders(tmp_path):
    from qwengpu.cli import main
    target = tmp_path / "out" / "deeper" / "counter"
    assert main(["compile", COUNTER, "-o", str(target)]) == 0
    assert (target / "config.json").is_file()
