"""`hdlc run LAUNCH.json`: run a kernel launch and print its buffers afterwards.

    hdlc run examples/vector_add/launch.json              # buffers, one per line
    hdlc run launch.json --json                           # one JSON object on stdout
    hdlc run launch.json --trace                          # every record, readably
    hdlc run launch.json --listing                        # the machine code, with PTX lines
    hdlc run launch.json --html trace.html                # the trace viewer: a page

    hdlc run launch.json --spec specs/qwengpu.hdl -P LANES=1 -P WARPS=1   # another machine
    hdlc run a.json b.json --backend model --model DIR    # several launches: one batch

The backend is a choice: `sim` (the reference interpreter) or `model` (a compiled Qwen3.5
checkpoint, `--model DIR`, run by `qwengpu.runtime.model_backend`; `--check` compares it with
the interpreter record by record).  The machine is the checkpoint's with `--model`
(its machine.json, qwengpu.runtime.machine_file), else the one `--spec FILE` and `-P NAME=VALUE`
name (default specs/qwengpu.hdl as written); `hdlc launch` and `hdlc decode` choose it the same
way (`add_machine_arguments`, `chosen_machine`).  A kernel that does not fit that machine, a
trap, and every mistake in the launch print a located message on stderr and exit 1.

Several launch files run one after the other on `sim`, and as one batch (one `generate`, a row
a launch) on `model`; each launch's report follows a `== FILE` line (`--json`: one object a
line, with `"launch": FILE`, or `"error"` for a launch that failed), and the exit status is 1
when any launch failed.  A single launch that fails at run time (an endless loop, a model
that stops writing a trace) prints its `{"launch", "error"}` object under `--json` too.

`--html FILE` writes the trace viewer (qwengpu.runtime.trace_page, docs/trace.md "The trace
viewer"): one self-contained page of every launch that ran, with a chooser when there are
several (a launch that failed shows its error there); a single launch that failed writes
none.  The path is checked before anything runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable

from qwengpu.commands.check import add_parameter_option, parse_overrides
from qwengpu.errors import UserError, check_output_location
from qwengpu.ptx.cuda_lines import readable
from qwengpu.runtime.launch import (Launch, LaunchResult, load_launch, machine_limits,
                                    run_launch_sim)
from qwengpu.runtime.float_words import f32_text
from qwengpu.runtime.machine_file import checkpoint_machine
from qwengpu.runtime.machine_state import (DEFAULT_MAX_RECORDS, Machine, check_max_records,
                                           load_machine)
from qwengpu.runtime.prompt import trace_cost
from qwengpu.runtime.trace_format import format_trace
from qwengpu.runtime.trace_page import write_trace_page
from qwengpu.runtime.trace_page_data import page_entry
from qwengpu.trace.protocol import TraceProtocol

NAME = "run"
HELP = "run a kernel launch (a launch .json file) and print its buffers"


def _run_sim(launches: list[Launch], machine: Machine, args: argparse.Namespace
             ) -> list[LaunchResult | UserError]:
    outcomes: list[LaunchResult | UserError] = []
    for launch in launches:
        try:
            result = run_launch_sim(launch, max_records=args.max_records, machine=machine)
            if args.json:
                result.tokens, result.prompt_tokens = trace_cost(launch, result.records,
                                                                 machine)
            outcomes.append(result)
        except UserError as error:
            outcomes.append(error)
    return outcomes


def _run_model(launches: list[Launch], machine: Machine, args: argparse.Namespace
               ) -> list[LaunchResult | UserError]:
    if not args.model:
        raise UserError("--backend model needs --model DIR (a checkpoint hdlc compile wrote)")
    from qwengpu.runtime.model_backend import run_launches_model

    outcomes = run_launches_model(launches, args.model, max_records=args.max_records,
                                  check=args.check, machine=machine, engine=args.engine,
                                  threads=args.threads, device=args.device, gguf=args.gguf)
    if len(launches) == 1 and isinstance(outcomes[0], UserError):
        raise outcomes[0]
    return outcomes


# name -> function(launches, machine, args) -> an outcome per launch (a result or its error)
BACKENDS: dict[str, Callable[[list[Launch], Machine, argparse.Namespace],
                             list[LaunchResult | UserError]]] = {
    "sim": _run_sim,
    "model": _run_model,
}


def add_engine_argument(parser: argparse.ArgumentParser) -> None:
    """`--engine sparse|transformers|llama.cpp` (and `--gguf`, `--device`, `--threads`):
    what runs a checkpoint (qwengpu.runtime.model_backend)."""
    from qwengpu.runtime.model_backend import DEFAULT_ENGINE, ENGINES

    parser.add_argument("--engine", choices=ENGINES, default=DEFAULT_ENGINE,
                        help="what runs the checkpoint: sparse = the project's engine, which "
                             "multiplies the checkpoint's nonzero tensors (default); "
                             "transformers = stock transformers generate(), the judge; "
                             "llama.cpp = its float32 GGUF in llama.cpp (pip install -e "
                             "\".[llamacpp]\"; docs/llamacpp.md)")
    parser.add_argument("--gguf", metavar="FILE", default=None,
                        help="--engine llama.cpp: the GGUF to run (hdlc export DIR --gguf "
                             "FILE writes one; default: DIR.gguf beside the checkpoint, "
                             "exported there when missing or older than the checkpoint)")
    parser.add_argument("--device", default=None, metavar="DEVICE",
                        help="torch device the model runs on; the sparse engine runs its "
                             "compiled kernels on the CPU (default, or 'cpu') and its torch "
                             "version on any other device ('cuda', or 'cpu:0' for the torch "
                             "version on the CPU); transformers: default cuda where there "
                             "is one")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1),
                        metavar="N", help="sparse engine: share several launches' rows over "
                                          "N threads; llama.cpp: its threads (default: 2 "
                                          "where the machine has 2 cores; the ids never "
                                          "depend on it)")


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
    parser.add_argument("launch", nargs="+",
                        help="launch file (JSON: source, kernel, grid, block, buffers, args); "
                             "several run as one batch on --backend model")
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="sim",
                        help="where the launch runs: sim = reference interpreter (default), "
                             "model = the compiled Qwen3.5 model")
    parser.add_argument("--model", metavar="DIR",
                        help="checkpoint directory (--backend model); its machine is used")
    add_engine_argument(parser)
    add_machine_arguments(parser)
    parser.add_argument("--check", action="store_true",
                        help="--backend model: step the interpreter in lockstep and stop at "
                             "the first record that differs (record, field, expected, got)")
    parser.add_argument("--json", action="store_true",
                        help='print one JSON object {"buffers", "records", "tokens", '
                             '"prompt_tokens", "trap"} on stdout (tokens: the trace a compiled '
                             'model writes, <eos> included; --backend model adds "engine", '
                             '"seconds" and "prefill_seconds")')
    parser.add_argument("--trace", action="store_true",
                        help="print every record readably (on stderr with --json)")
    parser.add_argument("--listing", action="store_true",
                        help="print the machine code with the PTX line of each instruction "
                             "(on stderr with --json)")
    parser.add_argument("--max-records", type=int, default=DEFAULT_MAX_RECORDS, metavar="N",
                        help=f"stop with an error after N records (default {DEFAULT_MAX_RECORDS})")
    add_html_argument(parser)


def add_html_argument(parser: argparse.ArgumentParser) -> None:
    """`--html FILE`: the trace viewer (`hdlc run` and `hdlc decode`)."""
    parser.add_argument("--html", metavar="FILE",
                        help="write the trace viewer to FILE: a self-contained HTML page of "
                             "the launch (several launches: one page with a chooser), "
                             "records by warp on a timeline, registers and memory at every "
                             "step")


def write_page(path: str, names: list[str], launches: list[Launch], outcomes: list,
               protocol: TraceProtocol, backend: str) -> None:
    """The trace page of these launches' outcomes, unless every one failed."""
    if all(isinstance(outcome, UserError) for outcome in outcomes):
        return
    entries = [page_entry(name, launch, outcome, protocol, backend)
               for name, launch, outcome in zip(names, launches, outcomes)]
    write_trace_page(path, entries)
    records = sum(len(outcome.records) for outcome in outcomes
                  if not isinstance(outcome, UserError))
    print(f"{path}: trace page of {len(entries)} launch{'es' if len(entries) > 1 else ''}, "
          f"{records} records", file=sys.stderr)


def _backend_text(args: argparse.Namespace) -> str:
    if args.backend == "model":
        return f"model {args.model} ({args.engine} engine{', checked' if args.check else ''})"
    return f"{args.backend} (the reference interpreter)" if args.backend == "sim" \
        else args.backend


def run(args: argparse.Namespace) -> int:
    check_max_records(args.max_records)
    if args.threads < 1:
        raise UserError("--threads must be at least 1")
    if args.check and args.backend != "model":
        raise UserError("--check compares the model with the interpreter: it needs "
                        "--backend model")
    if args.html:
        check_output_location(args.html, "trace page")
    machine = chosen_machine(args)
    launches = [load_launch(path, machine_limits(machine)) for path in args.launch]
    stream = sys.stderr if args.json else sys.stdout
    outcomes = BACKENDS[args.backend](launches, machine, args)
    if args.html:
        protocol = TraceProtocol.load(args.model) if args.backend == "model" else \
            TraceProtocol.from_design(machine.design)
        write_page(args.html, args.launch, launches, outcomes, protocol, _backend_text(args))
    if len(launches) == 1:
        if args.listing:
            print(listing(launches[0]), file=stream)
        if isinstance(outcomes[0], UserError):
            if args.json:     # a failed launch still prints its one JSON object
                print(json.dumps({"launch": args.launch[0], "error": outcomes[0].render()}))
            raise outcomes[0]
        return report(outcomes[0], launches[0], trace=args.trace, as_json=args.json)
    status = 0
    for path, launch, outcome in zip(args.launch, launches, outcomes):
        if not args.json:
            print(f"== {path}")
        if args.listing:
            print(listing(launch), file=stream)
        if isinstance(outcome, UserError):
            if args.json:
                print(json.dumps({"launch": path, "error": outcome.render()}))
            print(f"{path}: {outcome.render()}", file=sys.stderr)
            status = 1
            continue
        status |= report(outcome, launch, trace=args.trace, as_json=args.json,
                         extra={"launch": path} if args.json else None)
    return status


def listing(launch: Launch) -> str:
    """The launch's machine code with the PTX line of each instruction."""
    addresses = {region.name: region.base_address for region in launch.regions}
    return launch.program.listing(addresses)


def report(result: LaunchResult, launch: Launch, trace: bool, as_json: bool,
           extra: dict | None = None) -> int:
    """Print a launch's outcome (records with `trace`, then JSON, with `extra` keys first,
    or the buffers); a trap prints its located message and gives exit status 1."""
    if trace:
        stream = sys.stderr if as_json else sys.stdout
        for line in format_trace(result.records, launch):
            print(line, file=stream)
    if as_json:
        print(json.dumps({**(extra or {}), **result.as_json()}))
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
    regions = result.launch.buffers
    for name, values in result.buffers.items():
        if regions[name].element == "f32":
            floats = ", ".join(f32_text(value) for value in values)
            print(f"{name} = [{floats}]  (f32)", file=stream)
        else:
            print(f"{name} = {values}", file=stream)
    for name, values in result.variables.items():
        print(f"{readable(name)} = {values}  (kernel variable)", file=stream)
