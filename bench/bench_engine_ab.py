"""An earlier build against this one, side by side in one process: engine tokens/s.

    python bench/bench_engine_ab.py --baseline CHECKOUT --baseline-model DIR1 --model DIR2

A change to the machine (new instructions, an FPU) or to the engine is held to a bound on
what it costs (say, tokens/s within 10% of the build before).  The two builds' checkpoints
differ and so may their engines, and on a shared 2-core machine two runs minutes apart
differ by 20% on their own, a minute's interference hitting one run and not the other.
So this script keeps a decoding session of each build alive in one process and lets them
take turns of `--chunk` steps (the order swapped every turn), timing every step; it
reports each build's median step time and the ratio of the tokens a second they give:

- the baseline's engine is CHECKOUT's own `qwengpu/engine`, imported under another name
  (`baseline_engine`); it runs DIR1 (compiled by that checkout), on the prompt CHECKOUT's
  loader writes for the kernel (`hdlc launch` run from CHECKOUT);
- this build's engine runs DIR2 on this checkout's prompt;
- `--batch` rows of the launch (default 1) on `--threads` threads (default 1: the
  session's own, numba's set to 1); a session starts again after `--tokens` steps (its
  prefill not timed), so every step is inside the launch.
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


class Stepper:
    """One build's decoding, a step at a time: a session of `batch` rows of the launch,
    started again after `tokens` steps (so every step is inside the launch's trace)."""

    def __init__(self, engine, prompt: list[int], batch: int, tokens: int, threads: int):
        self.engine, self.prompt, self.batch, self.tokens = engine, prompt, batch, tokens
        self.threads = threads
        self.session = None
        self.steps = None

    def step_seconds(self) -> float:
        """The time of the next decode step (a new session's prefill is not counted)."""
        if self.session is None or self.session.steps >= self.tokens:
            self.session = self.engine.session([self.prompt] * self.batch, eos_id=None,
                                               threads=self.threads)
            self.steps = iter(self.session)
            next(self.steps)
        started = time.perf_counter()
        next(self.steps)
        return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the earlier checkout")
    parser.add_argument("--baseline-model", type=Path, required=True,
                        help="a checkpoint that checkout compiled")
    parser.add_argument("--model", type=Path, required=True, help="this build's checkpoint")
    parser.add_argument("--kernel", default="vector_add")
    parser.add_argument("--tokens", type=int, default=500,
                        help="steps of one session before it starts again")
    parser.add_argument("--rounds", type=int, default=40, help="turns of each build")
    parser.add_argument("--chunk", type=int, default=25, help="steps a turn")
    parser.add_argument("--batch", type=int, default=1, help="rows of the same launch")
    parser.add_argument("--threads", type=int, default=1, help="the sessions' threads")
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
        steppers = {name: Stepper(engine, prompt, args.batch, args.tokens, args.threads)
                     for name, (engine, prompt) in builds.items()}
        for stepper in steppers.values():
            for _ in range(30):
                stepper.step_seconds()                 # kernels compiled and cached
        print(f"{args.kernel}: prompts of {len(builds['baseline'][1])} and "
              f"{len(builds['this'][1])} tokens, batch {args.batch}, {args.threads} "
              f"thread(s); the builds "
              f"take turns every {args.chunk} steps, {args.rounds} turns each")
        times: dict[str, list[float]] = {name: [] for name in steppers}
        for turn in range(args.rounds):
            order = ["baseline", "this"] if turn % 2 == 0 else ["this", "baseline"]
            for name in order:
                times[name] += [steppers[name].step_seconds() for _ in range(args.chunk)]
    print(f"{'build':>8} {'median ms/step':>15} {'tokens/s':>9} {'fastest quarter ms':>19}")
    rates = {}
    for name, seconds in times.items():
        ordered = sorted(seconds)
        median, quartile = statistics.median(ordered), ordered[len(ordered) // 4]
        rates[name] = args.batch / median
        print(f"{name:>8} {median * 1e3:>15.3f} {rates[name]:>9.1f} {quartile * 1e3:>19.3f}")
    print(f"this / baseline tokens/s (medians): {rates['this'] / rates['baseline']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
