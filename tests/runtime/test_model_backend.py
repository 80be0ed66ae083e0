"""The model backend's host side, without a compiled checkpoint.

- `LockstepChecker` (`--check`) against streams encoded from the interpreter's records: it
  accepts the right trace and names record, field, expected and got for a wrong one.
- Error paths of `hdlc run --backend model` (missing flags, directories, protocol).
- A randomly initialised tiny Qwen3.5 checkpoint runs through stock `generate` and is stopped
  at its first token with a located error: this shows the loop fails loudly on a model that is
  not a QwenGPU, and nothing more.  The end-to-end tests on compiled checkpoints live with
  the compiler (a model must compute the trace; no stand-in replaying tokens is evidence).
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from bench_scripts import bench_script
from runtime_helpers import VECTOR_ADD, launch_of, sim_result
from qwengpu.cli import main
from qwengpu.runtime.model_backend import CheckMismatch, LockstepChecker

VECTOR_ADD_DIR = VECTOR_ADD.parent


def feed_all(protocol, ids):
    checker = LockstepChecker(launch_of(VECTOR_ADD_DIR), protocol)
    for token_id in ids:
        checker.feed(token_id)
    return checker


def test_checker_accepts_the_interpreters_trace(protocol):
    records = sim_result(VECTOR_ADD_DIR).records
    checker = feed_all(protocol, protocol.encode_records(records))
    assert checker.ended and checker.record_index == len(records)


def test_checker_names_the_first_difference(protocol):
    records = [dict(record) for record in sim_result(VECTOR_ADD_DIR).records]
    target = next(i for i, record in enumerate(records) if record["rwen"] & 2)
    expected = records[target]["rval1"]
    records[target]["rval1"] = expected ^ 0x00FF0000
    with pytest.raises(CheckMismatch) as caught:
        feed_all(protocol, protocol.encode_records(records))
    error = caught.value
    assert (error.record, error.field, error.expected, error.got) == (
        target, "rval1", expected, expected ^ 0x00FF0000)
    assert f"record {target} (warp {records[target]['warp']}" in error.message



def test_checker_names_the_field_of_a_pair_that_differs(protocol):
    """`(active, exec)` share a token: a token right in `active` and wrong in `exec` is
    reported as exec's, with both values."""
    records = [dict(record) for record in sim_result(VECTOR_ADD_DIR).records]
    target = next(i for i, record in enumerate(records) if record["exec"] == 15)
    records[target]["exec"] = 7
    with pytest.raises(CheckMismatch) as caught:
        feed_all(protocol, protocol.encode_records(records))
    error = caught.value
    assert (error.record, error.field, error.expected, error.got) == (target, "exec", 15, 7)

def test_checker_on_early_and_late_ends(protocol):
    records = sim_result(VECTOR_ADD_DIR).records
    with pytest.raises(CheckMismatch) as caught:
        feed_all(protocol, protocol.encode_records(records[:10]))
    assert caught.value.record == 10 and caught.value.got == "<eos>"
    with pytest.raises(CheckMismatch) as caught:
        feed_all(protocol, protocol.encode_records(records + records[:1]))
    assert caught.value.record == len(records) and caught.value.field is None
    assert "the end of the launch" in caught.value.message


def test_checker_names_a_wrong_port_token(protocol):
    """Record 68 (the first store) is the first to commit its ports: its commit:port1 left
    out, the checker reads commit:port2 in its place."""
    records = sim_result(VECTOR_ADD_DIR).records
    ids = protocol.encode_records(records)
    first_port = len(protocol.encode_records(records[:68])) - 1     # its ids, less <eos>
    ports = ids[first_port + len(protocol.encode_records(records[68:69])) - 4:][:3]
    assert [protocol.describe(i).text for i in ports] == [
        "commit:port1", "commit:port2", "commit:port3"]
    del ids[ids.index(ports[0], first_port)]
    with pytest.raises(CheckMismatch) as caught:
        feed_all(protocol, ids)
    error = caught.value
    assert (error.record, error.field, error.expected, error.got) == (
        68, None, "commit:port1", "commit:port2")
    assert "at its commit of write port 1" in error.message


def run_cli(capsys, argv):
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_run_model_flag_errors(tmp_path, capsys):
    cases = [(["--backend", "model"], "needs --model DIR"),
             (["--check"], "it needs --backend model"),
             (["--backend", "model", "--model", str(tmp_path / "none")],
              "no such checkpoint directory"),
             (["--backend", "model", "--model", str(tmp_path)], "no config.json")]
    for flags, message in cases:
        code, _, err = run_cli(capsys, ["run", str(VECTOR_ADD), *flags])
        assert code == 1 and message in err, (flags, err)
    (tmp_path / "config.json").write_text("{}")
    code, _, err = run_cli(capsys, ["run", str(VECTOR_ADD), "--backend", "model", "--model",
                                    str(tmp_path)])
    assert code == 1 and "not a compiled QwenGPU checkpoint" in err


@pytest.fixture(scope="module")
def random_checkpoint(tmp_path_factory):
    """A tiny Qwen3.5 with random weights and the QwenGPU vocabulary (not a QwenGPU)."""
    from random_checkpoints import save_random_qwen
    from runtime_helpers import default_protocol

    protocol = default_protocol()
    directory = tmp_path_factory.mktemp("random_qwen")
    save_random_qwen(directory, protocol)
    protocol.save(directory)
    return directory


def test_a_random_model_is_stopped_at_its_first_token(random_checkpoint, capsys):
    prompt_length = 319
    code, out, err = run_cli(capsys, ["run", str(VECTOR_ADD), "--backend", "model", "--model",
                                      str(random_checkpoint), "--json"])
    assert code == 1 and out == ""
    assert f"error: position {prompt_length}: expected warp.b0=.. (the start of record 0)" \
        in err or f"error: position {prompt_length + 1}: expected pc.b0=.." in err, err
    code, _, err = run_cli(capsys, ["run", str(VECTOR_ADD), "--backend", "model", "--model",
                                    str(random_checkpoint), "--check"])
    assert code == 1 and "--check: record 0 (warp 0, pc 0) differs" in err, err


def test_a_batch_reports_each_launch(random_checkpoint, capsys):
    """Two launches as one batch (left-padded prompts of 319 and of another length): each
    row fails on its own, with positions counted from its own prompt."""
    saxpy = VECTOR_ADD.parents[1] / "saxpy_int" / "launch.json"
    code, out, err = run_cli(capsys, ["run", str(VECTOR_ADD), str(saxpy), "--backend",
                                      "model", "--model", str(random_checkpoint), "--json"])
    assert code == 1
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["launch"] for row in rows] == [str(VECTOR_ADD), str(saxpy)]
    assert "error: position 319: expected warp.b0=.." in rows[0]["error"] or \
        "error: position 320: expected pc.b0=.." in rows[0]["error"], rows[0]
    assert "position 319:" not in rows[1]["error"] and "expected" in rows[1]["error"]
    assert err.count(f"{saxpy}: error: position") == 1, err


@pytest.mark.parametrize("engine", ["sparse", "transformers"])
def test_a_resumed_launch_is_checked_again_then_goes_on(random_checkpoint, protocol, capsys,
                                                        engine):
    """`resume_ids`: the earlier sitting's ids are decoded and checked first (a wrong one
    ends its row at its own record), then they follow the prompt as a chunked prefill (three
    chunks of 512) and the model goes on after them: the random model's first token is
    judged as record 3's.  The progress line (every step here) counts the earlier records
    and ids.  On both engines."""
    from qwengpu.runtime.model_backend import load_checkpoint, run_launches_model

    model, checkpoint_protocol = load_checkpoint(random_checkpoint, "cpu", engine)
    asked = []
    if engine == "transformers":
        generate = model.generate
        model.generate = lambda *args, **kwargs: asked.append(kwargs) or generate(*args,
                                                                                   **kwargs)
    else:
        session = model.session
        model.session = lambda prompts, **kwargs: asked.append(
            {"prefill_chunk_size": kwargs["prefill_chunk"]}) or session(prompts, **kwargs)
    launch = launch_of(VECTOR_ADD_DIR)
    # three whole records (encode_records ends a trace with <eos>: left off)
    earlier = protocol.encode_records(sim_result(VECTOR_ADD_DIR).records[:3])[:-1]
    wrong = list(earlier)
    record_1 = len(protocol.encode_records(sim_result(VECTOR_ADD_DIR).records[:1])) - 1
    wrong[record_1 + 1] = earlier[1] ^ 1                          # record 1's second token
    outcomes = run_launches_model([launch, launch], random_checkpoint, check=True,
                                  progress=False, resume_ids=[earlier, wrong],
                                  prefill_chunk_size=512, loaded=(model, checkpoint_protocol),
                                  progress_every=0)
    assert [kwargs["prefill_chunk_size"] for kwargs in asked] == [512]   # only row 0 ran
    line = [line for line in capsys.readouterr().err.splitlines()
            if "new tokens/s" in line][0]       # the first step's (transformers warns there too)
    assert re.fullmatch(rf"  \d+ s: 3 records \(a row: 3\), {len(earlier) + 1} tokens, "
                        r"[\d.]+ new tokens/s", line), line
    assert all(isinstance(outcome, CheckMismatch) for outcome in outcomes), outcomes
    assert [outcome.record for outcome in outcomes] == [3, 1]


def test_progress_lines_count_only_new_tokens_in_the_rate(capsys, monkeypatch):
    """A line each `every` seconds: the seconds since generate had the prompts, each row's
    records, all ids, and the rate of the ids written since (not the earlier sittings')."""
    from qwengpu.runtime import model_backend

    clock = iter([100.0, 110.0, 111.0, 130.0])
    monkeypatch.setattr(model_backend, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    progress = model_backend._Progress(False, every=15)
    progress.prompts_given(tokens_before=40)                    # t = 110
    progress.update([3, 2], 45)                                 # t = 111: too soon
    progress.update([3, 4], 80)                                 # t = 130
    assert capsys.readouterr().err == \
        "  20 s: 7 records (a row: 3 4), 80 tokens, 2.0 new tokens/s\n"
    assert progress.first_token_at == 111.0


def test_several_launches_on_the_interpreter(capsys):
    saxpy = VECTOR_ADD.parents[1] / "saxpy_int" / "launch.json"
    singles = [run_cli(capsys, ["run", str(path)])[1] for path in (VECTOR_ADD, saxpy)]
    code, out, _ = run_cli(capsys, ["run", str(VECTOR_ADD), str(saxpy)])
    assert code == 0
    assert out == f"== {VECTOR_ADD}\n{singles[0]}== {saxpy}\n{singles[1]}"


def test_checkpoint_eos_must_match_the_protocol(random_checkpoint, tmp_path, capsys):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(random_checkpoint, copy)
    for name in ("config.json", "generation_config.json"):
        path = copy / name
        if path.exists():
            data = json.loads(path.read_text())
            data["eos_token_id"] = 7
            path.write_text(json.dumps(data))
    code, _, err = run_cli(capsys, ["run", str(VECTOR_ADD), "--backend", "model", "--model",
                                    str(copy)])
    assert code == 1 and "eos_token_id is 7" in err, err


def test_the_corpus_script_reports_every_kernel(random_checkpoint, capsys):
    """bench/corpus_on_model.py on a model that is not a QwenGPU: the error example is
    refused before any model runs, the two others fail on their own rows, exit status 1."""
    corpus = bench_script("corpus_on_model")
    capsys.readouterr()
    code = corpus.main(["--model", str(random_checkpoint), "--kernels",
                        "too_big,vector_add,unseen/hash_mix"])
    out = capsys.readouterr().out
    assert code == 1
    assert "too_big                refused as expected.json says (registers)" in out
    assert "2 kernels in batches of 8" in out
    assert out.count("FAILED: --check: record 0 (warp 0, pc 0) differs") == 2, out
    assert "0 passed, 2 failed" in out


def test_the_corpus_script_goes_on_from_its_results(random_checkpoint, tmp_path, capsys):
    """--results appends a line per kernel run; --resume skips what the file records as
    passed on this very checkpoint (its fingerprint), not what passed on another."""
    corpus = bench_script("corpus_on_model")
    results = tmp_path / "corpus.jsonl"
    here = corpus.fingerprint(random_checkpoint)
    results.write_text(json.dumps({"kernel": "vector_add", "verdict": "ok", "checkpoint": here})
                       + "\n" + json.dumps({"kernel": "unseen/hash_mix", "verdict": "ok",
                                            "checkpoint": "another"}) + "\n")
    capsys.readouterr()
    code = corpus.main(["--model", str(random_checkpoint), "--kernels",
                        "vector_add,unseen/hash_mix", "--results", str(results), "--resume"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"vector_add             passed before on this checkpoint ({results})" in out
    assert "1 kernels in batches of 8" in out and "0 passed, 1 failed" in out
    added = json.loads(results.read_text().splitlines()[-1])
    assert added["kernel"] == "unseen/hash_mix" and added["checkpoint"] == here
    assert added["verdict"].startswith("--check: record 0 (warp 0, pc 0) differs")
    results.write_text("{not json\n")
    with pytest.raises(SystemExit, match=r"corpus.jsonl:1:2: not a JSON line"):
        corpus.main(["--model", str(random_checkpoint), "--results", str(results), "--resume"])


def test_the_corpus_script_goes_on_with_unfinished_launches(random_checkpoint, tmp_path,
                                                           capsys, protocol):
    """An unfinished line (--pause-at) hands its ids to the next --resume, which checks them
    again and goes on after them (the random model fails at record 2, after the two records
    given); the failure is the kernel's latest line, so the next run starts it afresh."""
    corpus = bench_script("corpus_on_model")
    results = tmp_path / "corpus.jsonl"
    here = corpus.fingerprint(random_checkpoint)
    ids = protocol.encode_records(sim_result(VECTOR_ADD_DIR).records[:2])[:-1]   # no <eos>
    results.write_text(json.dumps({"kernel": "vector_add", "verdict": "unfinished",
                                   "checkpoint": here, "ids": ids}) + "\n")
    capsys.readouterr()
    code = corpus.main(["--model", str(random_checkpoint), "--kernels", "vector_add",
                        "--results", str(results), "--resume"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"vector_add             goes on after the {len(ids)} tokens of an earlier sitting" \
        in out
    assert "FAILED: --check: record 2" in out, out
    assert corpus.results_before(results, here) == (set(), {})


def test_the_corpus_script_writes_unfinished_launches(random_checkpoint, tmp_path, capsys,
                                                      monkeypatch):
    """--pause-at: a launch the pause stopped is written as an unfinished line with its ids
    (the model backend is replaced here by one that pauses at once: this checks the
    script's bookkeeping, not a model)."""
    from qwengpu.runtime import model_backend

    def paused(launches, *args, resume_ids, pause_seconds, **kwargs):
        assert pause_seconds <= 60
        return [model_backend.Unfinished(list(ids) + [7, 8], 0, 0.5, 0.3)
                for ids in resume_ids]

    monkeypatch.setattr(model_backend, "run_launches_model", paused)
    corpus = bench_script("corpus_on_model")
    results = tmp_path / "corpus.jsonl"
    capsys.readouterr()
    code = corpus.main(["--model", str(random_checkpoint), "--kernels", "vector_add",
                        "--results", str(results), "--pause-at", "60"])
    out = capsys.readouterr().out
    assert code == 0 and "vector_add             unfinished at 0 records, 2 tokens" in out
    assert "0.5 s (first new token after 0.3 s)" in out, out
    assert "0 passed, 0 failed, 1 unfinished" in out
    line = json.loads(results.read_text())
    assert (line["verdict"], line["ids"], line["first_token_seconds"]) == \
        ("unfinished", [7, 8], 0.3)
    here = corpus.fingerprint(random_checkpoint)
    assert corpus.results_before(results, here) == (set(), {"vector_add": [7, 8]})
    with pytest.raises(SystemExit):
        corpus.main(["--model", str(random_checkpoint), "--pause-at", "60"])
    assert "--pause-at needs --results FILE" in capsys.readouterr().err


def test_the_step_benchmark_times_checkpoints_side_by_side(random_checkpoint, tmp_path,
                                                          capsys):
    """bench/bench_step.py: a line per checkpoint (its shape, the prefill and step times, the
    step as a ratio to the first's); a directory that is not a checkpoint is exit status 1."""
    bench = bench_script("bench_step")
    code = bench.main(["--models", f"{random_checkpoint},{random_checkpoint}", "--steps", "2",
                       "--batch", "2"])
    out = capsys.readouterr().out
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith(random_checkpoint.name)]
    assert len(lines) == 2 and lines[0].endswith("1.00x"), out
    assert "prompt of examples/serial_mad, batch 2, 2 decode steps timed" in out
    assert bench.main(["--models", str(tmp_path / "nothing")]) == 1
    assert "no such checkpoint directory" in capsys.readouterr().err


def test_the_benchmark_reports_a_failing_model(random_checkpoint, capsys):
    """bench/bench_launch.py --batch on a model that is not a QwenGPU: both rows print their
    failure and the exit status is 1 (a benchmark never reports a wrong model as a figure)."""
    bench = bench_script("bench_launch")
    capsys.readouterr()
    code = bench.main(["--model", str(random_checkpoint), "--batch", "--repeats", "1",
                       "--kernels", "vector_add,unseen/hash_mix"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.count("failed: --check: record 0 (warp 0, pc 0) differs") == 2, out
    assert "nonzero weights per layer" in out


def test_the_engine_benchmark_sets_both_engines_side_by_side(random_checkpoint, capsys):
    """bench/bench_engine.py on a model that is not a QwenGPU: a line per engine, batch and
    thread count (stock transformers first, the ratio to its one-row rate), neither equal to
    the interpreter's trace, so the exit status is 1; then the engine's memory line."""
    bench = bench_script("bench_engine")
    capsys.readouterr()
    code = bench.main(["--model", str(random_checkpoint), "--new-tokens", "6",
                       "--stock-tokens", "3", "--batches", "1,3", "--threads", "1,2"])
    out = capsys.readouterr().out
    assert code == 1
    rows = [line.split() for line in out.splitlines()
            if line.startswith(("transformers ", "sparse "))]
    assert [row[:3] for row in rows] == [
        ["transformers", "1", "1"], ["transformers", "1", "2"], ["sparse", "1", "1"],
        ["sparse", "1", "2"], ["sparse", "3", "1"], ["sparse", "3", "2"]], out
    assert rows[0][6] == "1.0x" and all(row[-1] == "NO" for row in rows[:2]), out
    assert "engine: read in" in out and "peak memory" in out


FALLBACK = "is falling back to its reference PyTorch implementation"


def test_a_cpu_run_on_transformers_hides_the_cuda_kernel_fallback_warnings(random_checkpoint,
                                                                           capsys):
    """transformers warns four times (once per DeltaNet kernel) that flash-linear-attention
    and causal-conv1d, CUDA kernels, are not installed; on a CPU nothing can be done about
    it, so a model loaded for the CPU does not show them.  The warnings are there without the
    loader (the first half, or the second could not fail), and come back for a GPU."""
    import logging

    import torch
    import transformers.utils.logging as hf_logging
    from transformers import AutoModelForCausalLM

    from qwengpu.runtime.model_backend import load_checkpoint, quiet_cpu_fallbacks

    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    library = logging.getLogger("transformers")
    library.addHandler(handler)

    def generate(model) -> list[str]:
        seen.clear()
        hf_logging.warning_once.cache_clear()       # each warning is given once a process
        model.generate(torch.tensor([[1, 2, 3, 4, 5]]), max_new_tokens=3, do_sample=False)
        return [message for message in seen if FALLBACK in message]

    try:
        quiet_cpu_fallbacks(False)                  # as after loading a model for a GPU
        stock = AutoModelForCausalLM.from_pretrained(str(random_checkpoint))
        assert len(generate(stock)) == 4, seen
        model, _ = load_checkpoint(random_checkpoint, "cpu", engine="transformers")
        assert generate(model) == [] and generate(stock) == []
        quiet_cpu_fallbacks(False)
        assert len(generate(stock)) == 4
        quiet_cpu_fallbacks(True)
    finally:
        library.removeHandler(handler)
    code, _, err = run_cli(capsys, ["run", str(VECTOR_ADD), "--backend", "model", "--model",
                                    str(random_checkpoint), "--engine", "transformers"])
    assert code == 1 and "error: position" in err and FALLBACK not in err
