"""A disk that fills up while a command writes is the user's situation, not a compiler bug:
a clear error and exit 1, for Python's own writes and for safetensors' (which reports the OS
error in its message); other failures stay internal errors (exit 70)."""

from __future__ import annotations

import errno

import pytest

from qwengpu import cli
from qwengpu.commands import check


def failing_with(failure):
    def run(args):
        raise failure
    return run


@pytest.mark.parametrize("failure", [
    OSError(errno.ENOSPC, "No space left on device"),
    RuntimeError("Error while serializing: I/O error: No space left on device (os error 28)"),
])
def test_a_full_disk_is_a_clear_error(monkeypatch, capsys, failure):
    monkeypatch.setattr(check, "run", failing_with(failure))
    assert cli.main(["check", "specs/counter.hdl"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: no space left to write the output") and "Traceback" not in err


def test_other_failures_stay_internal_errors(monkeypatch, capsys):
    monkeypatch.setattr(check, "run", failing_with(OSError(errno.EACCES, "Permission denied")))
    assert cli.main(["check", "specs/counter.hdl"]) == 70
    assert "internal error" in capsys.readouterr().err
