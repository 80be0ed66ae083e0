"""The machine a checkpoint holds: `machine.json` in the checkpoint directory.

    write_machine_file("out/small", "specs/qwengpu.hdl", {"LANES": 1, "WARPS": 1})
    record = read_machine_file("out/small")     # MachineRecord(spec, params, source)
    machine = checkpoint_machine("out/small")   # the Machine launches are laid out for

`hdlc compile` writes the file next to the weights; `hdlc run`, `hdlc launch` and `hdlc decode`
read it, so a checkpoint is run on the machine it was compiled from (the kernel's register and
memory limits, the prompt, the decoding and the `--check` interpreter). It is small JSON:

    {"format": "qwengpu-machine", "version": 1, "spec": "qwengpu.hdl",
     "params": {"LANES": 1, ...}, "source": "<the spec's whole text>"}

`spec` is the spec's file name, `params` the `-P` overrides it was compiled with (the spec's
own defaults are in its text), `source` the spec's text, so the checkpoint needs no spec file.
A directory without the file (a checkpoint written before compiles recorded their machine,
or a hand-made one holding only protocol.json) is taken to hold the default machine,
specs/qwengpu.hdl with its own parameters; the prompt's trace-protocol check refuses it when
that is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from qwengpu.errors import UserError
from qwengpu.runtime.machine_state import Machine, load_machine, machine_from_source

MACHINE_FILE = "machine.json"
FORMAT = "qwengpu-machine"
VERSION = 1


@dataclass(frozen=True)
class MachineRecord:
    """What machine.json says: the spec's file name, its `-P` overrides and its text."""

    spec: str
    params: dict[str, int]
    source: str


def write_machine_file(directory: str | Path, spec: str | Path,
                       params: Mapping[str, int] | None = None) -> Path:
    """Record the spec (name and text) and its overrides in `directory`/machine.json."""
    spec = Path(spec)
    try:
        source = spec.read_text(encoding="utf-8")
    except OSError as error:
        raise UserError(f"{spec}: cannot read the spec: {error.strerror}") from None
    data = {"format": FORMAT, "version": VERSION, "spec": spec.name,
            "params": dict(sorted((params or {}).items())), "source": source}
    path = Path(directory) / MACHINE_FILE
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def read_machine_file(directory: str | Path) -> MachineRecord | None:
    """The record in `directory`/machine.json; None when there is no such file."""
    path = Path(directory) / MACHINE_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: cannot read the checkpoint's machine: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT \
            or data.get("version") != VERSION:
        raise UserError(f"{path}: not a {FORMAT} version {VERSION} file")
    spec, params, source = data.get("spec"), data.get("params"), data.get("source")
    if not isinstance(spec, str) or not isinstance(source, str):
        raise UserError(f"{path}: 'spec' and 'source' must be strings")
    if not isinstance(params, dict) or not all(
            isinstance(value, int) and not isinstance(value, bool) for value in params.values()):
        raise UserError(f"{path}: 'params' must be an object of NAME: integer")
    return MachineRecord(spec, params, source)


def checkpoint_machine(directory: str | Path) -> Machine:
    """The machine a checkpoint was compiled from (the default one without machine.json)."""
    if not Path(directory).is_dir():
        raise UserError(f"{directory}: no such checkpoint directory")
    record = read_machine_file(directory)
    if record is None:
        return load_machine()
    where = f"{Path(directory) / MACHINE_FILE} ({record.spec})"
    return machine_from_source(record.source, where, record.params)
