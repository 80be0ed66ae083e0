"""The committed results of the corpus inside the whole machine (bench/results/corpus-min.jsonl)
agree with the interpreter and say what docs/trace.md claims: every runnable example of the
corpus passed on the latest checkpoint, each `ok` line with as many records (and tokens) as
the interpreter's run of that launch, and the ids of each `unfinished` line decode to the
interpreter's first records.  The model wrote those lines; this test only reads them (no
model is loaded)."""

from __future__ import annotations

import json

from runtime_helpers import EXAMPLES_DIR, IDS, ROOT, default_protocol, launch_of
from qwengpu.runtime.decode import TraceDecoder
from qwengpu.runtime.launch import run_launch_sim

RESULTS = ROOT / "bench" / "results" / "corpus-min.jsonl"


def _latest_lines() -> dict[str, dict]:
    """Each kernel's latest line on the checkpoint of the file's last line."""
    lines = [json.loads(text) for text in RESULTS.read_text().splitlines() if text.strip()]
    checkpoint = lines[-1]["checkpoint"]
    return {line["kernel"]: line for line in lines if line["checkpoint"] == checkpoint}


def test_every_runnable_corpus_kernel_passed_on_the_latest_checkpoint():
    latest = _latest_lines()
    corpus = [name for name in IDS if not name.startswith("unseen/")]
    missing = [name for name in corpus if latest.get(name, {}).get("verdict") != "ok"]
    assert not missing, (f"no `ok` line for {missing} in {RESULTS.name}: run "
                         "bench/corpus_on_model.py --results ... --resume on the min build")
    assert all(line["verdict"] in ("ok", "unfinished") for line in latest.values())


def test_the_results_agree_with_the_interpreter():
    protocol = default_protocol()
    for name, line in _latest_lines().items():
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
