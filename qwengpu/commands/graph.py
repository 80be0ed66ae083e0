"""`hdlc graph SPEC --target NAME [-o FILE]`: the scheduled layer graph.

Without `-o` (or with a `.txt` file) the text form: layer by layer, the ops of the token
mixer and the MLP, the residual values each reads and writes, the DeltaNet heads and which
state element they hold, utilisation bars and the norm ledger's hot entries.  With
`-o FILE.html`: the same as a self-contained HTML page (`backend_torch/graph_view.py`).
`--estimate` schedules a spec whose writes are not all carried by its trace (figures only).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from qwengpu.commands.check import add_parameter_option, parse_overrides
from qwengpu.errors import UserError, write_output

NAME = "graph"
HELP = "show the scheduled layer graph (text, or HTML with -o FILE.html)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", help="the HDL spec, e.g. specs/counter.hdl")
    add_parameter_option(parser)
    parser.add_argument("--target", default="min", help="target shape (default min)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write FILE (.html or .txt)")
    parser.add_argument("--encoding", choices=("binary", "onehot"), default="binary",
                        help="residual values: binary where readable (default, as `hdlc "
                             "compile` in float32) or all one-hot")
    parser.add_argument("--estimate", action="store_true",
                        help="schedule even if writes are not carried by the trace (figures)")
    parser.set_defaults(parser=parser)


def run(args: argparse.Namespace) -> int:
    from qwengpu.backend_torch.graph_view import schedule_html
    from qwengpu.backend_torch.schedule import format_schedule
    from qwengpu.compiler import compile

    suffix = Path(args.output).suffix if args.output else ".txt"
    if suffix not in (".html", ".txt"):
        raise UserError(f"{args.output}: hdlc graph writes a page (.html) or text (.txt), not "
                        f"{suffix or 'a file without a suffix'}")
    compiled = compile(args.spec, args.target, params=parse_overrides(args.param, args.parser),
                       estimate=args.estimate, encoding=args.encoding, stop_after="schedule")
    if suffix == ".html":
        write_output(args.output, schedule_html(compiled.schedule), "page")
    elif args.output:
        write_output(args.output, format_schedule(compiled.schedule), "schedule")
    else:
        print(format_schedule(compiled.schedule), end="")
    return 0
