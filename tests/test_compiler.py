"""`qwengpu.compiler.compile`: the steps in order, each one's output dumpable and verified,
one default encoding, and `hdlc compile`'s `--dump-after`, `--stop-after`, `--stats`."""

from __future__ import annotations

import pytest
import torch

from qwengpu.cli import main
from qwengpu.commands.compile import STEP_NAMES
from qwengpu.compiler import STEPS, compile, resume
from qwengpu.errors import UserError

COUNTER = "specs/counter.hdl"
# A line each step's dump must hold (specs/counter.hdl).
DUMPS = {"load": "machine counter", "graph": "= field", "passes": "lower-digits",
         "plan": "plan of counter:", "encodings": "tok.bos  onehot 2 dims",
         "schedule": "schedule of counter for target min", "allocate": "residual of",
         "emit": "model.embed_tokens.weight", "write": "model.safetensors"}


def test_the_command_line_names_every_step():
    assert STEP_NAMES == ", ".join(STEPS)
    assert list(DUMPS) == list(STEPS)


def test_every_step_runs_checked_and_dumps(tmp_path):
    dumps = {}
    result = compile(COUNTER, output=tmp_path, dump_after=STEPS, check=True,
                     dump=lambda step, text: dumps.setdefault(step, text))
    assert result.steps_run == list(STEPS) and list(dumps) == list(STEPS)
    for step, line in DUMPS.items():
        assert line in dumps[step], (step, dumps[step][:300])
    assert (tmp_path / "machine.json").is_file() and result.figures["nonzeros"] > 0
    assert set(result.seconds) == set(STEPS) | {"total"}


def test_stop_after_leaves_the_later_steps_out():
    result = compile(COUNTER, stop_after="plan", check=True)
    assert result.steps_run == ["load", "graph", "passes", "plan"]
    assert result.schedule is None and result.model is None
    assert compile(COUNTER).steps_run[-1] == "allocate"       # no output: no weights
    with pytest.raises(UserError, match="stops after plan, before schedule"):
        compile(COUNTER, stop_after="plan", dump_after=["schedule"])
    with pytest.raises(UserError, match="unknown compile step 'layout'"):
        compile(COUNTER, dump_after=["layout"])


def test_a_compile_taken_on_writes_the_same_checkpoint(tmp_path):
    """`resume` runs the steps after the last one run: a compile stopped after the schedule
    and taken on to `write` writes the files one compile writes, byte for byte (a splice
    goes on from its base check's schedule so)."""
    whole = compile(COUNTER, output=tmp_path / "whole")
    stopped = compile(COUNTER, output=tmp_path / "resumed", stop_after="schedule")
    resumed = resume(stopped, "write")
    assert resumed.steps_run == list(STEPS)
    for name in whole.files:
        assert (tmp_path / "resumed" / name).read_bytes() == \
            (tmp_path / "whole" / name).read_bytes(), name
    assert resumed.files == whole.files
    with pytest.raises(UserError, match="unknown compile step 'layout'"):
        resume(compile(COUNTER, stop_after="plan"), "layout")
    with pytest.raises(UserError, match="needs the compile's output directory"):
        resume(compile(COUNTER, stop_after="plan"), "write")
    with pytest.raises(UserError, match="has run graph already"):
        resume(compile(COUNTER, stop_after="plan"), "graph")


def test_one_default_encoding():
    """Binary values where readable in float32, all one-hot in bfloat16, for the API as for
    `hdlc compile` (whose checkpoints tests/test_checkpoint_fingerprints.py pins)."""
    binary = compile(COUNTER, stop_after="encodings").plan.values.values()
    assert any(value.encoding == "binary" for value in binary)
    onehot = compile(COUNTER, stop_after="encodings", dtype=torch.bfloat16).plan.values
    assert all(value.encoding == "onehot" for value in onehot.values())
    with pytest.raises(UserError, match="exact in float32 only"):
        compile(COUNTER, dtype=torch.bfloat16, encoding="binary")


def test_hdlc_compile_dump_stop_and_stats(capsys):
    assert main(["compile", COUNTER, "--stop-after", "plan", "--dump-after", "plan",
                 "--stats", "--check"]) == 0
    out = capsys.readouterr().out
    assert "// after plan" in out and "plan of counter:" in out
    assert "plan  " in out and "schedule" not in out.split("pass ")[0]
    assert "lower-digits" in out                          # the passes' table
    assert main(["compile", COUNTER, "--dump-after", "allocate"]) == 0
    assert "residual of" in capsys.readouterr().out
    assert main(["compile", COUNTER, "--dump-after", "nothing"]) == 1
    assert "unknown compile step 'nothing'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compile", COUNTER])                        # no -o and nothing to show
    assert "give -o DIR" in capsys.readouterr().err
