"""`hdlc passes`: list the compiler's passes, or run them on a spec and show the result.

`hdlc passes` prints every registered pass with its one-line summary and the default
pipeline.  `hdlc passes SPEC` prints the spec's dataflow graph as built; with `--run` the
passes run (the default pipeline, or `--passes a,b,c`) and the graph after the last one is
printed, or after `--dump-after NAME` instead; `--stats` prints one row per pass (changes,
node counts before and after), the residual dims by encoding and the gadget cost estimate
in place of the graph; `--dot FILE` writes the final graph as Graphviz DOT.
"""

from __future__ import annotations

import argparse

from qwengpu.commands.check import add_parameter_option, parse_overrides
from qwengpu.dsl.elaborate import load_design
from qwengpu.errors import UserError, write_output
from qwengpu.ir import build_graph, format_graph, to_dot
from qwengpu.passes import DEFAULT_PIPELINE, PASSES, format_stats, run_passes
from qwengpu.ir.cost import estimate_cost, format_cost
from qwengpu.passes.pipeline import parse_pass_names, unknown_passes
from qwengpu.passes.select_encodings import residual_dims

NAME = "passes"
HELP = "list the optimisation passes, or run them on a spec (--run)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", nargs="?", help="an HDL spec, e.g. specs/qwengpu.hdl")
    add_parameter_option(parser)
    parser.add_argument("--run", action="store_true", help="run the passes on the spec")
    parser.add_argument("--passes", metavar="A,B,C",
                        help="comma-separated pass names (default: the default pipeline)")
    parser.add_argument("--dump-after", metavar="NAME",
                        help="print the graph after the pass NAME (every time it runs)")
    parser.add_argument("--stats", action="store_true",
                        help="print per-pass statistics instead of the final graph")
    parser.add_argument("--no-locations", action="store_true",
                        help="leave source locations out of printed graphs")
    parser.add_argument("--dot", metavar="FILE", help="write the final graph as Graphviz DOT")
    parser.set_defaults(parser=parser)


def _list_passes() -> str:
    width = max(len(name) for name in PASSES)
    lines = [f"{name:<{width}}  {entry.summary}" for name, entry in sorted(PASSES.items())]
    lines.append("")
    lines.append("default pipeline: " + ",".join(DEFAULT_PIPELINE))
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    parser = args.parser
    if args.spec is None:
        if args.run or args.passes or args.dump_after or args.stats or args.dot:
            parser.error("give a SPEC to run passes on")
        print(_list_passes(), end="")
        return 0
    names = parse_pass_names(args.passes)
    if args.dump_after and unknown_passes([args.dump_after]):
        raise UserError(f"unknown pass {args.dump_after!r}; `hdlc passes` lists them")
    if args.dump_after and args.dump_after not in names:
        parser.error(f"--dump-after {args.dump_after}: that pass is not in the pipeline")
    graph = build_graph(load_design(args.spec, parse_overrides(args.param, parser)))
    with_locations = not args.no_locations
    if args.run:
        stats = run_passes(graph, names, dump_after=args.dump_after,
                           dump=lambda name, _: print(f"// after {name}\n" +
                                                      format_graph(graph, with_locations),
                                                      end=""))
        if args.stats:
            print(format_stats(stats), end="")
            dims = residual_dims(graph)
            if dims:
                print("residual dims: " + ", ".join(f"{k} {v}" for k, v in sorted(dims.items())
                                                    if k != "total") + f"; total {dims['total']}")
            if graph.level == "digit":
                print(format_cost(estimate_cost(graph)), end="")
        elif not args.dump_after:
            print(format_graph(graph, with_locations), end="")
    else:
        print(format_graph(graph, with_locations), end="")
    if args.dot:
        write_output(args.dot, to_dot(graph, with_locations), "Graphviz file")
    return 0
