"""`hdlc check SPEC`: parse and elaborate a spec, then summarise the machine it describes.

The summary states the machine's numbers (lanes per warp, warps, registers, memory words,
opcodes), its pipeline stages and the pipeline registers between them, every state element
with its shape and width, and the record fields.  `--netlist` prints the elaborated netlist
instead.  The opcode count is the number of members of the spec's enum `Op`, the table the
decode stage matches on (docs/hdl.md, "hdlc check").
"""

from __future__ import annotations

import argparse

from qwengpu.dsl.elaborate import load_design
from qwengpu.errors import HdlError, Location
from qwengpu.dsl.netlist import Design, format_design

NAME = "check"
HELP = "parse and elaborate an HDL spec and summarise the machine it describes"

# Parameter -> what the summary calls it, for the machine section.
MACHINE_NUMBERS = (("LANES", "lanes per warp"), ("WARPS", "warps"),
                   ("REGS", "registers per lane"), ("PREDS", "predicates per lane"),
                   ("MEM_WORDS", "memory words"), ("PARAM_WORDS", "parameter words"),
                   ("PROG_WORDS", "program slots"))


def parse_overrides(items: list[str] | None, parser: argparse.ArgumentParser | None = None
                    ) -> dict[str, int]:
    """`["LANES=8", "WARPS=4"]` -> {"LANES": 8, "WARPS": 4} (for -P/--param)."""
    overrides = {}
    for item in items or []:
        name, _, value = item.partition("=")
        try:
            overrides[name.strip()] = int(value, 0)
        except ValueError:
            message = f"-P expects NAME=INTEGER, got {item!r}"
            if parser is None:
                raise ValueError(message) from None
            parser.error(message)
    return overrides


def add_parameter_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-P", "--param", action="append", metavar="NAME=VALUE",
                        help="override a spec parameter (repeatable), e.g. -P WARPS=4")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", help="the HDL spec, e.g. specs/qwengpu.hdl")
    add_parameter_option(parser)
    parser.add_argument("--netlist", action="store_true",
                        help="print the elaborated netlist (one node per line)")
    parser.add_argument("--no-locations", action="store_true",
                        help="with --netlist, leave out source locations")
    parser.set_defaults(parser=parser)


def _shape(shape: tuple[int, ...]) -> str:
    return "".join(f"[{n}]" for n in shape)


def _wrapped(head: str, words: list[str], width: int = 92) -> list[str]:
    """`words` after `head`, wrapped under the first word."""
    lines, line = [], head
    for word in words:
        if len(line) + len(word) > width and line.strip():
            lines.append(line.rstrip())
            line = " " * len(head)
        line += word + " "
    lines.append(line.rstrip())
    return lines


def summarize(design: Design) -> str:
    """The text `hdlc check` prints."""
    lines = [f"{design.file}: machine {design.name} elaborates cleanly", ""]
    machine = []
    if "LANES" in design.params:           # a SIMT machine: say it in its own terms
        machine = [(label, str(design.params[name])) for name, label in MACHINE_NUMBERS
                   if name in design.params]
    if "Op" in design.enums:
        machine.append(("opcodes", f"{len(design.enums['Op'])} (members of enum Op)"))
    stage_names = [stage.name for stage in design.stages]
    machine.append(("pipeline stages",
                    f"{len(stage_names)}: {' -> '.join(stage_names) or '(none)'}"))
    lines.append("machine")
    lines += [f"  {label:<22}{value}" for label, value in machine]

    if design.params:
        lines += ["", "parameters"]
        width = max(len(name) for name in design.params)
        for name, value in design.params.items():
            doc = design.param_docs.get(name, "")
            lines.append(f"  {name:<{width}} = {value:<8} {doc}".rstrip())

    lines += ["", f"state ({len(design.memories)} memories, {len(design.registers)} registers)"]
    rows = []
    for memory in design.memories.values():
        rows.append((memory.name, f"memory {_shape(memory.shape)} x u{memory.width}",
                     memory.doc or ""))
    for register in design.registers.values():
        reset = f" = {register.reset}" if register.reset else ""
        rows.append((register.name, f"register u{register.width}{reset}", register.doc or ""))
    if rows:
        name_width = max(len(r[0]) for r in rows)
        kind_width = max(len(r[1]) for r in rows)
        lines += [f"  {n:<{name_width}}  {k:<{kind_width}}  {d}".rstrip() for n, k, d in rows]

    lines += ["", "pipeline registers (what each stage hands on)"]
    stage_width = max((len(stage.name) for stage in design.stages), default=0)
    for stage in design.stages:
        outputs = [f"{o.name}{_shape(o.shape)}:u{o.width}" for o in stage.outputs] or ["-"]
        lines += _wrapped(f"  {stage.name:<{stage_width}}  ", outputs)

    lines += ["", f"record ({len(design.record)} fields, {design.record_bits} bits)"]
    lines += _wrapped("  ", [f"{f.name}:u{f.width}" + ("" if f.when is None else
                                                         f" (when {f.condition_text()})")
                             + (" (in the token before)" if f.packed else "")
                             for f in design.record])

    reads = sum(1 for node in design.nodes if node.op == "read")
    lines += ["", f"netlist: {len(design.nodes)} nodes ({reads} memory reads), "
                  f"{len(design.writes)} state writes"
                  + ("" if design.stop is not None else "; no stop condition")]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    overrides = parse_overrides(args.param, getattr(args, "parser", None))
    design = load_design(args.spec, overrides)
    if not design.record:
        raise HdlError("the spec describes no machine: nothing is emitted (a machine writes a "
                       "record of `emit` fields every step)", Location(design.file))
    if args.netlist:
        print(format_design(design, with_locations=not args.no_locations), end="")
    else:
        print(summarize(design))
    return 0
