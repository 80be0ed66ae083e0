"""An earlier build against this one, side by side in one process: engine tokens/s.

    python bench/bench_engine_ab.py --baseline CHECKOUT --baseline-model DIR1 --model DIR2

A change to the machine (new instructions, an FPU) or to the engine is held to a bound on
what it costs (say, tokens/s within 10% of the build before).  The two builds' checkpoints
differ and so may their engines, and on a shared 2-core machine two runs minutes apart
differ by 20% on their own.  So this script runs both in one process, round after round,
each round both builds one after the other (the order swapped every round), and reports
the ratio of each round and their median:

- the baseline's engine is CHECKOUT's own `qwengpu/engine`, imported under another name
  (`baseline_engine`); it runs DIR1 (compiled by that checkout), on the prompt CHECKOUT's
  loader writes for the kernel (`hdlc launch` run from CHECKOUT);
- this build's engine runs DIR2 on this checkout's prompt;
- each run: a fresh session, `--tokens` tokens a row after the prefill, one thread,
  `--batch` rows (default 1).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = "import sys; from qwengpu.cli import main; sys.exit(main(sys.argv[1:]))"


def prompt_of(checkout: Path, model: Path, kernel: str) -> list[int]:
    """The launch prompt `checkout`'s own loader writes for examples/KERNEL."""
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "prompt.json"
        done = subprocess.run([sys.executable, "-c", LAUNCH, "launch",
                               f"examples/{kernel}/launch.json", "--model", str(model),
                               "-o", str(output)], cwd=checkout, capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(checkout)})
        if done.returncode:
            raise SystemExit(f"hdlc launch in {checkout} failed:\n{done.stderr}")
        return json.loads(output.read_text())["input_ids"]


def baseline_engine_module(checkout: Path, folder: Path):
    """CHECKOUT's qwengpu/engine as the package `baseline_engine` (imports renamed)."""
    package = folder / "baseline_engine"
    shutil.copytree(checkout / "qwengpu" / "engine", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for source in package.glob("*.py"):
        source.write_text(source.read_text().replace("qwengpu.engine", "baseline_engine"))
    sys.path.insert(0, str(folder))
    return importlib.import_module("baseline_engine")


def tokens_per_second(engine, prompt: list[int], tokens: int, batch: int = 1) -> float:
    """Decode tokens a second (all rows together) after the prefill, one thread."""
    session = engine.session([prompt] * batch, eos_id=None, threads=1)
    started = time.perf_counter()
    for _ in session:
        if session.steps >= tokens:
            for row in range(batch):
                session.end(row)
    seconds = time.perf_counter() - started - session.prefill_seconds
    return (tokens - 1) * batch / seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the earlier checkout")
    parser.add_argument("--baseline-model", type=Path, required=True,
                        help="a checkpoint that checkout compiled")
    parser.add_argument("--model", type=Path, required=True, help="this build's checkpoint")
    parser.add_argument("--kernel", default="vector_add")
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--batch", type=int, default=1, help="rows of the same launch")
    args = parser.parse_args(argv)
    numba.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        baseline = baseline_engine_module(args.baseline.resolve(), Path(folder))
        from qwengpu.engine import SparseEngine

        builds = {
            "baseline": (baseline.SparseEngine.load(args.baseline_model),
                         prompt_of(args.baseline.resolve(), args.baseline_model, args.kernel)),
            "this": (SparseEngine.load(args.model), prompt_of(ROOT, args.model, args.kernel)),
        }
        for engine, prompt in builds.values():
            tokens_per_second(engine, prompt, 30)      # kernels compiled and cached
        print(f"{args.kernel}: prompts of {len(builds['baseline'][1])} and "
              f"{len(builds['this'][1])} tokens, {args.tokens} tokens a row and run, batch "
              f"{args.batch}, one thread")
        print(f"{'round':>5} {'baseline tok/s':>15} {'this tok/s':>11} {'ratio':>6}")
        ratios, figures = [], {"baseline": [], "this": []}
        for round_number in range(args.rounds):
            order = ["baseline", "this"] if round_number % 2 == 0 else ["this", "baseline"]
            measured = {name: tokens_per_second(*builds[name], args.tokens, args.batch)
                        for name in order}
            for name, value in measured.items():
                figures[name].append(value)
            ratios.append(measured["this"] / measured["baseline"])
            print(f"{round_number + 1:>5} {measured['baseline']:>15.1f} "
                  f"{measured['this']:>11.1f} {ratios[-1]:>6.3f}", flush=True)
    print(f"median: baseline {statistics.median(figures['baseline']):.1f}, this "
          f"{statistics.median(figures['this']):.1f} tokens/s; ratio of each round's "
          f"pair: median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, "
          f"max {max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
