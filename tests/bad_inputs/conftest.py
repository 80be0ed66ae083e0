"""The bad-input tests' one check: a command refuses its input with exit status 1 and a
message on stderr, never a traceback."""

from __future__ import annotations

import pytest

from qwengpu.cli import main


@pytest.fixture
def refused(capsys):
    """refused(argv) runs `hdlc argv`, demands exit status 1 and no traceback, and returns
    stderr."""
    def run(argv) -> str:
        capsys.readouterr()
        code = main([str(arg) for arg in argv])
        err = capsys.readouterr().err
        assert code == 1 and "Traceback" not in err, err
        return err
    return run
