"""The command line (`qwengpu/cli.py`): it lists exactly the command modules there are, each
with NAME, HELP, add_arguments and run; a user's mistake exits 1 with a located message, a
compiler bug 70 with a traceback."""

from __future__ import annotations

from pathlib import Path

from qwengpu import cli
from qwengpu.errors import UserError


def test_every_command_module_and_no_other():
    folder = Path(cli.__file__).parent / "commands"
    modules = {path.stem for path in folder.glob("*.py")} - {"__init__"}
    assert set(cli.COMMAND_MODULES) == modules
    for module in cli._load_commands():
        assert module.NAME and module.HELP and callable(module.add_arguments)
        assert callable(module.run)


def test_exit_statuses(monkeypatch, capsys):
    from qwengpu.commands import check

    def mistake(args):
        raise UserError("bad input")

    def bug(args):
        raise RuntimeError("a bug")
    monkeypatch.setattr(check, "run", mistake)
    assert cli.main(["check", "specs/counter.hdl"]) == 1
    assert "error: bad input" in capsys.readouterr().err
    monkeypatch.setattr(check, "run", bug)
    assert cli.main(["check", "specs/counter.hdl"]) == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error" in err
