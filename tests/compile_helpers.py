"""Shared helpers of the compile tests: compile a spec into a checkpoint directory, load it
with stock transformers, and run greedy generation from a prompt; the tiny register machine's
programs and the reduced QwenGPU's parameters.

The judge is stock transformers (docs/compiler.md, "How a result is judged"): `load` is `AutoModelForCausalLM.from_pretrained`
on the written directory and `generate` is `model.generate(do_sample=False)`.  Project code only
builds the prompt (`state_prompt`) and gives the expected trace from the reference
interpreter (`qwengpu.dsl.Simulator`), encoded with the protocol.

`run_case` also holds the sparse engine (`qwengpu.engine`) to that judge: on the same
directory and prompt it must write exactly the ids stock `generate` wrote, so every compiled
test machine checks the engine too; and so must llama.cpp (`qwengpu.llamacpp`: the
checkpoint's GGUF through the optional xllamacpp wheel) on the first case of each
checkpoint, where it is installed, or always with `QWENGPU_REQUIRE_LLAMACPP=1`
(tests/llamacpp_helpers.py).
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from qwengpu.compiler import compile
from qwengpu.dsl import Simulator
from qwengpu.trace.prompt import simulator_state, state_prompt  # noqa: F401  (tests use both)
from llamacpp_helpers import llamacpp_generate


def compile_to(spec: str, directory, dtype=torch.float32, target: str = "min", params=None,
               encoding: str | None = None):
    """`qwengpu.compiler.compile` into `directory`, every IR verified after its step; the
    encoding follows the dtype unless given (binary in float32, one-hot in bfloat16)."""
    return compile(spec, target, params=params, encoding=encoding, dtype=dtype,
                   output=directory, check=True)


def compile_plan(spec: str, target: str = "min", check: bool = True, **options):
    """The compile up to the schedule (no weights), every IR verified unless `check` is
    False (the whole machine: 35 s verified, 16 s not; `whole_machine_plan` verifies it)."""
    return compile(spec, target, stop_after="schedule", check=check, **options)


@functools.lru_cache(maxsize=1)
def whole_machine_plan():
    """specs/qwengpu.hdl to its schedule at --target min with binary values, every IR
    verified: once a worker for the tests that read it (test_schedule.py, test_graph_page.py,
    both in the heavy group: tests/workers.py).  Read it; do not change it."""
    return compile_plan("specs/qwengpu.hdl", "min", encoding="binary")


def compile_and_load(spec: str, directory, dtype=torch.float32, params=None, encoding=None):
    """(compiled, model): `spec` compiled (--target min) into `directory`, then loaded the way
    the judge loads it (`load`)."""
    compiled = compile_to(spec, directory, dtype, params=params, encoding=encoding)
    return compiled, load(directory)


def load(directory, dtype=None):
    """The checkpoint under stock transformers, on `$QWENGPU_TEST_DEVICE` (default cpu)."""
    kwargs = {"dtype": dtype} if dtype is not None else {}
    model = AutoModelForCausalLM.from_pretrained(str(directory), **kwargs)
    device = os.environ.get("QWENGPU_TEST_DEVICE", "cpu")
    if device.startswith("cuda"):              # fp32 means fp32 (no TF32), as in model_backend
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    model.to(device).eval()
    return model


def expected_trace(compiled, sim: Simulator, max_records: int = 1000) -> list[int]:
    """The interpreter's records as token ids, then eos (or cut at max_records)."""
    records = sim.run(max_records)
    return compiled.protocol.encode_records(records, eos=len(records) < max_records)


@torch.no_grad()
def generate(model, prompt: list[int], max_new_tokens: int) -> list[int]:
    ids = torch.tensor([prompt], device=model.device)
    out = model.generate(ids, max_new_tokens=max_new_tokens, do_sample=False,
                         attention_mask=torch.ones_like(ids))
    return out[0, len(prompt):].tolist()


def texts(compiled, ids) -> str:
    return " ".join(compiled.protocol.describe(i).text for i in ids)


def engine_generate(directory, prompt: list[int], max_new_tokens: int,
                    prefill_chunk: int = 64) -> list[int]:
    """What the sparse engine writes greedily after `prompt` (in prefill chunks of
    `prefill_chunk` tokens, several here, to run the chunk boundaries too)."""
    written, = _engine(directory).generate([prompt], max_new_tokens,
                                           prefill_chunk=prefill_chunk)
    return written


def _engine(directory):
    """The sparse engine of a checkpoint, read once while its files stay the same (a test
    file runs many launches on one compiled machine; each launch starts a new state)."""
    directory = Path(directory).resolve()
    stamp = tuple(sorted((path.name, status.st_mtime_ns, status.st_size)
                         for path in directory.iterdir() if path.is_file()
                         for status in [path.stat()]))
    return _load_engine(str(directory), stamp)


@functools.lru_cache(maxsize=2)
def _load_engine(directory: str, stamp):
    from qwengpu.engine import SparseEngine

    return SparseEngine.load(directory)


@contextlib.contextmanager
def engines_read_once():
    """Inside it, `qwengpu.runtime.model_backend.load_checkpoint_engine` reads a checkpoint's
    sparse engine once and hands the same one to every later `hdlc run`, benchmark or soak
    in the process (each launch starts from a new state; the read itself is tested where
    it is first made, and by the engine's own tests).  One engine is kept at a time."""
    from qwengpu.runtime import model_backend

    read, kept = model_backend.load_checkpoint_engine, {}

    def read_once(path, device):
        key = (str(Path(path).resolve()), device)
        if key not in kept:
            kept.clear()
            kept[key] = read(path, device)
        return kept[key]
    patch = pytest.MonkeyPatch()
    patch.setattr(model_backend, "load_checkpoint_engine", read_once)
    try:
        yield
    finally:
        patch.undo()
        kept.clear()


def run_case(compiled, model, sim: Simulator, prefix: int = 0, max_records: int = 1000):
    """(expected, got) token lists for a launch from the simulator's current state;
    `prefix` tokens of the expected trace are given in the prompt (prefill) first.  The
    sparse engine must write stock generate's ids (`got`) on the same checkpoint."""
    prompt = state_prompt(compiled.protocol, simulator_state(sim))
    expected = expected_trace(compiled, sim, max_records)
    got = generate(model, prompt + expected[:prefix], len(expected) - prefix)
    on_engine = engine_generate(model.name_or_path, prompt + expected[:prefix],
                                len(expected) - prefix)
    assert on_engine == got, "the sparse engine and stock generate wrote different ids"
    on_llamacpp = llamacpp_generate(model.name_or_path, prompt + expected[:prefix],
                                    len(expected) - prefix)
    if on_llamacpp is not None:
        assert on_llamacpp == got, "llama.cpp and stock generate wrote different ids"
    return expected[prefix:], got


# The register machine of tests/backend_torch/specs/tiny_carried.hdl and a few programs for it
# (test_compile_tiny.py, test_compile_2b.py, test_encodings.py).
TINY_SPEC = "tests/backend_torch/specs/tiny_carried.hdl"
HALT, LOADI, ADD, JNZ = range(4)


def ins(op, rd=0, rs=0, imm=0):
    """One instruction word of the tiny machine."""
    return op << 14 | rd << 12 | rs << 10 | imm


PROGRAMS = {
    "countdown": [ins(LOADI, 0, 0, 3), ins(LOADI, 1, 0, 0xFF), ins(ADD, 0, 1),
                  ins(JNZ, 0, 0, 2), ins(LOADI, 2, 0, 7), ins(ADD, 2, 2), ins(HALT)],
    "fibonacci": [ins(LOADI, 0, 0, 1), ins(LOADI, 1, 0, 1), ins(ADD, 0, 1), ins(ADD, 1, 0),
                  ins(ADD, 0, 1), ins(ADD, 1, 0), ins(ADD, 0, 1), ins(HALT)],
    "halt": [ins(HALT)],
}

# The reduced QwenGPU: specs/qwengpu.hdl with one lane and one warp (the one-thread examples
# run on it).
REDUCED = {"LANES": 1, "WARPS": 1, "REGS": 15, "PREDS": 7, "MEM_WORDS": 32, "PROG_WORDS": 64,
           "PARAM_WORDS": 4}


def parameter_flags(params: dict[str, int]) -> list[str]:
    """The command line's `-P NAME=VALUE` flags for machine parameters."""
    return [flag for name, value in params.items() for flag in ("-P", f"{name}={value}")]


REDUCED_FLAGS = parameter_flags(REDUCED)
