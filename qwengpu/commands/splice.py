"""`hdlc splice [SPEC] --base BASE_DIR -o OUT_DIR`: the compiled machine inside a Qwen3.5 model.

SPEC (default specs/qwengpu.hdl, `-P NAME=VALUE` overrides) is compiled for the base's own
shape, and OUT_DIR is a checkpoint whose decoder is the 45 compiled layers followed by all of
the base's layers, their tensors unchanged, loadable as the base is (`AutoModelForCausalLM`,
or `AutoModelForImageTextToText` for the multimodal form) with the base's tokenizer grown by
the machine's tokens.  On the base's own text the compiled layers add exactly 0; on a launch
prompt (`hdlc run LAUNCH --model OUT_DIR`) the machine writes the trace.  The report (also in
OUT_DIR/splice.txt) gives the margins; docs/splice.md says how it works.

`hdlc splice [SPEC] --check-base BASE_DIR` writes nothing: in seconds to a minute it says
whether BASE_DIR can be spliced (the machine's dims for its shape, its tokenizer, the text
gate's margin and dims, or why no gate exists and how many text tokens stand on the wrong
side); exit 0 when it can, 1 when it cannot.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from qwengpu.commands.check import add_parameter_option, parse_overrides

NAME = "splice"
HELP = "put the compiled machine in front of a Qwen3.5 checkpoint's own layers"
DEFAULT_SPEC = str(Path(__file__).resolve().parents[2] / "specs" / "qwengpu.hdl")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", nargs="?", default=DEFAULT_SPEC,
                        help="the HDL spec (default specs/qwengpu.hdl)")
    add_parameter_option(parser)
    parser.add_argument("--base", metavar="BASE_DIR",
                        help="a Qwen3.5 checkpoint directory (text or multimodal form)")
    parser.add_argument("-o", "--output", metavar="OUT_DIR",
                        help="the spliced checkpoint directory to write (must not exist)")
    parser.add_argument("--check-base", metavar="BASE_DIR",
                        help="only say whether BASE_DIR can be spliced, and its figures; "
                             "writes nothing")
    parser.add_argument("--margin", type=float, default=12.0,
                        help="logits between the machine's right token and any other "
                             "(default 12; docs/splice.md, \"Rows\")")
    parser.set_defaults(parser=parser)


def run(args: argparse.Namespace) -> int:
    from qwengpu.errors import UserError
    from qwengpu.splice.pipeline import splice

    start = time.perf_counter()

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=sys.stderr)

    params = parse_overrides(args.param, args.parser)
    if args.check_base is not None:
        if args.base is not None or args.output is not None:
            raise UserError("--check-base writes nothing: give it without --base and -o")
        return _check(args.spec, args.check_base, params, say)
    if args.base is None or args.output is None:
        raise UserError("splice needs --base BASE_DIR and -o OUT_DIR (or --check-base "
                        "BASE_DIR to only check a base)")

    report = splice(args.spec, args.base, args.output,
                    params=params, margin=args.margin,
                    progress=say)
    print(report.text(), end="")
    say(f"splice time {time.perf_counter() - start:.1f} s")
    return 0


def _check(spec: str, base_dir: str, params, say) -> int:
    from qwengpu.errors import UserError
    from qwengpu.splice.check_base import check_base

    check = check_base(spec, base_dir, params=params, progress=say)
    print(check.text(), end="")
    if not check.spliceable:
        raise UserError(f"{base_dir}: cannot be spliced: {check.error.message}")
    return 0
