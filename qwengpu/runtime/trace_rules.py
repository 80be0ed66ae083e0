"""What every trace of a launch satisfies, checked on decoded records (`hdlc decode`, the
model backend), and `hdlc decode --check`'s replay against the reference interpreter.

The rules come from docs/isa.md and the launch alone; they compute nothing the machine
computes (no ALU result, no branch outcome), so a trace that breaks one is not a trace of this
launch (another launch's, a forged record, a truncated stream):

- a launch writes at least one record;
- a record's warp is one the launch started, its pc a slot of the program memory and its op
  the opcode the program holds there;
- `active` lies within the warp's launched lanes that have not exited, `exec` within
  `active`, and every write mask, `taken` and `exited` within `exec`;
- `rd` is the instruction's `d` when a register is written, `pd` its `d` when a predicate is;
- a trap record writes nothing and ends the trace;
- the trace ends when every launched lane has exited, or at a trap.

`replay_difference` is the stronger check: the interpreter runs the launch and the first
record (and field) where the trace differs is named.
"""

from __future__ import annotations

from qwengpu.isa import Instruction, Op
from qwengpu.runtime.launch import Launch
from qwengpu.runtime.machine_state import Machine, warps_per_block
from qwengpu.trace.decode import DecodeError

MASKS_WITHIN_EXEC = ("rwen", "pwen", "mwen", "taken", "exited")


def _lanes(mask: int) -> str:
    return ", ".join(str(lane) for lane in range(mask.bit_length()) if mask >> lane & 1)


def _launched_lanes(launch: Launch) -> list[int]:
    """Per warp the launch starts, the mask of its lanes that hold a thread."""
    lanes = launch.limits.lanes
    per_block = warps_per_block(launch.block, lanes)
    masks = []
    for warp in range(launch.grid * per_block):
        tid0 = warp % per_block * lanes
        masks.append(sum(1 << lane for lane in range(lanes) if tid0 + lane < launch.block))
    return masks


def check_trace_rules(launch: Launch, records: list[dict[str, int]]) -> None:
    """Raise `DecodeError` naming the first record (and rule) the trace breaks."""
    if not records:
        raise DecodeError("the trace has no records, but every launch writes at least one "
                          "(each warp runs until its lanes exit)")
    running = _launched_lanes(launch)
    program, slots = launch.instructions, launch.limits.program_words
    for number, record in enumerate(records):
        warp, pc = record["warp"], record["pc"]

        def broken(rule: str) -> DecodeError:
            return DecodeError(f"record {number} (warp {warp}, pc {pc}) is not a step of this "
                               f"launch: {rule}")

        if record["trap"] and number != len(records) - 1:
            raise DecodeError(f"record {number} is a trap (code {record['trap']}), but the trace "
                              f"goes on for {len(records) - 1 - number} more records")
        if warp >= len(running):
            raise broken(f"the launch starts warps 0..{len(running) - 1}")
        if pc >= slots:
            raise broken(f"the program memory holds {slots} instructions")
        instruction = program[pc] if pc < len(program) else Instruction(Op.INVALID)
        if record["op"] != instruction.op:
            raise broken(f"op is {record['op']}, but the program holds "
                         f"{instruction.op.name.lower()} (op {int(instruction.op)}) there")
        if record["active"] & ~running[warp]:
            raise broken(f"active lanes {_lanes(record['active'])}, but the warp's running "
                         f"lanes are {_lanes(running[warp]) or 'none'}")
        if record["exec"] & ~record["active"]:
            raise broken(f"exec {_lanes(record['exec'])} is not within active "
                         f"{_lanes(record['active']) or '(none)'}")
        for mask in MASKS_WITHIN_EXEC:
            if record[mask] & ~record["exec"]:
                raise broken(f"{mask} {_lanes(record[mask])} is not within exec "
                             f"{_lanes(record['exec']) or '(none)'}")
        if record["rwen"] and record["rd"] != instruction.d:
            raise broken(f"rd is {record['rd']}, but the instruction writes r{instruction.d}")
        if record["pwen"] and record["pd"] != instruction.d:
            raise broken(f"pd is {record['pd']}, but the instruction writes p{instruction.d}")
        if record["trap"] and (record["rwen"] or record["pwen"] or record["mwen"]):
            raise broken("a trap record writes nothing")
        running[warp] &= ~record["exited"]
    if not records[-1]["trap"] and any(running):
        left = "; ".join(f"warp {warp} lanes {_lanes(mask)}"
                         for warp, mask in enumerate(running) if mask)
        raise DecodeError(f"the trace ends after record {len(records) - 1}, but lanes have "
                          f"not exited ({left}) and no trap stopped the machine")


def replay_difference(launch: Launch, records: list[dict[str, int]],
                      machine: Machine | None) -> str | None:
    """Where the trace first differs from the interpreter's run of the launch (None: it is
    that run, record for record)."""
    from qwengpu.runtime.launch import run_launch_sim

    expected = run_launch_sim(launch, machine=machine).records
    for number, (want, got) in enumerate(zip(expected, records)):
        if want != got:
            field = next(name for name in want if want[name] != got.get(name))
            return (f"record {number} (warp {want['warp']}, pc {want['pc']}) differs from the "
                    f"interpreter's: {field} is {got.get(field)}, the interpreter's "
                    f"{want[field]}")
    if len(expected) != len(records):
        return (f"the trace has {len(records)} records, the interpreter's run "
                f"{len(expected)}")
    return None
