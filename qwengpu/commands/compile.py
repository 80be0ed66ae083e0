"""`hdlc compile SPEC --target NAME -o DIR`: compile a spec into a Qwen3.5 checkpoint.

Parse, elaborate, run the passes (`--passes a,b,c`, default the default pipeline), plan and
schedule into 45 layers (`--target min` sizes the shape from the schedule; any name under
specs/targets/ or a .toml path is a fixed shape), emit the weights and write the checkpoint
directory (see `qwengpu.backend_torch.checkpoint`), with machine.json recording the spec's
name and text and the `-P` parameters, the machine `hdlc run --model DIR` then runs
(`qwengpu.runtime.machine_file`).  `--dtype float32` (the default) or
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
from qwengpu.runtime.machine_file import write_machine_file

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
    parser.set_defaults(parser=parser)


def run(args: argparse.Namespace) -> int:
    import torch

    from qwengpu.backend_torch.checkpoint import build_model, compile_spec, write_checkpoint
    from qwengpu.backend_torch.emit import bf16_risks
    from qwengpu.backend_torch.schedule import format_schedule

    names = parse_pass_names(args.passes)
    if not args.output and not args.schedule:
        args.parser.error("give -o DIR (or --schedule to only print the schedule)")
    start = time.perf_counter()

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=sys.stderr)

    overrides = parse_overrides(args.param, args.parser)
    encoding = args.encoding or ("binary" if args.dtype == "float32" else "onehot")
    if encoding == "binary" and args.dtype != "float32":
        args.parser.error("--encoding binary is exact in float32 only (docs/schedule.md); "
                          "bfloat16 needs --encoding onehot")
    compiled = compile_spec(args.spec, args.target, names, overrides, say, encoding=encoding)
    if args.schedule:
        print(format_schedule(compiled.schedule), end="")
    if args.output:
        dtype = getattr(torch, args.dtype)
        model = build_model(compiled.schedule, dtype, say)
        say("weights built")
        risks = bf16_risks(compiled.plan)
        risk_text = (f"{len(risks)} sum(s) span more than 16 values (widest {max(r for _, r in risks)}"
                     f" at {risks[0][0].loc}): bf16 may round them wrong (fp32 is safe)" if risks else
                     "no wide sums: bf16 expected exact (prove it with the spec's tests)")
        note = (f"float32 (the default); bf16: {risk_text}" if dtype == torch.float32
                else f"bfloat16 (requested); {risk_text}")
        if risks and dtype != torch.float32:
            say(f"warning: {risk_text}")
        figures = write_checkpoint(compiled, model, args.output, note)
        write_machine_file(args.output, args.spec, overrides)
        say(f"wrote {args.output}: {figures['nonzeros']} nonzero of {figures['parameters']} "
            f"parameters, {figures['bytes']} bytes")
    say(f"compile time {time.perf_counter() - start:.1f} s")
    return 0
