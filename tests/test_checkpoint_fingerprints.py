"""The compiler's output is pinned: small machines compiled with `hdlc compile` give files
whose SHA-256 digests are the ones committed in tests/golden/checkpoint_fingerprints.json.

A refactor of the compiler must not move a single byte of a checkpoint (a change that means
to must say so by updating the file: `QWENGPU_UPDATE_GOLDEN=1 python3 -m pytest
tests/test_checkpoint_fingerprints.py` rewrites it).  The whole machine is pinned the same
way by tests/engine/test_whole_machine.py, against the fingerprint
bench/results/corpus-min-engine.jsonl records.  Compiles are deterministic across machines (the min build's fingerprint was the
same on the CPUs and the GPU machine the corpus ran on)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from compile_helpers import REDUCED_FLAGS
from qwengpu.cli import main

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "checkpoint_fingerprints.json"
BUILDS = {
    "counter": ["specs/counter.hdl"],
    "counter-bf16": ["specs/counter.hdl", "--dtype", "bfloat16"],
    "tiny_carried": ["tests/backend_torch/specs/tiny_carried.hdl"],
    "tiny_carried-256": ["tests/backend_torch/specs/tiny_carried.hdl", "-P", "PROG_WORDS=256"],
    "qwengpu-reduced": ["specs/qwengpu.hdl", *REDUCED_FLAGS],    # tests/conftest.py's build
}


def digests(directory: Path) -> dict[str, str]:
    result = {}
    for path in sorted(directory.iterdir()):
        digest = hashlib.sha256()
        with open(path, "rb") as file:
            while chunk := file.read(1 << 24):
                digest.update(chunk)
        result[path.name] = digest.hexdigest()
    return result


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_the_checkpoint_is_the_committed_one(build, tmp_path, monkeypatch, request):
    """The reduced QwenGPU is the run's shared one (tests/conftest.py's `reduced_model`,
    compiled by the same command)."""
    monkeypatch.chdir(ROOT)
    if build == "qwengpu-reduced":
        directory = Path(request.getfixturevalue("reduced_model"))
    else:
        directory = tmp_path
        assert main(["compile", *BUILDS[build], "--target", "min", "-o", str(tmp_path)]) == 0
    got = digests(directory)
    committed = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if os.environ.get("QWENGPU_UPDATE_GOLDEN"):
        committed[build] = got
        GOLDEN.write_text(json.dumps(committed, indent=1, sort_keys=True) + "\n")
    assert build in committed, f"no fingerprint for {build} in {GOLDEN}"
    differing = sorted(name for name in set(got) | set(committed[build])
                       if got.get(name) != committed[build].get(name))
    assert not differing, f"{build}: these files changed: {differing}"
