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
slow test in tests/backend_torch/test_compile_2b.py and, for each family of cooperating
instructions (shared memory and barriers, atomics, shuffles, votes, byte stores, local
memory), by the slow `test_each_family_is_held_to_stock_transformers` here (CI runs both),
and on every small compiled machine by the compile tests (tests/compile_helpers.run_case).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from bench_scripts import bench_script
from qwengpu.cli import main
from qwengpu.isa import Op
from qwengpu.runtime.launch import load_launch
from qwengpu.runtime.machine_state import new_simulator
from qwengpu.runtime.model_backend import generate_greedy, load_checkpoint
from qwengpu.trace.prompt import simulator_state, state_prompt
from compile_helpers import engines_read_once
from readme_job import COMPILE, RUN

pytestmark = pytest.mark.heavy     # one worker runs the heavy files in turn: tests/workers.py

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
KERNELS = ["out_of_bounds", "serial_mad", "warp_ops", "early_return", "unseen/hash_mix",
           "saxpy_int"]


@pytest.fixture(scope="module")
def whole_machine(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("qwengpu_whole")
    assert main([*COMPILE, "-o", str(directory)]) == 0
    return directory


@pytest.fixture(scope="module", autouse=True)
def engine_read_once():
    """The whole machine's sparse engine is read once for the module (about 20 s a read)."""
    with engines_read_once():
        yield


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
    assert bench.main(["--model", str(whole_machine), "--new-tokens", "20", "--batches", "1,3",
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
    the fuzz tests (seeds 1 and 2: 53 and 60 records, one block of 3 threads each; seed 1
    keeps a word of each thread's local memory, seed 2 branches), every token checked
    against the interpreter in lockstep; CI's bounded slice of the soak."""
    soak = bench_script("soak_model")
    capsys.readouterr()
    assert soak.main(["--model", str(whole_machine), "--kernels", "2", "--seed", "1",
                      "--batch", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^2 kernels passed, 0 failed, 0 skipped \(do not fit\); 113 records and "
                     r"\d+ trace tokens checked", out, re.M), out


# Issue #25's families, each at the first step of its kind in an example (then a few more):
# shared memory and a barrier, atomics (add; compare-and-swap), a shuffle, a vote, a byte
# store, and a thread's local memory (dot64's first store is a spill into its window); and
# #26's FPU: the two steps of a float add (fadd.s1 then fadd.s2 among the records after it).
FAMILIES = {"shared_reduce": Op.BAR, "histogram": Op.ATOM_ADD, "atomic_order": Op.ATOM_CAS,
            "warp_reduce": Op.SHFL, "warp_vote": Op.VOTE, "byte_stores": Op.ST_U8,
            "dot64": Op.ST, "float_vector_add": Op.FADD1}
FAMILY_RECORDS = 6


def state_before_first(kernel: str, op: Op) -> tuple[dict[str, list[int]], list[dict]]:
    """The interpreter's machine state just before the first record of `op` in the kernel's
    launch, and the records from there."""
    launch = load_launch(EXAMPLES / kernel / "launch.json")

    def simulator():
        return new_simulator(None, launch.instructions, launch.memory, launch.params,
                             launch.grid, launch.block, launch.windows)
    ahead, sim = simulator(), simulator()
    while ahead.step()["op"] != op:
        sim.step()
    return simulator_state(sim), sim.run(FAMILY_RECORDS)


@pytest.fixture(scope="module")
def judge_and_engine(whole_machine):
    """Stock transformers (8 GB of fp32) and the sparse engine on the whole machine."""
    return load_checkpoint(whole_machine, "cpu", "transformers"), \
        load_checkpoint(whole_machine, "cpu", "sparse")


@pytest.mark.slow
@pytest.mark.parametrize("kernel", FAMILIES)
def test_each_family_is_held_to_stock_transformers(judge_and_engine, kernel):
    """Stock transformers, the judge, on the whole machine from the state before a family's
    first step: its greedy choice at every position of the next records (one prefill of
    prompt and records) is the interpreter's, and the sparse engine writes the same ids.  The
    whole kernels run on the engine in bench/results/corpus-min-engine.jsonl; about a minute a
    family on 2 cores (CI runs it)."""
    from qwengpu.backend_torch.model import prefill_logits

    state, records = state_before_first(kernel, FAMILIES[kernel])
    assert records[0]["op"] == FAMILIES[kernel]
    (model, protocol), (engine, _) = judge_and_engine
    prompt = state_prompt(protocol, state)
    want = protocol.encode_records(records, eos=False)
    with torch.no_grad():
        logits = prefill_logits(model, prompt + want).logits[0, len(prompt) - 1:-1]
    assert logits.argmax(1).tolist() == want, kernel
    written, = generate_greedy(engine, protocol, [prompt], FAMILY_RECORDS)
    assert written[:len(want)] == want, kernel
