"""The committed results of the corpus inside the whole machine (bench/results/corpus-min.jsonl)
agree with the interpreter and say what docs/trace.md claims: every runnable example of the
corpus, the unseen ones included, passed on the latest checkpoint, each `ok` line with as
many records (and tokens) as the interpreter's run of that launch, and the ids of each
`unfinished` line an `ok` line went on from decode to the interpreter's first records.  The
model wrote those lines; this test only reads them (no model is loaded)."""

from __future__ import annotations

import json

from runtime_helpers import EXAMPLES_DIR, IDS, ROOT, default_protocol, launch_of
from qwengpu.runtime.decode import TraceDecoder
from qwengpu.runtime.launch import run_launch_sim

RESULTS = ROOT / "bench" / "results" / "corpus-min.jsonl"


def _lines_on_latest_checkpoint() -> list[dict]:
    """The lines on the checkpoint of the file's last line, in the file's order."""
    lines = [json.loads(text) for text in RESULTS.read_text().splitlines() if text.strip()]
    return [line for line in lines if line["checkpoint"] == lines[-1]["checkpoint"]]


def _latest_lines() -> dict[str, dict]:
    """Each kernel's latest line on the checkpoint of the file's last line."""
    return {line["kernel"]: line for line in _lines_on_latest_checkpoint()}


def _lines_to_check() -> list[dict]:
    """Each kernel's latest line, and the `unfinished` line a resumed one went on from."""
    lines = _lines_on_latest_checkpoint()
    latest = _latest_lines()
    resumed_from = [
        line for line in lines
        if line["verdict"] == "unfinished"
        and line["tokens"] == latest[line["kernel"]].get("resumed_tokens")
    ]
    return list(latest.values()) + resumed_from


def test_every_runnable_kernel_passed_on_the_latest_checkpoint():
    latest = _latest_lines()
    missing = [name for name in IDS if latest.get(name, {}).get("verdict") != "ok"]
    assert not missing, (f"no `ok` line for {missing} in {RESULTS.name}: run "
                         "bench/corpus_on_model.py --results ... --resume on the min build")
    assert all(line["verdict"] in ("ok", "unfinished") for line in latest.values())


def test_the_results_agree_with_the_interpreter():
    protocol = default_protocol()
    for line in _lines_to_check():
        name = line["kernel"]
        records = run_launch_sim(launch_of(EXAMPLES_DIR / name)).records
        if line["verdict"] == "ok":
            assert line["records"] == len(records), name
            assert line["tokens"] == len(records) * protocol.tokens_per_record + 1, name
            continue
        decoder = TraceDecoder(protocol)
        for token_id in line["ids"]:
            decoder.feed(token_id)
        assert line["records"] == len(decoder.records) < len(records), name
        assert decoder.records == records[:len(decoder.records)], name
        assert line["tokens"] == len(line["ids"]) == decoder.tokens, name
