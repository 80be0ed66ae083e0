"""Benchmark: example kernels on the reference interpreter and on a compiled model, side by side.

    python bench/bench_launch.py                        # interpreter only
    python bench/bench_launch.py --model DIR            # and the compiled checkpoint in DIR
    python bench/bench_launch.py --model DIR --kernels vector_add,saxpy_int --device cuda
    python bench/bench_launch.py --model DIR --batch    # the kernels as one batch
    python bench/bench_launch.py --model DIR --engine transformers   # stock generate()

For each kernel it prints records, tokens per record, records/s and thread-instructions/s (a
thread-instruction is one active lane of one record) for both backends, run one after the
other in this process, and whether the model's records and buffers equal the interpreter's
(the model runs with `--check`: a row that leaves the interpreter's trace stops there and
prints its error). With `--batch` the model runs every kernel at once, a row each (docs/trace.md,
"Several launches at once"): a kernel's rates are its records over the whole batch's time,
and a last line gives the batch's total. The exit status is 1 when the model failed or
differed on a kernel. With a model it also prints the checkpoint's nonzero
weights per layer. Figures depend on the machine: quote them with the machine named, or as
ratios.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_KERNELS = ["vector_add", "saxpy_int", "bit_ops", "divergent_if", "sum_to_tid"]


def thread_instructions(records: list[dict[str, int]]) -> int:
    return sum(bin(record["active"]).count("1") for record in records)


def time_interpreter(launch, repeats: int, machine) -> tuple[object, float]:
    from qwengpu.runtime.launch import run_launch_sim

    run_launch_sim(launch, machine=machine)                 # warm the compiled step function
    started = time.perf_counter()
    for _ in range(repeats):
        result = run_launch_sim(launch, machine=machine)
    return result, (time.perf_counter() - started) / repeats


def nonzeros_per_layer(model_dir: Path) -> dict[str, int]:
    from safetensors import safe_open

    counts: dict[str, int] = defaultdict(int)
    for path in sorted(model_dir.glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as tensors:
            for name in tensors.keys():
                parts = name.split(".")
                key = f"layer {int(parts[parts.index('layers') + 1]):2d}" \
                    if "layers" in parts else parts[-2]
                counts[key] += int((tensors.get_tensor(name) != 0).sum())
    return dict(sorted(counts.items()))


def _device_name(device: str | None) -> str:
    import torch

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a checkpoint written by hdlc compile")
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS))
    parser.add_argument("--device", default=None, help="torch device for --engine "
                                                        "transformers (cpu, cuda)")
    parser.add_argument("--engine", default="sparse", choices=("sparse", "transformers"),
                        help="what runs the model (default: the sparse engine)")
    parser.add_argument("--repeats", type=int, default=20, help="interpreter repetitions")
    parser.add_argument("--batch", action="store_true",
                        help="run the kernels on the model as one batch (a row each)")
    args = parser.parse_args(argv)

    from qwengpu.errors import UserError
    from qwengpu.runtime.launch import load_launch, machine_limits
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.machine_state import load_machine

    # the machine the checkpoint was compiled from (or the default one), for both backends
    machine = checkpoint_machine(args.model) if args.model else load_machine()

    on_cpu = args.engine == "sparse" and args.device in (None, "cpu")   # its compiled kernels
    where = "cpu" if on_cpu else _device_name(args.device)
    print(f"machine: {platform.machine()} {platform.processor() or ''} python "
          f"{platform.python_version()}; model: {args.engine} engine on {where}")
    header = (f"{'kernel':<16} {'backend':<12} {'records':>8} {'tok/rec':>8} {'records/s':>11} "
              f"{'thread-instr/s':>15} {'seconds':>9}  same")
    print(header)
    print("-" * len(header))
    names = args.kernels.split(",")
    launches = [load_launch(ROOT / "examples" / name / "launch.json", machine_limits(machine))
                for name in names]
    timed = [time_interpreter(launch, args.repeats, machine) for launch in launches]
    outcomes = [None] * len(names)
    failed = False
    if args.model:
        from qwengpu.runtime.model_backend import load_checkpoint, run_launches_model

        loaded = load_checkpoint(args.model, args.device, args.engine)
    if args.model and args.batch:
        outcomes = run_launches_model(launches, args.model, check=True, progress=False,
                                      machine=machine, loaded=loaded)
    for index, (name, launch, (sim, seconds)) in enumerate(zip(names, launches, timed)):
        count = len(sim.records)
        print(f"{name:<16} {'interpreter':<12} {count:>8} {'-':>8} {count / seconds:>11.1f} "
              f"{thread_instructions(sim.records) / seconds:>15.1f} {seconds:>9.4f}  -")
        if not args.model:
            continue
        if not args.batch:
            outcomes[index], = run_launches_model([launch], args.model, check=True,
                                                  progress=False, machine=machine,
                                                  loaded=loaded)
        result = outcomes[index]
        if isinstance(result, UserError):
            failed = True
            print(f"{'':<16} {'model':<12} failed: {result.message}")
            continue
        same = result.buffers == sim.buffers and result.records == sim.records
        failed |= not same
        records = len(result.records)
        print(f"{'':<16} {'model':<12} {records:>8} {result.tokens / max(records, 1):>8.1f} "
              f"{records / result.seconds:>11.3f} "
              f"{thread_instructions(result.records) / result.seconds:>15.3f} "
              f"{result.seconds:>9.2f}  {'yes' if same else 'NO'}")
        if not args.batch:
            print(f"{'':<16} {'ratio':<12} interpreter is {result.seconds / seconds:,.0f}x "
                  "faster")
    done = [result for result in outcomes if result is not None
            and not isinstance(result, UserError)]
    if args.batch and done:
        batch_seconds = done[0].seconds
        records = sum(len(result.records) for result in done)
        tokens = sum(result.tokens for result in done)
        work = sum(thread_instructions(result.records) for result in done)
        print(f"{'batch of ' + str(len(names)):<16} {'model':<12} {records:>8} "
              f"{tokens / max(records, 1):>8.1f} {records / batch_seconds:>11.3f} "
              f"{work / batch_seconds:>15.3f} {batch_seconds:>9.2f}  "
              f"({tokens / batch_seconds:.2f} tokens/s)")
        interpreter_seconds = sum(seconds for _, seconds in timed)
        print(f"{'':<16} {'ratio':<12} interpreter (the kernels one after the other) is "
              f"{batch_seconds / interpreter_seconds:,.0f}x faster")
    if args.model:
        print("\nnonzero weights per layer:")
        print(json.dumps(nonzeros_per_layer(args.model), indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
