"""The committed results of the corpus inside the whole machine agree with the interpreter and
say what docs/trace.md and docs/engine.md claim, in each file: bench/results/corpus-min.jsonl
(stock transformers, the min build, over many sittings), corpus-2b-engine.jsonl (the
sparse engine, the qwen3.5-2b build, one sitting) and corpus-min-engine.jsonl (the sparse
engine, the min build of this compiler, one sitting): every runnable example of the
corpus, the unseen ones included, passed on the latest checkpoint (by the rule `--resume`
skips kernels by: bench/corpus_on_model.py's `results_before`), each `ok` line with as many
records (and tokens) as the interpreter's run of that launch, and the ids of each
`unfinished` line an `ok` line went on from decode to the interpreter's first records.  The
model wrote those lines; this test only reads them (no model is loaded).  Each file is read
with the spec its latest checkpoint was compiled from: corpus-min.jsonl ran before optional
record fields, on bench/results/qwengpu-54-token-records.hdl (every record 54 tokens)."""

from __future__ import annotations

import json

import pytest

from functools import lru_cache

from bench_scripts import bench_script
from runtime_helpers import EXAMPLES_DIR, IDS, ROOT, launch_of
from qwengpu.runtime.launch import run_launch_sim
from qwengpu.runtime.machine_state import load_machine
from qwengpu.trace.decode import TraceDecoder
from qwengpu.trace.protocol import TraceProtocol

RESULTS_DIR = ROOT / "bench" / "results"
RESULTS = [RESULTS_DIR / name for name in ("corpus-min.jsonl", "corpus-2b-engine.jsonl",
                                           "corpus-min-engine.jsonl")]
# the spec each file's latest checkpoint was compiled from (None: specs/qwengpu.hdl)
SPEC_OF = {"corpus-min.jsonl": RESULTS_DIR / "qwengpu-54-token-records.hdl",
           "corpus-2b-engine.jsonl": None, "corpus-min-engine.jsonl": None}


@lru_cache(maxsize=None)
def _machine(results_name: str):
    return load_machine(SPEC_OF[results_name])


def _protocol(results_name: str) -> TraceProtocol:
    """The vocabulary the file's lines were written in: corpus-min.jsonl's predates optional
    port tokens too (its records carried every port token: 54 each)."""
    protocol = TraceProtocol.from_design(_machine(results_name).design)
    if results_name != "corpus-min.jsonl":
        return protocol
    old = TraceProtocol(protocol.design_name, protocol.fields, protocol.state,
                        protocol.write_ports)          # every port token in every record
    assert old.tokens_per_record == 54
    return old


@lru_cache(maxsize=None)
def _records(results_name: str, kernel: str) -> list[dict[str, int]]:
    """The interpreter's records of a kernel, on the file's machine."""
    return run_launch_sim(launch_of(EXAMPLES_DIR / kernel), machine=_machine(results_name)).records


def _lines_on_latest_checkpoint(results) -> list[dict]:
    """The lines on the checkpoint of the file's last line, in the file's order."""
    lines = [json.loads(text) for text in results.read_text().splitlines() if text.strip()]
    return [line for line in lines if line["checkpoint"] == lines[-1]["checkpoint"]]


def _lines_to_check(results) -> list[dict]:
    """Each kernel's latest line, and the `unfinished` line a resumed one went on from."""
    lines = _lines_on_latest_checkpoint(results)
    latest = {line["kernel"]: line for line in lines}
    resumed_from = [line for line in lines if line["verdict"] == "unfinished"
                    and line["tokens"] == latest[line["kernel"]].get("resumed_tokens")]
    return list(latest.values()) + resumed_from


@pytest.mark.parametrize("results", RESULTS, ids=lambda path: path.name)
def test_every_runnable_kernel_passed_on_the_latest_checkpoint(results):
    checkpoint = _lines_on_latest_checkpoint(results)[-1]["checkpoint"]
    passed, unfinished = bench_script("corpus_on_model").results_before(results, checkpoint)
    missing = sorted(set(IDS) - passed)
    assert not missing, (f"no `ok` line for {missing} in {results.name}: run "
                         "bench/corpus_on_model.py --results ... --resume on its build")
    assert not unfinished, f"an `unfinished` line after the last `ok`: {sorted(unfinished)}"


@pytest.mark.parametrize("results", RESULTS, ids=lambda path: path.name)
def test_the_results_agree_with_the_interpreter(results):
    protocol = _protocol(results.name)
    for line in _lines_to_check(results):
        name = line["kernel"]
        records = _records(results.name, name)
        if line["verdict"] == "ok":
            assert line["records"] == len(records), name
            assert line["tokens"] == len(protocol.encode_records(records)), name
            continue
        assert line["verdict"] == "unfinished", (name, line["verdict"])
        decoder = TraceDecoder(protocol)
        for token_id in line["ids"]:
            decoder.feed(token_id)
        assert line["records"] == len(decoder.records) < len(records), name
        assert decoder.records == records[:len(decoder.records)], name
        assert line["tokens"] == len(line["ids"]) == decoder.tokens, name
