"""`hdlc launch LAUNCH.json`: write the launch prompt (token ids) for any Qwen3.5 engine.

    hdlc launch examples/vector_add/launch.json --model build/qwengpu -o prompt.json
    hdlc launch launch.json --text                   # the prompt as token texts, readably

The prompt is `{"input_ids": [...]}` (docs/trace.md): generate greedily from it with any
engine until `eos_token_id`, then `hdlc decode` reads the generated ids.  The vocabulary is the
checkpoint's (`--model DIR`, its protocol.json), and the launch is laid out for the
checkpoint's machine (its machine.json); a spliced checkpoint's (`hdlc splice`) ids are
shifted to where its machine tokens sit (splice.json); without `--model`, both come from the machine that
`--spec FILE` and `-P NAME=VALUE` name (default specs/qwengpu.hdl), which is what `hdlc compile`
of that spec with those parameters writes.
"""

from __future__ import annotations

import argparse
import json
import sys

from qwengpu.trace.protocol import TraceProtocol
from qwengpu.commands.run import add_machine_arguments, chosen_machine
from qwengpu.errors import write_output
from qwengpu.runtime.launch import load_launch, machine_limits
from qwengpu.runtime.machine_state import Machine
from qwengpu.runtime.prompt import build_prompt
from qwengpu.runtime.spliced import read_splice
from qwengpu.trace.prompt import prompt_text

NAME = "launch"
HELP = "write the prompt (token ids) of a kernel launch for a compiled model"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("launch", help="launch file (JSON: source, kernel, grid, block, "
                                       "buffers, args)")
    parser.add_argument("--model", metavar="DIR",
                        help="compiled checkpoint whose vocabulary and machine to use "
                             "(default: those of --spec and -P)")
    add_machine_arguments(parser)
    parser.add_argument("-o", "--output", metavar="FILE",
                        help='write {"input_ids": [...]} to FILE (default: stdout)')
    parser.add_argument("--text", action="store_true",
                        help="print the prompt as token texts, one state write per line")


def protocol_for(model_dir: str | None, machine: Machine) -> TraceProtocol:
    """The checkpoint's protocol, or the machine's when there is no checkpoint."""
    if model_dir:
        return TraceProtocol.load(model_dir)
    return TraceProtocol.from_design(machine.design)


def run(args: argparse.Namespace) -> int:
    machine = chosen_machine(args)
    launch = load_launch(args.launch, machine_limits(machine))
    protocol = protocol_for(args.model, machine)
    ids = build_prompt(launch, protocol, machine)
    if args.text:
        text = prompt_text(ids, protocol) + "\n"
    else:
        spliced = read_splice(args.model) if args.model else None
        if spliced is not None:          # a spliced checkpoint's ids (hdlc splice)
            ids = [token_id + spliced.offset for token_id in ids]
        text = json.dumps({"input_ids": ids}) + "\n"
    if args.output:
        write_output(args.output, text, "prompt")
        print(f"{args.output}: {len(ids)} prompt tokens", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
