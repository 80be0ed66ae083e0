"""`hdlc decode LAUNCH.json --tokens FILE`: read a trace another engine generated.

    hdlc launch launch.json -o prompt.json           # the prompt
    (any Qwen3.5 engine: greedy generation from prompt.json until eos -> ids.json)
    hdlc decode launch.json --tokens ids.json --json

FILE is JSON: a list of ids, `{"ids": [...]}` or `{"input_ids": [...]}`.  It holds either
the generated ids alone (starting with the first record, ending with eos) or the prompt
followed by them (everything up to `<trace>` is then checked against the launch's prompt).
The output is that of `hdlc run` (`--json`: buffers, records, tokens, trap); a trap exits 1
with the located message, and so does a stream that is not a well-formed trace or breaks a
rule every trace of the launch keeps (qwengpu.runtime.trace_rules).  `--check` also replays
the launch on the reference interpreter and stops at the first record and field that differ.  The machine
is the checkpoint's (`--model DIR`) or the one `--spec` and `-P` name, as for `hdlc launch`;
a spliced checkpoint's ids (`hdlc splice`) are shifted back by its splice.json's offset.
`--html FILE` writes the trace viewer of the decoded launch, each record with the tokens it
was read from (as `hdlc run --html`).
"""

from __future__ import annotations

import argparse

from qwengpu.commands.launch import protocol_for
from qwengpu.runtime.spliced import read_splice
from qwengpu.commands.run import (add_html_argument, add_machine_arguments, chosen_machine,
                                  report, write_page)
from qwengpu.errors import check_output_location
from qwengpu.runtime.decode import decode_launch, read_token_file
from qwengpu.runtime.trace_rules import replay_difference
from qwengpu.trace.decode import DecodeError
from qwengpu.runtime.launch import load_launch, machine_limits

NAME = "decode"
HELP = "decode the token ids a model generated for a launch into records and buffers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("launch", help="the launch file the prompt was built from")
    parser.add_argument("--tokens", metavar="FILE", required=True,
                        help='generated ids: a JSON list, {"ids": [...]} or {"input_ids": '
                             '[...]}, with or without the prompt in front')
    parser.add_argument("--model", metavar="DIR",
                        help="compiled checkpoint whose vocabulary and machine to use "
                             "(default: those of --spec and -P)")
    add_machine_arguments(parser)
    parser.add_argument("--json", action="store_true",
                        help='print one JSON object {"buffers", "records", "tokens", "trap"}')
    parser.add_argument("--trace", action="store_true",
                        help="print every record readably (on stderr with --json)")
    parser.add_argument("--check", action="store_true",
                        help="replay the launch on the reference interpreter: every record "
                             "must be the interpreter's")
    add_html_argument(parser)


def run(args: argparse.Namespace) -> int:
    if args.html:
        check_output_location(args.html, "trace page")
    machine = chosen_machine(args)
    launch = load_launch(args.launch, machine_limits(machine))
    protocol = protocol_for(args.model, machine)
    ids = read_token_file(args.tokens)
    spliced = read_splice(args.model) if args.model else None
    if spliced is not None:              # a spliced checkpoint's ids (hdlc splice)
        ids = [token_id - spliced.offset for token_id in ids]
    result = decode_launch(launch, ids, protocol, machine)
    if args.check:
        difference = replay_difference(launch, result.records, machine)
        if difference is not None:
            raise DecodeError(f"--check: {difference}")
    if args.html:
        write_page(args.html, [args.launch], [launch], [result], protocol,
                   f"ids from {args.tokens}" + (f" (model {args.model})" if args.model else ""))
    return report(result, launch, trace=args.trace, as_json=args.json)
