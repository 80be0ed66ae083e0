"""The committed runs on machines of 256 instruction slots say what docs/fpu.md claims.

The examples that need more than the default machine's 128 slots (their model.py sets
`MACHINE` with `PROG_WORDS` 256 and `DEFAULT_MACHINE_ERROR`: `float_fma`, `float_hypot`) ran
inside builds compiled with `-P PROG_WORDS=256`, on the sparse engine with the interpreter in
lockstep (bench/corpus_on_model.py): bench/results/corpus-min-wide-engine.jsonl (the min
target) and corpus-2b-wide-engine.jsonl (qwen3.5-2b).  The fma routine ran on many operand
triples inside the min one (bench/float_routines_on_model.py --op fma):
float-routines-min-wide.jsonl, its lines on the checkpoint of the min corpus file.  This test
only reads the lines (no model is loaded): every wide example passed on each file's latest
checkpoint with the records and tokens of today's interpreter on the 256-slot machine, and
every fma batch passed with the records of today's interpreter of the same launches."""

from __future__ import annotations

import json

import pytest

from bench_scripts import bench_script
from runtime_helpers import ALL_EXAMPLES, EXAMPLES_DIR, ROOT, make_expected
from qwengpu.runtime.launch import launch_from_dict, load_launch, machine_limits, \
    run_launch_sim
from qwengpu.runtime.machine_state import load_machine
from qwengpu.trace.protocol import TraceProtocol

RESULTS_DIR = ROOT / "bench" / "results"
CORPUS = {"min": RESULTS_DIR / "corpus-min-wide-engine.jsonl",
          "qwen3.5-2b": RESULTS_DIR / "corpus-2b-wide-engine.jsonl"}
ROUTINES = RESULTS_DIR / "float-routines-min-wide.jsonl"
WIDE = {example: make_expected.machine_params(example) for example in ALL_EXAMPLES
        if make_expected.default_machine_error(example)}
FMA_AT_LEAST = 10_000


def _lines(path) -> list[dict]:
    return [json.loads(text) for text in path.read_text().splitlines() if text.strip()]


def _latest(path) -> list[dict]:
    lines = _lines(path)
    return [line for line in lines if line["checkpoint"] == lines[-1]["checkpoint"]]


def test_the_wide_examples_are_the_fma_and_the_two_routines():
    assert {example.name for example in WIDE} == {"float_fma", "float_hypot"}
    assert all(params["PROG_WORDS"] == 256 for params in WIDE.values())


@pytest.mark.parametrize("target", sorted(CORPUS))
def test_every_wide_example_passed_as_the_interpreter_runs_it(target):
    lines = _latest(CORPUS[target])
    passed = {line["kernel"]: line for line in lines if line["verdict"] == "ok"}
    for example, params in WIDE.items():
        name = str(example.relative_to(EXAMPLES_DIR))
        assert name in passed, f"no ok line for {name} in {CORPUS[target].name}"
        machine = load_machine(None, params)
        launch = load_launch(str(example / "launch.json"), machine_limits(machine))
        records = run_launch_sim(launch, machine=machine).records
        protocol = TraceProtocol.from_design(machine.design)
        assert passed[name]["records"] == len(records), name
        assert passed[name]["tokens"] == len(protocol.encode_records(records)), name


def test_the_fma_batches_passed_on_the_min_build(tmp_path):
    checkpoint = _latest(CORPUS["min"])[-1]["checkpoint"]
    lines = [line for line in _lines(ROUTINES) if line["checkpoint"] == checkpoint]
    assert lines and all(line["operation"] == "fma" for line in lines)
    assert all(line["verdict"] == "ok" for line in lines), [line["verdict"] for line in lines]
    seeds = sorted(seed for line in lines for seed in range(line["seeds"][0],
                                                            line["seeds"][1] + 1))
    assert len(seeds) == len(set(seeds)), "a seed ran twice: operand sets counted twice"
    assert sum(line["operand_sets"] for line in lines) >= FMA_AT_LEAST
    script = bench_script("float_routines_on_model")
    machine = load_machine(None, {"PROG_WORDS": 256})
    line = lines[0]
    records = 0
    for seed in range(line["seeds"][0], line["seeds"][1] + 1):
        launch = launch_from_dict(script.launch_of("fma", script.operand_sets("fma", seed)),
                                  str(tmp_path), machine_limits(machine))
        records += len(run_launch_sim(launch, machine=machine).records)
    assert records == line["records"]
