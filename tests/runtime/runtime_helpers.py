"""Shared pieces of the runtime tests: the example launches and their interpreter runs.

Expectations come from outside the code under test: examples/**/expected.json (independent
per-thread models of the kernels), the launch files themselves, and docs/isa.md's record table.
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path

from qwengpu.trace.protocol import TraceProtocol
from qwengpu.runtime.launch import load_launch, run_launch_sim
from qwengpu.runtime.machine_state import load_machine

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES_DIR = ROOT / "examples"
if str(EXAMPLES_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLES_DIR))

import make_expected  # noqa: E402  (examples/make_expected.py)

ALL_EXAMPLES = make_expected.example_dirs(EXAMPLES_DIR)
# Examples the loader accepts on the default machine (too_big is refused before any prompt
# exists, float_hypot needs more instruction slots).
RUNNABLE = [example for example in ALL_EXAMPLES
            if "error" not in json.loads((example / "expected.json").read_text())
            and make_expected.default_machine_error(example) is None]
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


def expected_of(example: Path) -> dict:
    return json.loads((example / "expected.json").read_text())
