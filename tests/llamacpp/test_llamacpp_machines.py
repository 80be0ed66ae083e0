"""Real CUDA kernels inside compiled QwenGPU checkpoints, in llama.cpp (slow: llama.cpp is
dense, every token reads every float32 weight).

For each checkpoint — the reduced QwenGPU (one lane, one warp: `compile_helpers.REDUCED`,
0.44 G parameters), the whole machine at `--target min` (4 lanes, 8 warps, 1.5 G) and in the
Qwen3.5-2B shape (2.6 G) — stock transformers writes the launch of `serial_mad` (the judge:
`generate()` greedy), then `run_launches_model(..., engine="llama.cpp", check=True)` runs
the same launch in llama.cpp from the checkpoint's GGUF (exported beside it), the
interpreter in lockstep: llama.cpp's ids must be stock transformers' ids, which must be the
interpreter's trace encoded, and the buffers those of the example's expected.json (its
independent model.py).  The reduced machine also runs `hdlc run --engine llama.cpp --check`
from the command line.  llama.cpp runs on one thread (docs/llamacpp.md, "Threads").
`QWENGPU_REDUCED_MODEL`, `QWENGPU_MIN_MODEL`, `QWENGPU_2B_MODEL` name checkpoints compiled
with the same flags to reuse.

Measured on the 2-core x86_64 machine, shared: the reduced machine's 162 tokens take about
a minute in llama.cpp, the whole machine's (min) about 3 to 8 minutes, the 2B shape's
about 10 to 15.
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import pytest

from compile_helpers import REDUCED_FLAGS
from llamacpp_helpers import skip_without_llamacpp
from qwengpu.cli import main
from qwengpu.errors import UserError

pytestmark = pytest.mark.slow
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KERNEL = "serial_mad"


def compiled(tmp_path_factory, name: str, *flags: str, reuse: str) -> Path:
    """The checkpoint compiled with `flags`, or the one environment variable `reuse` names
    (compiled with the same flags)."""
    skip_without_llamacpp()
    if os.environ.get(reuse):
        return Path(os.environ[reuse])
    directory = tmp_path_factory.mktemp(name) / "checkpoint"
    assert main(["compile", "specs/qwengpu.hdl", *flags, "-o", str(directory)]) == 0
    gc.collect()
    return directory


def held_to_stock_transformers(directory: Path, kernel: str = KERNEL) -> dict:
    """Stock transformers' ids, then llama.cpp's with --check: the same, the trace's."""
    from qwengpu.runtime.launch import load_launch, machine_limits, run_launch_sim
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.model_backend import (generate_greedy, load_checkpoint,
                                               run_launches_model)
    from qwengpu.runtime.prompt import build_prompt

    machine = checkpoint_machine(directory)
    launch = load_launch(EXAMPLES / kernel / "launch.json", machine_limits(machine))
    sim = run_launch_sim(launch, machine=machine)
    model, protocol = load_checkpoint(directory, "cpu", "transformers")
    trace = protocol.encode_records(sim.records)
    stock, = generate_greedy(model, protocol, [build_prompt(launch, protocol, machine)],
                             len(sim.records) + 1)
    del model
    gc.collect()
    assert stock == trace
    outcome, = run_launches_model([launch], directory, check=True, progress=False,
                                  machine=machine, engine="llama.cpp", threads=1)
    assert not isinstance(outcome, UserError), outcome.render()
    assert outcome.engine == "llama.cpp" and outcome.ids == stock
    expected = json.loads((EXAMPLES / kernel / "expected.json").read_text())
    assert outcome.buffers == expected["buffers"] and outcome.trap is None
    return {"tokens": outcome.tokens, "seconds": outcome.seconds}


def test_the_reduced_machine(tmp_path_factory, capsys):
    directory = compiled(tmp_path_factory, "reduced", "--target", "min", *REDUCED_FLAGS,
                         reuse="QWENGPU_REDUCED_MODEL")
    held_to_stock_transformers(directory)
    capsys.readouterr()
    code = main(["run", str(EXAMPLES / KERNEL / "launch.json"), "--backend", "model",
                 "--model", str(directory), "--engine", "llama.cpp", "--check", "--json",
                 "--threads", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["engine"] == "llama.cpp"
    expected = json.loads((EXAMPLES / KERNEL / "expected.json").read_text())
    assert result["buffers"] == expected["buffers"]


def test_the_whole_machine_min(tmp_path_factory):
    held_to_stock_transformers(compiled(tmp_path_factory, "whole", "--target", "min",
                                        reuse="QWENGPU_MIN_MODEL"))


def test_the_whole_machine_in_the_2b_shape(tmp_path_factory):
    held_to_stock_transformers(compiled(tmp_path_factory, "whole-2b",
                                        "--target", "qwen3.5-2b", reuse="QWENGPU_2B_MODEL"))
