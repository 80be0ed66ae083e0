"""Soak test: the differential fuzz check of the PTX path (tests/fuzz) on many kernels.

    python bench/soak_ptx.py                              # 1000 kernels from seed 0
    python bench/soak_ptx.py --kernels 20000 --seed 1000000 --budget 600

Each kernel is a random valid PTX kernel (`tests/fuzz/ptx_generator.py`), compiled by the
loader and run on the reference interpreter, and run by the plain PTX evaluator
`tests/fuzz/ptx_reference.py`; the final buffers must agree word for word.  It prints a
progress line every 100 kernels, then the counts and the time; a mismatch is shrunk and
printed with its launch JSON (to save under tests/fuzz/regressions/).  `--budget` stops early
after that many seconds.  The exit status is 1 on any mismatch or error.

`--addresses` runs the address-check fuzz instead (`tests/fuzz/address_fuzz.py`): kernels
whose one address may leave 32 bits; where the reference faults the machine must trap, and
elsewhere the buffers must agree.  It also counts the faults and the kernels whose every
access the loader proved.

`--cooperative` runs the cooperative fuzz instead (`tests/fuzz/cooperative_generator.py`):
kernels whose threads share memory, wait at barriers, use atomics, shuffles and votes,
against `tests/fuzz/cooperative_reference.py`; a kernel that does not fit the machine is
counted as skipped.

`--floats` runs the PTX fuzz with binary32 instructions (`generate_case(seed, floats=True)`:
add, sub, comparisons, min/max, neg/abs, conversions, and a multiply, division, root or
reciprocal routine; docs/fuzzing.md); a kernel that does not fit the machine is counted as
skipped.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

FUZZ = Path(__file__).resolve().parents[1] / "tests" / "fuzz"
if str(FUZZ) not in sys.path:
    sys.path.insert(0, str(FUZZ))

import tempfile  # noqa: E402

import cooperative_differential  # noqa: E402
from address_fuzz import (address_outcomes, describe_disagreement,  # noqa: E402
                          generate_address_case)
from fuzz_differential import LoaderRefused, check_case, does_not_fit, \
    failure_report  # noqa: E402
from cooperative_generator import generate_case as generate_cooperative  # noqa: E402
from ptx_generator import generate_case  # noqa: E402

PROGRESS_EVERY = 100


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=1000, help="kernels to run (1000)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed (0)")
    parser.add_argument("--budget", type=float, default=None,
                        help="stop after this many seconds (no limit)")
    parser.add_argument("--addresses", action="store_true",
                        help="the address-check fuzz (tests/fuzz/address_fuzz.py)")
    parser.add_argument("--cooperative", action="store_true",
                        help="the cooperative fuzz (tests/fuzz/cooperative_generator.py)")
    parser.add_argument("--floats", action="store_true",
                        help="the PTX fuzz with binary32 instructions (generate_case(seed, "
                             "floats=True))")
    args = parser.parse_args(argv)
    if sum((args.cooperative, args.addresses, args.floats)) > 1:
        parser.error("--cooperative, --addresses and --floats are different fuzzes")
    if args.floats:
        skipped = {"skipped (do not fit)": 0}

        def check_floats(seed: int) -> str | None:
            case = generate_case(seed, floats=True)
            try:
                return _differential(case)
            except LoaderRefused as refusal:
                if not does_not_fit(refusal):
                    raise
                skipped["skipped (do not fit)"] += 1
                return None

        return soak(args, "float kernels", check_floats, skipped)
    if args.cooperative:
        skipped = {"skipped (do not fit)": 0}

        def check_cooperative(seed: int) -> str | None:
            case = generate_cooperative(seed)
            try:
                difference = cooperative_differential.check_case(case)
            except cooperative_differential.DoesNotFit:
                skipped["skipped (do not fit)"] += 1
                return None
            return None if difference is None else \
                cooperative_differential.failure_report(case, difference)

        return soak(args, "cooperative kernels", check_cooperative, skipped)
    if not args.addresses:
        return soak(args, "kernels", lambda seed: _differential(generate_case(seed)))
    counts = {"fault (each must trap)": 0, "with every access proven": 0}
    with tempfile.TemporaryDirectory() as folder:

        def check_addresses(seed: int) -> str | None:
            case = generate_address_case(seed)
            expected, got, proven = address_outcomes(case, Path(folder))
            counts["fault (each must trap)"] += isinstance(expected, str)
            counts["with every access proven"] += proven
            return None if expected == got else describe_disagreement(case, expected, got)

        return soak(args, "address kernels", check_addresses, counts)


def _differential(case) -> str | None:
    difference = check_case(case)
    return None if difference is None else failure_report(case, difference)


def soak(args, what: str, check, counts: dict[str, int] | None = None) -> int:
    """Run `check(seed)` (None, or the report of a mismatch) over the seeds, within the
    budget, with progress lines; print the totals (and `counts`, which `check` keeps)."""
    started = time.perf_counter()
    checked, mismatches, errors = 0, [], []
    for seed in range(args.seed, args.seed + args.kernels):
        if args.budget is not None and time.perf_counter() - started > args.budget:
            print(f"budget of {args.budget:g} s spent")
            break
        try:
            report = check(seed)
        except Exception as error:       # a generated kernel one side refused: a bug here
            errors.append(seed)
            print(f"seed {seed}: {type(error).__name__}: {error}")
            report = None
        if report is not None:
            mismatches.append(seed)
            print(report)
        checked += 1
        if checked % PROGRESS_EVERY == 0:
            print(f"{checked} {what}, {time.perf_counter() - started:.1f} s, "
                  f"{len(mismatches)} mismatches, {len(errors)} errors", flush=True)
    elapsed = time.perf_counter() - started
    extra = "".join(f", {count} {name}" for name, count in (counts or {}).items())
    print(f"checked {checked} {what} (seeds {args.seed}..{args.seed + checked - 1}) in "
          f"{elapsed:.1f} s ({checked / max(elapsed, 1e-9):.1f} a second){extra}: "
          f"{len(mismatches)} mismatches {mismatches}, {len(errors)} errors {errors}")
    return 1 if mismatches or errors else 0


if __name__ == "__main__":
    sys.exit(main())
