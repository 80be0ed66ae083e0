"""`hdlc sim SPEC PROGRAM.s`: run an assembly program on the reference interpreter.

The program's directives (`.grid`, `.block`, `.param`, `.mem`; see qwengpu.isa.asm) describe
the launch.  The trace prints one line per record: the warp, the PC, the active and exec masks
(the numbers of the lanes in them, `.` for the others), the instruction, and what it did: register and predicate writes per lane,
memory writes, branches taken, lanes exited, and the trap if there is one.  The final memory
follows.  `--json` prints `{"records": [...], "memory": [...], "trap": ..., ...}` instead,
with every value as the unsigned integer the record holds.  A program that traps exits 1,
as a launch that traps does in `hdlc run`.
"""

from __future__ import annotations

import argparse
import json

from qwengpu.commands.check import add_parameter_option, parse_overrides
from qwengpu.errors import CapacityError, Location
from qwengpu.isa import Instruction, Trap, format_instruction
from qwengpu.isa.asm import AsmProgram, assemble_file
from qwengpu.runtime.machine_state import (MachineRun, Windows, load_machine, new_simulator,
                                           run_simulator, signed_word, warps_per_block)

NAME = "sim"
HELP = "run an assembly program on the reference interpreter of a spec and print the trace"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", help="the HDL spec, e.g. specs/qwengpu.hdl")
    parser.add_argument("program", help="the assembly program (.s), see docs/isa.md")
    add_parameter_option(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--max-records", type=int, default=100_000, metavar="N",
                        help="give up after N records (default 100000)")
    parser.add_argument("--no-trace", action="store_true",
                        help="print only the outcome and the final memory")
    parser.set_defaults(parser=parser)


def _mask(value: int, lanes: int) -> str:
    """`0123` for all of four lanes, `01..` for lanes 0 and 1 (as `hdlc run` prints them)."""
    return "".join(f"{lane:x}"[-1] if value >> lane & 1 else "." for lane in range(lanes))


def _lanes(record: dict, prefix: str, enable: int, lanes: int, signed: bool = True) -> str:
    values = []
    for lane in range(lanes):
        if enable >> lane & 1:
            value = record[f"{prefix}{lane}"]
            values.append(str(signed_word(value) if signed else value))
        else:
            values.append(".")
    return "[" + " ".join(values) + "]"


def describe_record(record: dict, program: list[Instruction], lanes: int) -> str:
    """The effects of one record in words, e.g. `r1 = [5 6 . 8]  taken 01..`."""
    parts = []
    if record["rwen"]:
        parts.append(f"r{record['rd']} = {_lanes(record, 'rval', record['rwen'], lanes)}")
    if record["pwen"]:
        bits = [str(record["pval"] >> lane & 1) if record["pwen"] >> lane & 1 else "."
                for lane in range(lanes)]
        parts.append(f"p{record['pd']} = [{' '.join(bits)}]")
    for lane in range(lanes):
        if record["mwen"] >> lane & 1:
            parts.append(f"mem[{record[f'maddr{lane}']}] = "
                         f"{signed_word(record[f'mval{lane}'])} (lane {lane})")
    if record["taken"]:
        parts.append(f"taken {_mask(record['taken'], lanes)}")
    if record["exited"]:
        parts.append(f"exited {_mask(record['exited'], lanes)}")
    if record["trap"]:
        parts.append(f"TRAP {_trap_name(record['trap'])} (lane {record['trap_lane']})")
    return "  ".join(parts)


def _trap_name(code: int) -> str:
    try:
        return Trap(code).name.lower()
    except ValueError:
        return f"code {code}"


def _instruction_text(program: list[Instruction], pc: int) -> str:
    instruction = program[pc] if pc < len(program) else Instruction.decode(0)
    return format_instruction(instruction)


def format_trace(result: MachineRun, program: list[Instruction], lanes: int) -> str:
    lines = [f"{'#':>5}  warp  {'pc':>3}  active  exec  {'instruction':<26}effects"]
    pad = max(lanes, 6)
    for number, record in enumerate(result.records):
        text = _instruction_text(program, record["pc"])
        lines.append(f"{number:>5}  w{record['warp']:<3}  {record['pc']:>3}  "
                     f"{_mask(record['active'], lanes):<{pad}}  "
                     f"{_mask(record['exec'], lanes):<{max(lanes, 4)}}  {text:<26}"
                     f"{describe_record(record, program, lanes)}".rstrip())
    return "\n".join(lines)


def format_memory(memory: list[int]) -> str:
    """Rows of 8 words (signed), up to the last row holding a non-zero word."""
    last = max((i for i, word in enumerate(memory) if word), default=-1)
    if last < 0:
        return "  (all zero)"
    rows = []
    for start in range(0, last + 1, 8):
        words = " ".join(f"{signed_word(w):>11}" for w in memory[start:start + 8])
        rows.append(f"  [{start:>3}] {words}")
    return "\n".join(rows)


def outcome(result: MachineRun) -> str:
    if not result.trapped:
        return f"finished: {len(result.records)} records, no trap"
    record = result.trap_record
    return (f"TRAPPED: {_trap_name(result.trap)} in warp {record['warp']} at pc {record['pc']}"
            f", lane {record['trap_lane']} (after {len(result.records)} records)")


def to_json(result: MachineRun, program: AsmProgram, warps: int) -> dict:
    trap = None
    if result.trapped:
        record = result.trap_record
        trap = {"code": int(result.trap), "name": result.trap.name.lower(),
                "warp": record["warp"], "pc": record["pc"], "lane": record["trap_lane"]}
    return {"grid": program.grid, "block": program.block, "warps": warps,
            "records": result.records, "steps": len(result.records),
            "memory": result.memory, "trap": trap}


def run(args: argparse.Namespace) -> int:
    overrides = parse_overrides(args.param, getattr(args, "parser", None))
    machine = load_machine(args.spec, overrides)
    program = assemble_file(args.program, machine.isa)
    try:
        # an assembly program's windows lie at the top of memory, clear of its .mem words
        needed = program.grid * (program.shared_words + program.block * program.local_words)
        first = max(len(program.memory), machine.shape.mem_words - needed)
        windows = Windows.laid_out(first, program.grid, program.block,
                                   program.shared_words, program.local_words, machine.shape)
        sim = new_simulator(machine, program.instructions, program.memory, program.params,
                            program.grid, program.block, windows)
    except CapacityError as error:
        raise CapacityError(error.message, Location(program.file)) from None
    result = run_simulator(sim, args.max_records)
    lanes = machine.shape.lanes
    warps = program.grid * warps_per_block(program.block, lanes)
    status = 1 if result.trapped else 0        # as `hdlc run`: a trap is a failed launch
    if args.json:
        print(json.dumps(to_json(result, program, warps), indent=1))
        return status
    print(f"{program.file}: grid {program.grid} x block {program.block} = {warps} warp"
          f"{'s' if warps != 1 else ''} of {lanes} lanes; {len(program.instructions)} "
          f"instructions")
    if not args.no_trace:
        print(format_trace(result, program.instructions, lanes))
    print(outcome(result))
    print("final memory (signed words):")
    print(format_memory(result.memory))
    return status
