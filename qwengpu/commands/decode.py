"""`hdlc decode LAUNCH.json --tokens FILE`: read a trace another engine generated.

    hdlc launch launch.json -o prompt.json           # the prompt
    (any Qwen3.5 engine: greedy generation from prompt.json until eos -> ids.json)
    hdlc decode launch.json --tokens ids.json --json

FILE is JSON: a list of ids, `{"ids": [...]}` or `{"input_ids": [...]}`.  It holds either
the generated ids alone (starting with the first record, ending with eos) or the prompt
followed by them (everything up to `<trace>` is then checked against the launch's prompt).
The output is that of `hdlc run` (`--json`: buffers, records, tokens, trap); a trap exits 1
with the located message, and so does a stream that is not a well-formed trace.
"""

from __future__ import annotations

import argparse

from qwengpu.commands.launch import protocol_for
from qwengpu.commands.run import report
from qwengpu.runtime.decode import decode_launch, read_token_file
from qwengpu.runtime.launch import load_launch

NAME = "decode"
HELP = "decode the token ids a model generated for a launch into records and buffers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("launch", help="the launch file the prompt was built from")
    parser.add_argument("--tokens", metavar="FILE", required=True,
                        help='generated ids: a JSON list, {"ids": [...]} or {"input_ids": '
                             '[...]}, with or without the prompt in front')
    parser.add_argument("--model", metavar="DIR",
                        help="compiled checkpoint whose vocabulary to use (default: the "
                             "vocabulary of specs/qwengpu.hdl)")
    parser.add_argument("--json", action="store_true",
                        help='print one JSON object {"buffers", "records", "tokens", "trap"}')
    parser.add_argument("--trace", action="store_true",
                        help="print every record readably (on stderr with --json)")


def run(args: argparse.Namespace) -> int:
    launch = load_launch(args.launch)
    protocol = protocol_for(args.model)
    result = decode_launch(launch, read_token_file(args.tokens), protocol)
    return report(result, launch, trace=args.trace, as_json=args.json)
