"""The loader's float routines inside a compiled QwenGPU checkpoint, on many operand sets.

    python bench/float_routines_on_model.py --model DIR --op multiply --operands 10000 \
        --batch 32 --threads 2 --results bench/results/float-routines-min.jsonl

`mul.rn.f32`, `div.rn.f32`, `sqrt.rn.f32` and `fma.rn.f32` are routines of integer
instructions the loader writes (docs/fpu.md); the FPU's add has its own gadget test of 10,240 sums inside a compiled
model.  This script runs the routines themselves inside the model: launches of
`bench/float_routines/multiply.ptx` (`c[i] = __fmul_rn(a[i], b[i])`), `examples/float_divide`
(`c[i] = a[i] / b[i]`), `examples/float_sqrt` (`r[i] = sqrtf(x[i])`) and
`bench/float_routines/fma.ptx` (`c[i] = fmaf(a[i], b[i], c[i])`, on a checkpoint compiled
with `-P PROG_WORDS=256`: the fma routine needs more than 128 slots), 32 threads a launch
(the machine's 8 warps), one operation a thread, their operands drawn as bit patterns by the
tests' own generators (tests/fpu_helpers.py: uniform bits, specials, subnormals, ties,
results at the subnormal and overflow boundaries), `--seed` and up.  Each batch runs on the
sparse engine with the interpreter in lockstep (every record the model writes checked,
`--check`), and each launch's result words are compared with numpy's float32 operation on
the same bits (NaN results as PTX's canonical NaN; for the fma, float64's exact product
and a sum rounded to odd, `fpu_helpers.reference_fma`): an independent reference, never the
project's code.

`--results FILE` appends a JSON line per batch (operation, seeds, operand sets, launches,
records, tokens, seconds, the checkpoint's fingerprint, and "ok" or what differed);
tests/runtime/test_float_routines_results.py holds the lines there to the issue's bar.  The
exit status is 1 when any launch failed.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for folder in (ROOT / "tests", ROOT / "bench"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from corpus_on_model import fingerprint  # noqa: E402
from fpu_helpers import division_pairs, fma_triples, multiply_pairs, reference_divide, \
    reference_fma, reference_multiply, reference_square_root  # noqa: E402

WORDS = 126                       # the machine's global memory
OPERATIONS = {
    # name: (ptx, kernel, operands a launch, inputs, reference, operand generator)
    "multiply": (ROOT / "bench" / "float_routines" / "multiply.ptx", "float_multiply", 32, 2,
                 reference_multiply, multiply_pairs),
    "divide": (ROOT / "examples" / "float_divide" / "kernel.ptx", "float_divide", 32, 2,
               reference_divide, division_pairs),
    "sqrt": (ROOT / "examples" / "float_sqrt" / "kernel.ptx", "float_sqrt", 32, 1,
             reference_square_root, division_pairs),      # the root reads each pair's first
    "fma": (ROOT / "bench" / "float_routines" / "fma.ptx", "float_fma", 32, 3,   # c in place
            reference_fma, fma_triples),
}


def operand_sets(operation: str, seed: int) -> list[np.ndarray]:
    """One launch's inputs (uint32 bit patterns) for `operation`, from `seed`."""
    _, _, count, inputs, _, draw = OPERATIONS[operation]
    drawn = draw(np.random.default_rng(seed), count)
    return [np.asarray(words, dtype=np.uint32) for words in drawn[:inputs]]


def launch_of(operation: str, inputs: list[np.ndarray]) -> dict:
    ptx, kernel, count, _, _, _ = OPERATIONS[operation]
    names = ["a", "b", "c"][:len(inputs)]
    buffers = {name: [int(word) for word in words] for name, words in zip(names, inputs)}
    buffers.setdefault("c", [0] * count)
    names = list(buffers)
    assert sum(len(words) for words in buffers.values()) <= WORDS
    return {"source": str(ptx), "kernel": kernel, "grid": count // 4, "block": 4,
            "buffers": buffers, "args": names}


def expected_words(operation: str, inputs: list[np.ndarray]) -> list[int]:
    reference = OPERATIONS[operation][4]
    return [int(word) for word in np.asarray(reference(*inputs), dtype=np.uint32)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True,
                        help="a QwenGPU checkpoint written by hdlc compile")
    parser.add_argument("--op", choices=sorted(OPERATIONS), required=True)
    parser.add_argument("--operands", type=int, default=1000,
                        help="operand sets to run (rounded up to whole launches)")
    parser.add_argument("--seed", type=int, default=0, help="the first launch's seed")
    parser.add_argument("--batch", type=int, default=32, help="launches a batch")
    parser.add_argument("--threads", type=int, default=1,
                        help="sparse engine: threads the rows are shared over")
    parser.add_argument("--results", type=Path, default=None, metavar="FILE",
                        help="append a JSON line per batch to FILE")
    args = parser.parse_args(argv)

    from qwengpu.errors import UserError
    from qwengpu.runtime.launch import launch_from_dict, machine_limits
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.model_backend import load_checkpoint, run_launches_model

    started = time.perf_counter()
    machine = checkpoint_machine(args.model)
    loaded = load_checkpoint(args.model, None, "sparse")
    checkpoint = fingerprint(args.model)
    per_launch = OPERATIONS[args.op][2]
    seeds = list(range(args.seed, args.seed + -(-args.operands // per_launch)))
    failures = operands = records = tokens = 0
    with tempfile.TemporaryDirectory() as folder:
        for first in range(0, len(seeds), args.batch):
            batch_seeds = seeds[first:first + args.batch]
            cases = [operand_sets(args.op, seed) for seed in batch_seeds]
            launches = [launch_from_dict(launch_of(args.op, inputs), folder,
                                         machine_limits(machine)) for inputs in cases]
            batch_started = time.perf_counter()
            outcomes = run_launches_model(launches, args.model, check=True, progress=False,
                                          machine=machine, loaded=loaded, threads=args.threads)
            problems, batch_records, batch_tokens = [], 0, 0
            for seed, inputs, outcome in zip(batch_seeds, cases, outcomes):
                if isinstance(outcome, UserError):
                    problems.append(f"seed {seed}: {outcome.message}")
                    continue
                if outcome.trap_error() is not None:
                    problems.append(f"seed {seed}: trap {outcome.trap_error().message}")
                    continue
                got = [word & 0xFFFF_FFFF for word in outcome.buffers["c"]]
                want = expected_words(args.op, inputs)
                wrong = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
                if wrong:
                    i = wrong[0]
                    problems.append(f"seed {seed}: {len(wrong)} results differ from numpy, "
                                    f"first c[{i}] = {got[i]:#010x}, want {want[i]:#010x}")
                batch_records += len(outcome.records)
                batch_tokens += outcome.tokens
            seconds = time.perf_counter() - batch_started
            done = per_launch * len(batch_seeds)
            operands += done
            records += batch_records
            tokens += batch_tokens
            failures += len(problems)
            verdict = "ok" if not problems else "; ".join(problems[:3])
            print(f"{args.op}: seeds {batch_seeds[0]}..{batch_seeds[-1]}: {done} operand sets, "
                  f"{batch_records} records, {batch_tokens} tokens, {seconds:.0f} s: {verdict}",
                  flush=True)
            if args.results is not None:
                line = {"operation": args.op, "seeds": [batch_seeds[0], batch_seeds[-1]],
                        "operand_sets": done, "launches": len(batch_seeds),
                        "records": batch_records, "tokens": batch_tokens,
                        "seconds": round(seconds, 1), "verdict": verdict,
                        "checkpoint": checkpoint, "machine": platform.machine(),
                        "threads": args.threads}
                with open(args.results, "a") as file:
                    file.write(json.dumps(line) + "\n")
    seconds = time.perf_counter() - started
    print(f"{args.op}: {operands} operand sets in {len(seeds)} launches, {records} records, "
          f"{tokens} tokens checked in {seconds:.0f} s; {failures} launches failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
