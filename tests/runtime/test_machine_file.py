"""A checkpoint's machine (`runtime/machine_file.py`): machine.json written by the compile and
read back (spec name, text and -P parameters), byte-identical for the same inputs; the default
machine without it; located refusals, never a traceback, for a broken one."""

from __future__ import annotations

import pytest

from runtime_helpers import ROOT, VECTOR_ADD
from qwengpu.cli import main
from qwengpu.runtime.machine_file import (checkpoint_machine, read_machine_file,
                                          write_machine_file)
from qwengpu.runtime.machine_state import load_machine

SPEC = ROOT / "specs" / "qwengpu.hdl"
ONE_LANE = {"LANES": 1, "WARPS": 1, "REGS": 15, "PREDS": 7, "MEM_WORDS": 32,
            "PROG_WORDS": 64, "PARAM_WORDS": 4}


def run_cli(capsys, argv):
    capsys.readouterr()
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_round_trip_without_the_spec_file(tmp_path):
    copy = tmp_path / "qwengpu.hdl"
    copy.write_text(SPEC.read_text())
    write_machine_file(tmp_path, copy, ONE_LANE)
    copy.unlink()
    record = read_machine_file(tmp_path)
    assert (record.spec, record.params, record.source) == ("qwengpu.hdl", ONE_LANE,
                                                           SPEC.read_text())
    assert checkpoint_machine(tmp_path).shape == load_machine(SPEC, ONE_LANE).shape


def test_machine_file_is_deterministic(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        write_machine_file(tmp_path / name, SPEC, dict(reversed(ONE_LANE.items())))
    assert (tmp_path / "a" / "machine.json").read_bytes() == \
        (tmp_path / "b" / "machine.json").read_bytes()


def test_without_machine_json_the_default_machine(tmp_path):
    assert read_machine_file(tmp_path) is None
    assert checkpoint_machine(tmp_path).shape == load_machine().shape


@pytest.mark.parametrize("text, message", [
    ("{", "cannot read the checkpoint's machine"),
    ('{"format": "other", "version": 1}', "not a qwengpu-machine version 1 file"),
    ('{"format": "qwengpu-machine", "version": 1, "spec": "x.hdl", "params": {}}',
     "'spec' and 'source' must be strings"),
    ('{"format": "qwengpu-machine", "version": 1, "spec": "x.hdl", "source": "",'
     ' "params": {"LANES": true}}', "'params' must be an object of NAME: integer"),
])
def test_broken_machine_json(tmp_path, capsys, text, message):
    (tmp_path / "machine.json").write_text(text)
    code, _, err = run_cli(capsys, ["run", VECTOR_ADD, "--model", tmp_path])
    assert code == 1 and message in err and "Traceback" not in err, err
