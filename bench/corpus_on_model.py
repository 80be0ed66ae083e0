"""The example corpus inside a compiled QwenGPU checkpoint, every kernel checked.

    python bench/corpus_on_model.py --model DIR                      # every example, 8 a batch
    python bench/corpus_on_model.py --model DIR --kernels vector_add,unseen/gcd --batch 2
    python bench/corpus_on_model.py --model DIR --max-records 120 --budget 540 --device cuda
    python bench/corpus_on_model.py --model DIR --results corpus.jsonl --resume   # go on
    python bench/corpus_on_model.py --model DIR --results corpus.jsonl --resume --pause-at 9000

Kernels run shortest first (by the interpreter's record count), in batches of `--batch` launches
(a row a launch: docs/trace.md, "Several launches at once"), on the sparse engine
(`--engine transformers`: stock `generate()`, one call a batch), with the interpreter in
lockstep (`--check`). A kernel passes when the model wrote the interpreter's
trace to its `<eos>` and its buffers (or its trap) equal its expected.json, which its
independent model.py wrote. Kernels whose expected.json is an error are refused by the loader
before any model runs (reported, not run); kernels that do not fit the checkpoint's machine
are skipped. `--max-records N` leaves out kernels longer than N records; after `--budget`
seconds no new batch starts. While a batch runs it writes a progress line to stderr every
`--progress-every` seconds (each row's records so far, the new tokens/s); it prints a line per
kernel as its batch ends (records, tokens, the batch's seconds, when its first new token
came) and a summary; the exit status is 1 when a kernel failed.

The corpus takes longer than one sitting on a CPU (hours of tokens), so a run can be spread
over several: `--results FILE` appends a JSON line per kernel run (its verdict, records,
tokens, seconds and the checkpoint's fingerprint: the SHA-256 of its weights, config and
protocol), and `--resume` skips the kernels FILE already records as passed on a checkpoint
with the same fingerprint (a recompiled machine with other weights starts again).  Some
launches alone take longer than a sitting (fib_limit: 58,000 tokens): `--pause-at SECONDS`
stops the batch still running then, and writes each unfinished launch's line with the ids
its model wrote so far (verdict "unfinished"); `--resume` goes on from them (checked again,
then given after the prompt as a chunked prefill: docs/trace.md, "A launch over several
sittings").  The line of a launch that ends says how many of its tokens earlier sittings
wrote (`resumed_tokens`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

from _int32 import to_signed  # noqa: E402  (examples/_int32.py: words as int32)


def verdict(result, expected: dict) -> str:
    """'ok' when the model's outcome is the one expected.json gives, else what differs."""
    if "trap" in expected:
        trap = result.trap_error()
        return "ok" if trap is not None and expected["trap"] in trap.message.lower() else \
            f"expected a {expected['trap']} trap, got {trap.message if trap else 'none'}"
    if result.trap_error() is not None:
        return f"unexpected trap: {result.trap_error().message}"
    got = {name: [to_signed(word) for word in words] for name, words in result.buffers.items()}
    differing = [name for name in expected["buffers"] if got.get(name) != expected["buffers"][name]]
    return "ok" if not differing else f"buffers differ: {', '.join(differing)}"


def fingerprint(model: Path) -> str:
    """SHA-256 over the checkpoint's weights, config and protocol: what its results depend on."""
    digest = hashlib.sha256()
    for name in ("model.safetensors", "config.json", "protocol.json"):
        with open(model / name, "rb") as file:
            while chunk := file.read(1 << 24):
                digest.update(chunk)
    return digest.hexdigest()


def results_before(results: Path, checkpoint: str) -> tuple[set[str], dict[str, list[int]]]:
    """What `results` records on the checkpoint with this fingerprint: the kernels that
    passed, and the ids so far of those whose latest line is unfinished."""
    passed, unfinished = set(), {}
    if not results.exists():
        return passed, unfinished
    for number, text in enumerate(results.read_text().splitlines(), 1):
        try:
            line = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as error:
            raise SystemExit(f"{results}:{number}:{error.colno}: not a JSON line: {error.msg}")
        if line.get("checkpoint") != checkpoint:
            continue
        unfinished.pop(line["kernel"], None)
        if line.get("verdict") == "ok":
            passed.add(line["kernel"])
        elif line.get("verdict") == "unfinished":
            unfinished[line["kernel"]] = line["ids"]
    return passed, unfinished


def main(argv: list[str] | None = None) -> int:
    from qwengpu.runtime.model_backend import DEFAULT_ENGINE, ENGINES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True,
                        help="a QwenGPU checkpoint written by hdlc compile")
    parser.add_argument("--kernels", help="comma-separated example names (default: all, "
                                          "unseen/ included)")
    parser.add_argument("--batch", type=int, default=8, help="launches per generate() call")
    parser.add_argument("--max-records", type=int, default=None, metavar="N",
                        help="leave out kernels of more than N records")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help="start no new batch after this many seconds")
    parser.add_argument("--device", default=None, help="torch device (cpu, cuda) of "
                                                        "--engine transformers")
    parser.add_argument("--engine", choices=ENGINES, default=DEFAULT_ENGINE,
                        help="what runs the checkpoint (default: the sparse engine)")
    parser.add_argument("--threads", type=int, default=1,
                        help="sparse engine: threads the rows are shared over")
    parser.add_argument("--results", type=Path, default=None, metavar="FILE",
                        help="append a JSON line per kernel run to FILE")
    parser.add_argument("--resume", action="store_true",
                        help="skip the kernels --results FILE records as passed on this "
                             "checkpoint, go on with the unfinished ones")
    parser.add_argument("--pause-at", type=float, default=None, metavar="SECONDS",
                        help="stop the batch running at this many seconds and write its "
                             "unfinished launches to --results, for --resume")
    parser.add_argument("--progress-every", type=float, default=600, metavar="SECONDS",
                        help="a progress line (each row's records, tokens/s) to stderr this "
                             "often while a batch runs (default 600; 0: none)")
    args = parser.parse_args(argv)
    if args.resume and args.results is None:
        parser.error("--resume needs --results FILE")
    if args.pause_at is not None and args.results is None:
        parser.error("--pause-at needs --results FILE (where the unfinished launches go)")

    from qwengpu.trace.protocol import TraceProtocol
    from qwengpu.errors import UserError
    from qwengpu.runtime.launch import load_launch, machine_limits, run_launch_sim
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.model_backend import Unfinished, load_checkpoint, model_device, \
        run_launches_model

    started = time.perf_counter()
    machine = checkpoint_machine(args.model)
    tokens_per_record = TraceProtocol.load(args.model).tokens_per_record
    checkpoint = fingerprint(args.model) if args.results else None
    done, earlier = results_before(args.results, checkpoint) if args.resume else (set(), {})
    names = args.kernels.split(",") if args.kernels else sorted(
        str(path.parent.relative_to(EXAMPLES)) for path in EXAMPLES.rglob("launch.json"))
    runnable = []                      # (records left, name, launch, expected, earlier ids)
    failures = 0
    for name in names:
        if name in done:
            print(f"{name:<22} passed before on this checkpoint ({args.results})")
            continue
        expected = json.loads((EXAMPLES / name / "expected.json").read_text())
        try:
            launch = load_launch(EXAMPLES / name / "launch.json", machine_limits(machine))
        except UserError as error:
            if "error" in expected and expected["error"] in error.message.lower():
                print(f"{name:<22} refused as expected.json says ({expected['error']})")
            elif "error" in expected:
                failures += 1
                print(f"{name:<22} FAILED: refused with another error: {error.message}")
            else:
                print(f"{name:<22} skipped: does not fit this machine ({error.message})")
            continue
        records = len(run_launch_sim(launch, machine=machine).records)
        if args.max_records is not None and records > args.max_records:
            print(f"{name:<22} left out: {records} records > --max-records")
            continue
        ids = earlier.get(name, [])
        if ids:
            print(f"{name:<22} goes on after the {len(ids)} tokens of an earlier sitting")
        left = records - len(ids) // tokens_per_record
        runnable.append((left, name, launch, expected, ids))
    runnable.sort(key=lambda entry: entry[0])
    loaded = load_checkpoint(args.model, args.device, args.engine)
    device = model_device(loaded[0])
    print(f"machine: {platform.machine()}, engine: {args.engine} on {device}; "
          f"{len(runnable)} kernels in batches of {args.batch}", flush=True)
    passed = tokens_in_all = paused = 0
    for first in range(0, len(runnable), args.batch):
        spent = time.perf_counter() - started
        if any(limit is not None and spent > limit for limit in (args.budget, args.pause_at)):
            print(f"budget spent: {len(runnable) - first} kernels not run")
            break
        batch = runnable[first:first + args.batch]
        where = {"checkpoint": checkpoint, "machine": platform.machine(),
                 "engine": args.engine, "device": device, "batch": len(batch)}
        outcomes = run_launches_model(
            [entry[2] for entry in batch], args.model, check=True, progress=False,
            machine=machine, loaded=loaded, resume_ids=[entry[4] for entry in batch],
            pause_seconds=None if args.pause_at is None else args.pause_at - spent,
            progress_every=args.progress_every or None, threads=args.threads)
        for (_, name, _, expected, ids), outcome in zip(batch, outcomes):
            if isinstance(outcome, UserError):
                failures += 1
                print(f"{name:<22} FAILED: {outcome.message}")
                record_result(args.results, where, name, outcome.message)
                continue
            if isinstance(outcome, Unfinished):
                paused += 1
                tokens_in_all += outcome.tokens - len(ids)
                record_result(args.results, where, name, "unfinished", outcome, ids)
                print(f"{name:<22} unfinished at {outcome.records} records, {outcome.tokens} "
                      f"tokens (--resume goes on); batch of {len(batch)}: "
                      f"{outcome.seconds:.1f} s{first_token_note(outcome)}", flush=True)
                continue
            result = verdict(outcome, expected)
            record_result(args.results, where, name, result, outcome, ids)
            failures += result != "ok"
            passed += result == "ok"
            tokens_in_all += outcome.tokens - len(ids)
            resumed = f", {len(ids)} of them earlier" if ids else ""
            print(f"{name:<22} {result if result == 'ok' else 'FAILED: ' + result:<6} "
                  f"{len(outcome.records):>5} records {outcome.tokens:>6} tokens "
                  f"(prompt {outcome.prompt_tokens}{resumed}); batch of {len(batch)}: "
                  f"{outcome.seconds:.1f} s{first_token_note(outcome)}", flush=True)
    seconds = time.perf_counter() - started
    unfinished = f", {paused} unfinished" if paused else ""
    print(f"{passed} passed, {failures} failed{unfinished}; {tokens_in_all} trace tokens in "
          f"{seconds:.0f} s in all ({tokens_in_all / seconds:.1f} tokens/s)")
    return 1 if failures else 0


def first_token_note(outcome) -> str:
    """How long the batch took to its first new id (the prefill: prompts and earlier ids)."""
    if outcome.first_token_seconds is None:
        return ""
    return f" (first new token after {outcome.first_token_seconds:.1f} s)"


def record_result(results: Path | None, where: dict, name: str, verdict_: str,
                  outcome=None, earlier_ids: list[int] = ()) -> None:
    """Append one kernel's outcome to `--results` (nothing without it); `where` names the
    checkpoint's fingerprint, the machine, the device and the batch size.  An unfinished
    launch's line carries its ids so far; a resumed one's says how many earlier sittings
    wrote."""
    if results is None:
        return
    line = {"kernel": name, "verdict": verdict_, **where}
    if verdict_ == "unfinished":
        line.update(records=outcome.records, tokens=outcome.tokens,
                    batch_seconds=round(outcome.seconds, 1), ids=outcome.ids)
    elif outcome is not None:
        line.update(records=len(outcome.records), tokens=outcome.tokens,
                    prompt_tokens=outcome.prompt_tokens, batch_seconds=round(outcome.seconds, 1))
        if earlier_ids:
            line["resumed_tokens"] = len(earlier_ids)
    if outcome is not None and outcome.first_token_seconds is not None:
        line["first_token_seconds"] = round(outcome.first_token_seconds, 1)
    with open(results, "a") as file:
        file.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    sys.exit(main())
