"""`hdlc generate SPEC --model DIR`: let a compiled machine run itself from its reset state.

The prompt puts the machine into the state it has after reset (memories zero, registers at
their reset values), or into the state given with `--state FILE` (JSON: element name -> a
list of values, flat and row-major; a register is a list of one value; elements left out stay
at reset).  The model then writes greedily until the end-of-launch token (on the sparse
engine, with `--engine transformers` stock `generate()`, with `--engine llama.cpp` the
checkpoint's GGUF in llama.cpp), and the generated tokens are
decoded into records and printed.  `--check` also runs the reference
interpreter from the same state and fails at the first record that differs.  For QwenGPU
launches (CUDA kernels) use `hdlc run --backend model`; this command serves any spec, such
as `specs/counter.hdl`.
"""

from __future__ import annotations

import argparse
import json
import time

from qwengpu.commands.check import add_parameter_option, parse_overrides
from qwengpu.commands.run import add_engine_argument
from qwengpu.errors import UserError

NAME = "generate"
HELP = "run a compiled machine from its reset state inside its checkpoint, print the records"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", help="the HDL spec the checkpoint was compiled from")
    add_parameter_option(parser)
    parser.add_argument("--model", required=True, metavar="DIR", help="the compiled checkpoint")
    add_engine_argument(parser)
    parser.add_argument("--state", metavar="FILE", help="JSON file with the starting state")
    parser.add_argument("--max-records", type=int, default=1000)
    parser.add_argument("--check", action="store_true",
                        help="compare every record with the reference interpreter")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(parser=parser)


def starting_simulator(design, state_file: str | None):
    from qwengpu.dsl import Simulator

    sim = Simulator(design)
    if not state_file:
        return sim
    try:
        with open(state_file, encoding="utf-8") as handle:
            wanted = json.load(handle)
    except (OSError, json.JSONDecodeError) as error:
        raise UserError(f"{state_file}: cannot read the state: {error}") from None
    for name, values in wanted.items():
        if name in sim.registers:
            sim.set_register(name, values[0] if isinstance(values, list) else values)
        elif name in sim.memories:
            sim.load_memory(name, values)
        else:
            raise UserError(f"{state_file}: the machine has no state element {name!r}")
    return sim


def run(args: argparse.Namespace) -> int:
    from qwengpu.dsl import load_design
    from qwengpu.trace.decode import decode_trace
    from qwengpu.runtime.model_backend import generate_greedy, load_checkpoint
    from qwengpu.trace.prompt import simulator_state, state_prompt

    design = load_design(args.spec, parse_overrides(args.param, args.parser))
    model, protocol = load_checkpoint(args.model, args.device, args.engine, args.gguf,
                                      args.threads)
    sim = starting_simulator(design, args.state)
    prompt = state_prompt(protocol, simulator_state(sim))
    started = time.perf_counter()
    generated, = generate_greedy(model, protocol, [prompt], args.max_records)
    seconds = time.perf_counter() - started
    records = decode_trace(generated, protocol, offset=len(prompt))
    if args.check:
        expected = sim.run(args.max_records)
        for index, (want, got) in enumerate(zip(expected, records)):
            if want != got:
                field = next(name for name in want if want[name] != got.get(name))
                raise UserError(f"record {index}: field {field}: expected {want[field]}, "
                                f"the model wrote {got.get(field)}")
        if len(expected) != len(records):
            raise UserError(f"the interpreter ran {len(expected)} records, the model wrote "
                            f"{len(records)}")
    if args.json:
        print(json.dumps({"records": records, "tokens": len(generated), "seconds": seconds}))
        return 0
    for index, record in enumerate(records):
        print(f"#{index:<4} " + "  ".join(f"{name}={value}" for name, value in record.items()))
    checked = ", every record checked against the interpreter" if args.check else ""
    print(f"{len(records)} records, {len(generated)} tokens in {seconds:.2f} s{checked}")
    return 0
