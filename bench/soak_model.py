"""Soak test of the model: random kernels inside a compiled QwenGPU checkpoint, every token
checked against the reference interpreter.

    python bench/soak_model.py --model DIR                         # 32 kernels from seed 0
    python bench/soak_model.py --model DIR --kernels 640 --batch 32 --threads 2 --budget 3000

The kernels are the differential fuzz tests' random PTX kernels (`tests/fuzz/ptx_generator.py`:
arithmetic, compares, selects, divergent branches, bounded loops, loads and stores, up to 8
warps and 3 blocks), each a different program and machine state (memory, parameters, grid and
block).  They run in batches of `--batch` launches (a row a launch) on the sparse engine
(`--engine transformers` for stock transformers), with the interpreter in lockstep
(`--check`: the first token that differs ends its row, naming record and field).  A kernel
the checkpoint's machine cannot hold (registers, memory, warps) is skipped and counted.  It
prints a line per batch (kernels, records, tokens, mismatches, seconds) and a summary; after
`--budget` seconds no new batch starts.  The exit status is 1 on any mismatch or error.
`--cooperative` runs the cooperative fuzz's kernels instead (`tests/fuzz/cooperative_generator.py`:
shared memory, barriers, atomics, shuffles, votes, byte stores).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

FUZZ = Path(__file__).resolve().parents[1] / "tests" / "fuzz"
if str(FUZZ) not in sys.path:
    sys.path.insert(0, str(FUZZ))

import cooperative_generator  # noqa: E402
import ptx_generator  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True,
                        help="a checkpoint hdlc compile wrote")
    parser.add_argument("--kernels", type=int, default=32, help="random kernels to run (32)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed (0)")
    parser.add_argument("--batch", type=int, default=32, help="launches per batch (32)")
    parser.add_argument("--threads", type=int, default=1,
                        help="sparse engine: threads the rows are shared over")
    parser.add_argument("--engine", choices=("sparse", "transformers"), default="sparse")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help="start no batch after this many seconds")
    parser.add_argument("--cooperative", action="store_true",
                        help="the cooperative fuzz's kernels (threads that cooperate)")
    args = parser.parse_args(argv)
    generate_case = (cooperative_generator if args.cooperative else ptx_generator).generate_case

    from qwengpu.errors import UserError
    from qwengpu.runtime.launch import launch_from_dict, machine_limits
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.model_backend import load_checkpoint, run_launches_model

    started = time.perf_counter()
    machine = checkpoint_machine(args.model)
    loaded = load_checkpoint(args.model, None, args.engine)
    seeds = list(range(args.seed, args.seed + args.kernels))
    kernels = records = tokens = skipped = 0
    failed: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        for first in range(0, len(seeds), args.batch):
            if args.budget is not None and time.perf_counter() - started > args.budget:
                print(f"budget of {args.budget:g} s spent: {len(seeds) - first} kernels not run")
                break
            launches, names = [], []
            for seed in seeds[first:first + args.batch]:
                case = generate_case(seed)
                (Path(folder) / f"fuzz_{seed}.ptx").write_text(case.ptx)
                try:
                    launches.append(launch_from_dict(case.launch_json(f"fuzz_{seed}.ptx"),
                                                     folder, machine_limits(machine)))
                    names.append(f"seed {seed}")
                except UserError:          # does not fit this checkpoint's machine
                    skipped += 1
            batch_started = time.perf_counter()
            outcomes = run_launches_model(launches, args.model, check=True, progress=False,
                                          machine=machine, loaded=loaded, threads=args.threads)
            batch_failed = 0
            for name, outcome in zip(names, outcomes):
                if isinstance(outcome, UserError):
                    batch_failed += 1
                    failed.append(f"{name}: {outcome.message}")
                    print(f"{name}: FAILED: {outcome.message}", flush=True)
                    continue
                kernels += 1
                records += len(outcome.records)
                tokens += outcome.tokens
            print(f"batch of {len(launches)} (seeds {seeds[first]}..): {batch_failed} failed; "
                  f"{kernels} kernels, {records} records, {tokens} tokens so far; "
                  f"{time.perf_counter() - batch_started:.1f} s", flush=True)
    seconds = time.perf_counter() - started
    print(f"{kernels} kernels passed, {len(failed)} failed, {skipped} skipped (do not fit); "
          f"{records} records and {tokens} trace tokens checked in {seconds:.0f} s "
          f"({tokens / seconds:.1f} tokens/s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
