"""`hdlc compile SPEC --target NAME -o DIR`: compile a spec into a Qwen3.5 checkpoint.

The steps of `qwengpu.compiler.compile`: parse and elaborate, build the graph, run the passes
(`--passes a,b,c`, default the default pipeline), plan, choose the encodings, schedule into
45 layers (`--target min` sizes the shape from the schedule; any name under specs/targets/ or
a .toml path is a fixed shape), allocate the residual, emit the weights and write the
checkpoint directory, with machine.json recording the spec's name and text and the `-P`
parameters, the machine `hdlc run --model DIR` then runs (`qwengpu.runtime.machine_file`).
`--dump-after STEP` prints a step's output (the IR, the plan, the schedule, the residual
layout, ...), `--stop-after STEP` stops there, `--stats` prints every step's time and
output and the passes' table, `--check` verifies each IR after its step.  `--dtype float32` (the default) or
`bfloat16`: bf16 is written only on request, after the tests proved the spec exact in it;
`schedule.txt` in the directory states the decision.  `--encoding binary` (float32's
default) holds every value whose readers allow it as one signed dim per bit, a quarter of
the residual; `onehot` (bfloat16's default and only choice) one dim per value.  Progress and the compile time go to
stderr; `--schedule` prints the schedule to stdout.
"""

from __future__ import annotations

import argparse
import sys
import time

from qwengpu.commands.check import add_parameter_option, parse_overrides
from qwengpu.passes.pipeline import parse_pass_names

# qwengpu.compiler.STEPS, named here so that building the command line does not import the
# compiler (torch, transformers); tests/test_compiler.py holds the two to each other.
STEP_NAMES = "load, graph, passes, plan, encodings, schedule, allocate, emit, write"

NAME = "compile"
HELP = "compile an HDL spec into a Qwen3.5 checkpoint (45 layers)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", help="the HDL spec, e.g. specs/counter.hdl")
    add_parameter_option(parser)
    parser.add_argument("--target", default="min",
                        help="target shape: min, qwen3.5-2b, or a .toml file (default min)")
    parser.add_argument("-o", "--output", metavar="DIR", help="checkpoint directory to write")
    parser.add_argument("--passes", metavar="A,B,C", help="passes to run (default pipeline)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                        help="checkpoint precision (default float32)")
    parser.add_argument("--encoding", choices=("binary", "onehot"),
                        help="residual values: binary where readable (float32's default; "
                             "docs/schedule.md, \"Binary values\") or all one-hot "
                             "(bfloat16's, the only one bf16 allows)")
    parser.add_argument("--schedule", action="store_true", help="print the schedule")
    parser.add_argument("--dump-after", metavar="STEP", action="append", default=[],
                        help=f"print the output of a step (repeatable): {STEP_NAMES}")
    parser.add_argument("--stop-after", metavar="STEP",
                        help="stop after a step (default: write with -o, else allocate)")
    parser.add_argument("--stats", action="store_true",
                        help="print every step's time and output, and the passes' table")
    parser.add_argument("--check", action="store_true",
                        help="verify the graph, the plan and the schedule after their steps")
    parser.set_defaults(parser=parser)


def run(args: argparse.Namespace) -> int:
    import torch

    from qwengpu.backend_torch.schedule import format_schedule
    from qwengpu.compiler import STEPS, compile, format_stats

    names = parse_pass_names(args.passes)
    if not args.output and not (args.schedule or args.dump_after or args.stats or
                                args.stop_after):
        args.parser.error("give -o DIR (or --schedule, --dump-after, --stats or --stop-after "
                          "to compile without writing)")
    stop_after = args.stop_after
    if stop_after is None and not args.output:
        stop_after = max(["schedule", *args.dump_after], key=STEPS.index) \
            if set(args.dump_after) <= set(STEPS) else "schedule"
    if stop_after in STEPS and STEPS.index(stop_after) == len(STEPS) - 1 and not args.output:
        args.parser.error("--stop-after write needs -o DIR")
    start = time.perf_counter()

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=sys.stderr)

    result = compile(args.spec, args.target, params=parse_overrides(args.param, args.parser),
                     passes=names, encoding=args.encoding, dtype=getattr(torch, args.dtype),
                     output=args.output, stop_after=stop_after, dump_after=args.dump_after,
                     progress=say, check=args.check)
    if args.schedule:
        print(format_schedule(result.schedule), end="")
    if args.stats:
        print(format_stats(result), end="")
    say(f"compile time {time.perf_counter() - start:.1f} s")
    return 0
