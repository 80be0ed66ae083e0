"""Benchmark: what each example kernel costs a compiled model in tokens, from the interpreter.

    python bench/bench_tokens.py                                  # specs/qwengpu.hdl
    python bench/bench_tokens.py --spec OLD.hdl --spec specs/qwengpu.hdl   # before and after
    python bench/bench_tokens.py --kernels vector_add,serial_mad

Tokens are the model's unit of work: every figure of a run on a model (time, cache memory,
the length of the trace a person reads) scales with them.  For each kernel of the corpus
(examples/ and examples/unseen/) and each spec, side by side, it prints the records the
reference interpreter writes, the tokens of the trace the model would write for them (`<eos>`
included), tokens per record and the prompt's tokens; then, per spec, the corpus average of
tokens per record and the record kinds (by opcode) that cost the most.  No model runs: the
count is the trace protocol's encoding of the interpreter's records
(`qwengpu.runtime.prompt.trace_cost`), the trace a model that runs the kernel exactly writes.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def corpus() -> list[str]:
    """Every example with a launch file, unseen/ ones included, by name."""
    return sorted(str(path.parent.relative_to(EXAMPLES))
                  for path in EXAMPLES.rglob("launch.json"))


def measure(spec: Path, kernels: list[str]) -> tuple[dict[str, tuple], dict[str, list[int]]]:
    """Per kernel (records, trace tokens, prompt tokens) or its error text; per opcode the
    token counts of its records."""
    from qwengpu.errors import UserError
    from qwengpu.isa import Op
    from qwengpu.runtime.launch import load_launch, machine_limits, run_launch_sim
    from qwengpu.runtime.machine_state import load_machine
    from qwengpu.runtime.prompt import trace_cost
    from qwengpu.trace.protocol import TraceProtocol

    machine = load_machine(spec)
    protocol = TraceProtocol.from_design(machine.design)
    rows, kinds = {}, defaultdict(list)
    for name in kernels:
        try:
            launch = load_launch(EXAMPLES / name / "launch.json", machine_limits(machine))
            result = run_launch_sim(launch, machine=machine)
        except UserError as error:
            rows[name] = (error.render().splitlines()[0],)
            continue
        tokens, prompt = trace_cost(launch, result.records, machine, protocol)
        rows[name] = (len(result.records), tokens, prompt)
        for record in result.records:
            kinds[Op(record["op"]).name.lower()].append(len(protocol.encode_record(record)))
    return rows, kinds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, action="append", metavar="FILE",
                        help="a machine spec (repeat to compare; default specs/qwengpu.hdl)")
    parser.add_argument("--kernels", help="comma-separated example names (default: all)")
    args = parser.parse_args(argv)
    specs = args.spec or [ROOT / "specs" / "qwengpu.hdl"]
    kernels = args.kernels.split(",") if args.kernels else corpus()
    sys.path.insert(0, str(ROOT))
    measured = [measure(spec, kernels) for spec in specs]

    for number, spec in enumerate(specs):
        print(f"spec {number}: {spec}")
    header = f"{'kernel':24s}" + "".join(
        f" | {'records':>7s} {'tokens':>7s} {'tok/rec':>7s} {'prompt':>6s}" for _ in specs)
    print(header)
    print("-" * len(header))
    for name in kernels:
        cells = []
        for rows, _ in measured:
            row = rows[name]
            if len(row) == 1:
                cells.append(f" | {'(refused, below)':>30s}")
            else:
                records, tokens, prompt = row
                cells.append(f" | {records:7d} {tokens:7d} {tokens / records:7.1f} {prompt:6d}")
        print(f"{name:24s}" + "".join(cells))
    print()
    for number, (rows, _) in enumerate(measured):
        for name, row in rows.items():
            if len(row) == 1:
                print(f"spec {number}: {name} refused: {row[0]}")
    for number, (rows, kinds) in enumerate(measured):
        ran = [row for row in rows.values() if len(row) == 3]
        records = sum(row[0] for row in ran)
        tokens = sum(row[1] for row in ran)
        mean_per_kernel = sum(row[1] / row[0] for row in ran) / len(ran)
        print(f"spec {number}: {len(ran)} kernels, {records} records, {tokens} trace tokens: "
              f"{tokens / records:.1f} tokens per record over the corpus, "
              f"{mean_per_kernel:.1f} the mean of the kernels' figures")
        worst = sorted(kinds.items(), key=lambda item: -max(item[1]))[:5]
        print("  costliest record kinds (most tokens, mean): " + ", ".join(
            f"{kind} {max(counts)} ({sum(counts) / len(counts):.1f})" for kind, counts in worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
