"""Input files the tools cannot read: a clear error naming the file, exit status 1, never a
traceback (issue #18's list): a spec or an assembly program that is not UTF-8, a launch
file whose JSON nests deeper than Python parses, an empty spec, a machine too large for the
reference interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = ROOT / "examples" / "vector_add" / "launch.json"


@pytest.mark.parametrize("command", ["check", "sim"])
def test_files_that_are_not_text(tmp_path, command, refused):
    binary = tmp_path / "bad.hdl"
    binary.write_bytes(b"\xff\xfe machine")
    program = tmp_path / "bad.s"
    program.write_bytes(b"\x80 nop")
    argv = ["check", binary] if command == "check" else ["sim", ROOT / "specs" / "qwengpu.hdl",
                                                          program]
    err = refused(argv)
    assert "not UTF-8 text" in err and ("bad.hdl" in err or "bad.s" in err), err


def test_a_launch_that_nests_too_deeply(tmp_path, refused):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert f"{deep}: error: the JSON nests too deeply to be a launch" in \
        refused(["run", deep])


def test_an_empty_spec_describes_no_machine(tmp_path, refused):
    empty = tmp_path / "empty.hdl"
    empty.write_text("")
    assert "the spec describes no machine" in refused(["check", empty])


def test_a_machine_too_large_to_simulate(refused):
    err = refused(["run", VECTOR_ADD, "-P", "WARPS=4096"])
    assert "too large for the reference interpreter" in err
