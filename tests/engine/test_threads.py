"""The engine's threads beside torch's: both run on GNU OpenMP in one process.

Each check runs in a fresh interpreter, since numba starts its threads once a process and
OpenMP reads its settings once, when torch loads it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def run_python(code: str, **environment: str) -> str:
    env = {key: value for key, value in os.environ.items() if key != "GOMP_SPINCOUNT"}
    result = subprocess.run([sys.executable, "-c", code], env={**env, **environment},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_a_threaded_session_leaves_torch_on_its_threads():
    """numba's OpenMP layer sets the calling thread's OpenMP count to all its threads as it
    starts; torch, set to one thread and run once (which fixes its count for the thread),
    must still run on one after the engine has run on two."""
    code = """
import numpy as np, torch
torch.set_num_threads(1)
assert torch.ones(2, 2).matmul(torch.ones(2, 2)).sum() == 8 and torch.get_num_threads() == 1
from qwengpu.engine import dense_kernels
from qwengpu.engine.engine import Workers, dense_into
panels = dense_kernels.pack_panels(np.ones((8, 40), np.float32))
out = np.zeros((40, 3), np.float32)
dense_into(panels, np.ones((8, 3), np.float32), out, Workers(2))
assert (out == 8).all()
print(torch.get_num_threads())
"""
    assert run_python(code) == "1"


@pytest.mark.parametrize("given", [None, "7"])
def test_the_spin_count_is_set_before_torch_loads_openmp(given):
    """`import qwengpu` sets GOMP_SPINCOUNT (1,000 unless the user set one) and loads no torch,
    so the OpenMP that torch loads next reads it."""
    code = "import os, sys, qwengpu; print('torch' in sys.modules, os.environ['GOMP_SPINCOUNT'])"
    environment = {"GOMP_SPINCOUNT": given} if given else {}
    assert run_python(code, **environment) == f"False {given or 1000}"
