"""Shared pieces of the runtime tests: the example launches and their interpreter runs.

Expectations come from outside the code under test: examples/**/expected.json (independent
per-thread models of the kernels), the launch files themselves, and docs/isa.md's record table.
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path

from qwengpu.backend_torch.protocol import TraceProtocol
from qwengpu.runtime.launch import load_launch, run_launch_sim
from qwengpu.runtime.machine_state import load_machine

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES_DIR = ROOT / "examples"
if str(EXAMPLES_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLES_DIR))

import make_expected  # noqa: E402  (examples/make_expected.py)

ALL_EXAMPLES = make_expected.example_dirs(EXAMPLES_DIR)
# Examples the loader accepts (too_big is refused before any prompt exists).
RUNNABLE = [example for example in ALL_EXAMPLES
            if "error" not in json.loads((example / "expected.json").read_text())]
IDS = [str(example.relative_to(EXAMPLES_DIR)) for example in RUNNABLE]
VECTOR_ADD = EXAMPLES_DIR / "vector_add" / "launch.json"


def default_protocol() -> TraceProtocol:
    return TraceProtocol.from_design(load_machine().design)


@lru_cache(maxsize=None)
def launch_of(example: Path):
    return load_launch(str(example / "launch.json"))


@lru_cache(maxsize=None)
def sim_result(example: Path):
    return run_launch_sim(launch_of(example))


def bench_script(name: str):
    """bench/NAME.py as a module (the bench scripts are not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expected_of(example: Path) -> dict:
    return json.loads((example / "expected.json").read_text())


def save_random_qwen(directory, protocol: TraceProtocol) -> None:
    """A tiny Qwen3.5 with random weights and `protocol`'s vocabulary, saved in `directory`
    (the model backend's plumbing is tested on it; it is not a QwenGPU)."""
    import torch
    from transformers import Qwen3_5ForCausalLM

    from qwengpu.backend_torch.model import FULL, LINEAR, make_config

    config = make_config(2, 32, 64, [LINEAR, FULL], protocol.vocab_size,
                         linear_num_key_heads=1, linear_num_value_heads=1,
                         linear_key_head_dim=16, linear_value_head_dim=16,
                         num_attention_heads=1, num_key_value_heads=1, head_dim=16,
                         eos_token_id=protocol.eos_id)
    torch.manual_seed(0)
    Qwen3_5ForCausalLM(config).save_pretrained(directory)
