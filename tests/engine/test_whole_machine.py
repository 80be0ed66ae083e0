"""The whole QwenGPU inside the model, on the sparse engine: the README's main job.

`hdlc compile specs/qwengpu.hdl --target min` (4 lanes, 8 warps, 45 layers: about a minute,
6.5 GB of memory at its peak and 5.6 GB on disk), then `hdlc run A B ... --backend model
--check --json` on kernels of the corpus as one batch: the engine writes every launch, the
reference interpreter follows each row in lockstep (`--check`: the first token that differs
fails the row), and the buffers (or the trap) are compared with each example's
expected.json, which its independent model.py wrote.  Several warps and two blocks, a
partly filled warp, divergence, early exits, warp-wide operations, a trap and a kernel the
project was not developed on (unseen/) are among them, and vector_add (two blocks of eight
threads) runs alone as the README runs it; the whole corpus passes the same way in
bench/corpus_on_model.py (docs/engine.md).

Stock transformers, the judge, is held beside the engine on the same whole machine by the
slow test in tests/backend_torch/test_compile_2b.py (which CI runs), and on every small
compiled machine by the compile tests (tests/compile_helpers.run_case).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench_scripts import bench_script
from qwengpu.cli import main
from readme_job import COMPILE, RUN

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
KERNELS = ["out_of_bounds", "serial_mad", "warp_ops", "early_return", "unseen/hash_mix",
           "saxpy_int"]


@pytest.fixture(scope="module")
def whole_machine(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("qwengpu_whole")
    assert main([*COMPILE, "-o", str(directory)]) == 0
    return directory


def expected_of(kernel: str) -> dict:
    return json.loads((EXAMPLES / kernel / "expected.json").read_text())


def test_kernels_inside_the_whole_machine(whole_machine, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    launches = [f"examples/{kernel}/launch.json" for kernel in KERNELS]
    capsys.readouterr()
    code = main(["run", *launches, "--backend", "model", "--model", str(whole_machine),
                 "--check", "--json"])
    out, err = capsys.readouterr()
    results = {line["launch"]: line for line in map(json.loads, out.splitlines())}
    assert "differs" not in err and "error:" not in err.replace("trap", ""), err
    assert code == 1                                   # out_of_bounds traps, as it should
    for kernel, launch in zip(KERNELS, launches):
        result, expected = results[launch], expected_of(kernel)
        assert result["engine"] == "sparse" and result["tokens"] > 0, kernel
        if "trap" in expected:
            assert result["trap"]["kind"].startswith(expected["trap"]), kernel
        else:
            assert result["trap"] is None, kernel
            assert result["buffers"] == expected["buffers"], kernel


def test_the_readme_main_job(whole_machine, capsys, monkeypatch):
    """`hdlc run examples/vector_add/launch.json --backend model --model DIR --check
    --trace`: every record printed, the buffers those of expected.json."""
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    assert main([*RUN, "--model", str(whole_machine)]) == 0
    out = capsys.readouterr().out
    expected = expected_of("vector_add")["buffers"]
    assert f"c = {expected['c']}" in out
    assert len(re.findall(r"^#\d+ ", out, re.MULTILINE)) == 76       # every record, numbered


def test_the_engine_benchmark_on_the_whole_machine(whole_machine, capsys):
    """bench/bench_engine.py (stock transformers left out: minutes) prints one line per batch
    and thread count, each writing the interpreter's trace ("yes"), and exits 0."""
    bench = bench_script("bench_engine")
    capsys.readouterr()
    assert bench.main(["--model", str(whole_machine), "--new-tokens", "60", "--batches", "1,3",
                       "--threads", "1,2", "--stock-batches", ""]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()
            if line.startswith("sparse ")]
    assert len(rows) == 4 and all(row[-1] == "yes" for row in rows), rows


def test_the_whole_machine_is_the_one_the_corpus_ran_on(whole_machine):
    """The compile is pinned: its fingerprint (bench/corpus_on_model.py's: SHA-256 of the
    weights, config and protocol) is the one the latest lines of
    bench/results/corpus-min-engine.jsonl name, so those results are results of this
    compiler."""
    corpus = bench_script("corpus_on_model")
    lines = (ROOT / "bench" / "results" / "corpus-min-engine.jsonl").read_text().splitlines()
    assert corpus.fingerprint(whole_machine) == json.loads(lines[-1])["checkpoint"]


def test_random_kernels_inside_the_whole_machine(whole_machine, capsys):
    """bench/soak_model.py (issue: differential fuzzing of the model): random PTX kernels of
    the fuzz tests (seeds 1 and 2: 93 and 62 records, one block of 3 threads each; seed 1's
    load of a data-chosen word keeps its address check, 11 of its records), every token
    checked against the interpreter in lockstep; CI's bounded slice of the soak."""
    soak = bench_script("soak_model")
    capsys.readouterr()
    assert soak.main(["--model", str(whole_machine), "--kernels", "2", "--seed", "1",
                      "--batch", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^2 kernels passed, 0 failed, 0 skipped \(do not fit\); 155 records and "
                     r"\d+ trace tokens checked", out, re.M), out
