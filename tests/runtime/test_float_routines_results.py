"""The committed runs of the loader's float routines inside the whole machine say what
docs/fpu.md claims.  bench/results/float-routines-min.jsonl holds the lines
bench/float_routines_on_model.py wrote: batches of launches of the multiply, divide
and square-root kernels on seeded random operand bit patterns, run by the sparse engine on the min
build with the interpreter in lockstep (every record checked) and each result word compared
with numpy's float32 operation.  This test only reads those lines (no model is loaded): on the
checkpoint the corpus last ran on (the current build), every line passed, the multiplies
and divisions and the roots reach the issue's 10^4 operand sets (docs/fpu.md), and a
batch's records are the interpreter's records of the same launches today (so the lines ran
today's loader)."""

from __future__ import annotations

import json

import pytest

from bench_scripts import bench_script
from qwengpu.runtime.launch import launch_from_dict, machine_limits, run_launch_sim
from qwengpu.runtime.machine_state import load_machine
from runtime_helpers import ROOT

RESULTS = ROOT / "bench" / "results" / "float-routines-min.jsonl"
CORPUS = ROOT / "bench" / "results" / "corpus-min-engine.jsonl"
AT_LEAST = {"multiply": 10_000, "divide": 10_000, "sqrt": 10_000}


def _lines() -> list[dict]:
    corpus = [json.loads(text) for text in CORPUS.read_text().splitlines() if text.strip()]
    checkpoint = corpus[-1]["checkpoint"]
    lines = [json.loads(text) for text in RESULTS.read_text().splitlines() if text.strip()]
    return [line for line in lines if line["checkpoint"] == checkpoint]


@pytest.mark.parametrize("operation", sorted(AT_LEAST))
def test_every_batch_passed_and_enough_ran(operation):
    lines = [line for line in _lines() if line["operation"] == operation]
    assert all(line["verdict"] == "ok" for line in lines), [line["verdict"] for line in lines]
    seeds = sorted(seed for line in lines for seed in range(line["seeds"][0],
                                                            line["seeds"][1] + 1))
    assert len(seeds) == len(set(seeds)), "a seed ran twice: operand sets counted twice"
    assert sum(line["operand_sets"] for line in lines) >= AT_LEAST[operation]


@pytest.mark.parametrize("operation", sorted(AT_LEAST))
def test_a_batch_has_the_interpreters_records(operation, tmp_path):
    script = bench_script("float_routines_on_model")
    line = next(line for line in _lines() if line["operation"] == operation)
    machine = load_machine()
    records = 0
    for seed in range(line["seeds"][0], line["seeds"][1] + 1):
        launch = launch_from_dict(script.launch_of(operation, script.operand_sets(operation,
                                                                                  seed)),
                                  str(tmp_path), machine_limits(machine))
        records += len(run_launch_sim(launch, machine=machine).records)
    assert records == line["records"]
