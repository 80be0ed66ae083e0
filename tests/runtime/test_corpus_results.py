"""The committed results of the corpus inside the whole machine agree with the interpreter and
say what docs/trace.md and docs/engine.md claim.  corpus-2b-engine.jsonl (the sparse engine,
the qwen3.5-2b build) and corpus-min-engine.jsonl (the sparse engine, the min build) ran on
this compiler and loader: every runnable example of the corpus, the unseen ones included,
passed on the latest checkpoint (by the rule `--resume` skips kernels by:
bench/corpus_on_model.py's `results_before`), each `ok` line with as many records (and
tokens) as the interpreter's run of that launch, and the ids of each `unfinished` line an `ok`
line went on from decode to the interpreter's first records.  The model wrote those lines;
this test only reads them (no model is loaded).

bench/results/corpus-min.jsonl is an archive: stock transformers over many sittings, on the
spec of every record 54 tokens (bench/results/qwengpu-54-token-records.hdl) and the loader of
before ISA v2, which compiled some kernels to other machine code than today's (serial_horner:
336 records then, 335 now), so today's interpreter is not its judge.  Its lines are held to
what they say of themselves: the 32 kernels of that corpus passed, every `ok` line is 54
tokens a record and an `<eos>`, and the ids of every `unfinished` line decode to its records."""

from __future__ import annotations

import json

import pytest

from functools import lru_cache

from bench_scripts import bench_script
from tiers import SPREAD, first_by_default
from runtime_helpers import EXAMPLES_DIR, IDS, ROOT, launch_of
from qwengpu.runtime.launch import run_launch_sim
from qwengpu.runtime.machine_state import load_machine
from qwengpu.trace.decode import TraceDecoder
from qwengpu.trace.protocol import TraceProtocol

RESULTS_DIR = ROOT / "bench" / "results"
RESULTS = [RESULTS_DIR / name for name in ("corpus-2b-engine.jsonl", "corpus-min-engine.jsonl")]
ARCHIVE = RESULTS_DIR / "corpus-min.jsonl"
ARCHIVE_SPEC = RESULTS_DIR / "qwengpu-54-token-records.hdl"


@lru_cache(maxsize=None)
def _machine():
    return load_machine()


@lru_cache(maxsize=None)
def _records(kernel: str) -> list[dict[str, int]]:
    """The interpreter's records of a kernel."""
    return run_launch_sim(launch_of(EXAMPLES_DIR / kernel), machine=_machine()).records


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


PARTS = SPREAD


@pytest.mark.parametrize("part", first_by_default(range(PARTS)))
@pytest.mark.parametrize("results", RESULTS, ids=lambda path: path.name)
def test_the_results_agree_with_the_interpreter(results, part):
    """Every third line from the `part`-th (the interpreter runs each kernel: 45 s for them
    all); the first third by default, the rest in the extra tier (tests/tiers.py)."""
    protocol = TraceProtocol.from_design(_machine().design)
    for line in _lines_to_check(results)[part::PARTS]:
        name = line["kernel"]
        records = _records(name)
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


def test_the_archived_transformers_run_says_what_it_did():
    """corpus-min.jsonl: 32 kernels passed on its latest checkpoint, each `ok` line 54 tokens a
    record (every field and port token, the vocabulary of its spec) and an `<eos>`, and each
    `unfinished` line's ids decode to as many records as it says."""
    spec = TraceProtocol.from_design(load_machine(ARCHIVE_SPEC).design)
    protocol = TraceProtocol(spec.design_name, spec.fields, spec.state, spec.write_ports)
    assert protocol.tokens_per_record == 54
    lines = _lines_on_latest_checkpoint(ARCHIVE)
    passed = {line["kernel"] for line in lines if line["verdict"] == "ok"}
    assert len(passed) == 32 and passed <= set(IDS)
    for line in lines:
        if line["verdict"] == "ok":
            assert line["tokens"] == 54 * line["records"] + 1, line["kernel"]
            continue
        assert line["verdict"] == "unfinished", line["kernel"]
        decoder = TraceDecoder(protocol)
        for token_id in line["ids"]:
            decoder.feed(token_id)
        assert line["records"] == len(decoder.records) and line["tokens"] == decoder.tokens
