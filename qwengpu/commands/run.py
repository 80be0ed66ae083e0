"""`hdlc run LAUNCH.json`: run a kernel launch and print its buffers afterwards.

    hdlc run examples/vector_add/launch.json              # buffers, one per line
    hdlc run launch.json --json                           # one JSON object on stdout
    hdlc run launch.json --trace                          # every record, readably
    hdlc run launch.json --listing                        # the machine code, with PTX lines

    hdlc run launch.json --spec specs/qwengpu.hdl -P LANES=1 -P WARPS=1   # another machine

The backend is a choice: `sim` (the reference interpreter) or `model` (a compiled Qwen3.5
checkpoint, `--model DIR`, run by `qwengpu.runtime.model_backend`; `--check` compares it with
the interpreter record by record).  The machine is the checkpoint's with `--model`
(its machine.json, qwengpu.runtime.machine_file), else the one `--spec FILE` and `-P NAME=VALUE`
name (default specs/qwengpu.hdl as written); `hdlc launch` and `hdlc decode` choose it the same
way (`add_machine_arguments`, `chosen_machine`).  A kernel that does not fit that machine, a
trap, and every mistake in the launch print a located message on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable

from qwengpu.commands.check import add_parameter_option, parse_overrides
from qwengpu.errors import UserError
from qwengpu.runtime.launch import (Launch, LaunchResult, load_launch, machine_limits,
                                    run_launch_sim)
from qwengpu.runtime.machine_file import checkpoint_machine
from qwengpu.runtime.machine_state import DEFAULT_MAX_RECORDS, Machine, load_machine
from qwengpu.runtime.trace_format import format_trace

NAME = "run"
HELP = "run a kernel launch (a launch .json file) and print its buffers"


def _run_sim(launch: Launch, machine: Machine, args: argparse.Namespace) -> LaunchResult:
    return run_launch_sim(launch, max_records=args.max_records, machine=machine)


def _run_model(launch: Launch, machine: Machine, args: argparse.Namespace) -> LaunchResult:
    if not args.model:
        raise UserError("--backend model needs --model DIR (a checkpoint hdlc compile wrote)")
    from qwengpu.runtime.model_backend import run_launch_model

    return run_launch_model(launch, args.model, max_records=args.max_records,
                            check=args.check, machine=machine)


# name -> function(launch, machine, args) -> LaunchResult
BACKENDS: dict[str, Callable[[Launch, Machine, argparse.Namespace], LaunchResult]] = {
    "sim": _run_sim,
    "model": _run_model,
}


def add_machine_arguments(parser: argparse.ArgumentParser) -> None:
    """`--spec FILE` and `-P NAME=VALUE` (as `hdlc compile` spells them): the machine when
    there is no `--model`."""
    parser.add_argument("--spec", metavar="FILE",
                        help="the machine's HDL spec when there is no --model (default "
                             "specs/qwengpu.hdl)")
    add_parameter_option(parser)
    parser.set_defaults(parser=parser)


def chosen_machine(args: argparse.Namespace) -> Machine:
    """The checkpoint's machine with `--model`, else the one `--spec` and `-P` name."""
    overrides = parse_overrides(args.param, args.parser)
    if args.model:
        if args.spec or overrides:
            raise UserError("--spec and -P choose the machine only without --model: a "
                            "checkpoint runs the machine it was compiled from (its "
                            "machine.json)")
        return checkpoint_machine(args.model)
    return load_machine(args.spec, overrides)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("launch", help="launch file (JSON: source, kernel, grid, block, "
                                       "buffers, args)")
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="sim",
                        help="where the launch runs: sim = reference interpreter (default), "
                             "model = the compiled Qwen3.5 model")
    parser.add_argument("--model", metavar="DIR",
                        help="checkpoint directory (--backend model); its machine is used")
    add_machine_arguments(parser)
    parser.add_argument("--check", action="store_true",
                        help="--backend model: step the interpreter in lockstep and stop at "
                             "the first record that differs (record, field, expected, got)")
    parser.add_argument("--json", action="store_true",
                        help='print one JSON object {"buffers", "records", "trap"} on stdout '
                             '(--backend model adds "tokens" and "seconds")')
    parser.add_argument("--trace", action="store_true",
                        help="print every record readably (on stderr with --json)")
    parser.add_argument("--listing", action="store_true",
                        help="print the machine code with the PTX line of each instruction "
                             "(on stderr with --json)")
    parser.add_argument("--max-records", type=int, default=DEFAULT_MAX_RECORDS, metavar="N",
                        help=f"stop with an error after N records (default {DEFAULT_MAX_RECORDS})")


def run(args: argparse.Namespace) -> int:
    if args.max_records < 1:
        raise UserError("--max-records must be at least 1")
    if args.check and args.backend != "model":
        raise UserError("--check compares the model with the interpreter: it needs "
                        "--backend model")
    machine = chosen_machine(args)
    launch = load_launch(args.launch, machine_limits(machine))
    stream = sys.stderr if args.json else sys.stdout
    if args.listing:
        addresses = {region.name: region.base_address for region in launch.regions}
        print(launch.program.listing(addresses), file=stream)
    return report(BACKENDS[args.backend](launch, machine, args), launch, trace=args.trace,
                  as_json=args.json)


def report(result: LaunchResult, launch: Launch, trace: bool, as_json: bool) -> int:
    """Print a launch's outcome (records with `trace`, then JSON or the buffers); a trap
    prints its located message and gives exit status 1."""
    if trace:
        stream = sys.stderr if as_json else sys.stdout
        for line in format_trace(result.records, launch):
            print(line, file=stream)
    if as_json:
        print(json.dumps(result.as_json()))
    else:
        print_buffers(result)
    trap = result.trap_error()
    if trap is not None:
        print(trap.render(), file=sys.stderr)
        return 1
    return 0


def print_buffers(result: LaunchResult, stream=None) -> None:
    """`name = [v0, v1, ...]` per buffer, then the kernel's memory variables if any."""
    stream = stream or sys.stdout
    for name, values in result.buffers.items():
        print(f"{name} = {values}", file=stream)
    for name, values in result.variables.items():
        print(f"{name} = {values}  (kernel variable)", file=stream)
