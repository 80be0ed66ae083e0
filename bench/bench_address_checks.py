"""Benchmark: what the address checks cost the example corpus (docs/ptx.md "Memory").

    python bench/bench_address_checks.py [--examples DIR]

Each runnable example launch is compiled three ways, in one process, and run on the
interpreter:

- `off`: `"check_addresses": false`, memory addressed by the low word (no checks);
- `default`: the checks, left out where `qwengpu.ptx.ranges` proves them unneeded from the
  launch's own facts (what a launch file gets);
- `all`: every access through a 64-bit register checked (the analysis given no facts).

It prints, per kernel and in all: instruction slots and records of each, whether the
default's code is the unchecked code, and the compile time of every launch without the checks
and with the default (the difference is the range analysis).  Counts,
not times, are the point here: they do not depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qwengpu.errors import UserError  # noqa: E402
from qwengpu.ptx.compile import compile_kernel  # noqa: E402
from qwengpu.ptx.nvcc import ptx_for_source  # noqa: E402
from qwengpu.ptx.parser import parse_ptx  # noqa: E402
from qwengpu.ptx.program import MachineLimits  # noqa: E402
from qwengpu.ptx.ranges import default_facts  # noqa: E402
from qwengpu.runtime.launch import launch_for_program, launch_from_dict, run_launch_sim  # noqa: E402,E501


def _launch(path: Path, mode: str):
    data = json.loads(path.read_text())
    if mode != "all":
        return launch_from_dict({**data, "check_addresses": mode == "default"},
                                base_dir=str(path.parent))
    # the analysis told nothing of the arguments: no pointer is bounded, every access checked
    source, text = ptx_for_source(str(path.parent / data["source"]))
    module = parse_ptx(text, source)
    kernel = module.kernels[data["kernel"]]
    knowing_nothing = replace(default_facts(kernel, MachineLimits(), module.address_size // 8),
                              params={})
    program = compile_kernel(module, data["kernel"], facts=knowing_nothing)
    return launch_for_program(program, data["grid"], data["block"], data["buffers"],
                              data["args"])


def measure(examples: Path) -> list[dict]:
    rows = []
    for path in sorted(examples.rglob("launch.json")):
        row = {"kernel": str(path.parent.relative_to(examples))}
        for mode in ("off", "default", "all"):
            try:
                launch = _launch(path, mode)
            except UserError as error:
                row[mode], row[f"{mode}_code"] = None, None
                row.setdefault("error", f"{mode}: " + str(error).splitlines()[0])
                continue
            row[mode] = (len(launch.program.slots), len(run_launch_sim(launch).records))
            row[f"{mode}_code"] = [slot.instruction for slot in launch.program.slots]
        rows.append(row)
    return rows


def compile_seconds(examples: Path) -> dict[str, float]:
    """Seconds compiling every example's launch without the checks and with the default."""
    seconds = {}
    for mode in ("off", "default"):
        start = time.perf_counter()
        for path in sorted(examples.rglob("launch.json")):
            try:
                _launch(path, mode)
            except UserError:
                pass
        seconds[mode] = time.perf_counter() - start
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=Path, default=ROOT / "examples")
    args = parser.parse_args(argv)
    rows = measure(args.examples)
    print(f"{'kernel':22s} {'slots off/default/all':>22s} {'records off/default/all':>24s}  "
          "default = off")
    modes = ("off", "default", "all")
    totals = {mode: [0, 0] for mode in modes}
    for row in rows:
        if row["off"] is None:
            print(f"{row['kernel']:22s} refused ({row['error']})")
            continue
        slots = "/".join(str(row[mode][0]) if row[mode] else "-" for mode in modes)
        records = "/".join(str(row[mode][1]) if row[mode] else "-" for mode in modes)
        same = "yes" if row["default_code"] == row["off_code"] else "NO"
        note = f"  ({row['error']})" if "error" in row else ""
        print(f"{row['kernel']:22s} {slots:>22s} {records:>24s}  {same}{note}")
    measured = [row for row in rows if all(row[mode] for mode in modes)]
    for row in measured:
        for mode in modes:
            totals[mode][0] += row[mode][0]
            totals[mode][1] += row[mode][1]
    compiled = [row for row in rows if row["off"] is not None]
    same = sum(row["default_code"] == row["off_code"] for row in compiled)
    print(f"\n{len(compiled)} kernels compile; default code = unchecked code in {same}")
    print(f"over the {len(measured)} that compile all three ways:")
    for mode, (slots, records) in totals.items():
        print(f"  {mode:8s} {slots:6d} slots {records:7d} records "
              f"({records / totals['off'][1]:.2f}x the unchecked)")
    seconds = compile_seconds(args.examples)
    print(f"compiling every launch: {seconds['off']:.2f} s without the checks, "
          f"{seconds['default']:.2f} s with the default (the range analysis)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
