"""Readable trace records: one block of lines per machine step.

    #9   warp 0  pc 9   active 0123  exec 01..  @p0 bra 18      ; line 36: @%p1 bra $L__BB0_2;
         branch to 18: taken by lanes 0 1, lanes 2 3 go on to 10

The first line names the record, the warp (and its block when the grid has several), the
issue PC, the active and exec masks (lane numbers, `.` for a lane not in the mask), the
machine instruction and the PTX instruction it implements.  The lines under it say what the step did: register and predicate writes (one
value per lane, `.` for lanes that did not write), memory writes by buffer name and index,
branch outcomes, exits, and the trap if there was one.  Values are signed 32-bit integers.
"""

from __future__ import annotations

import os
from typing import Iterable, Iterator

from qwengpu.isa import MASK32, SERIAL, Op
from qwengpu.runtime.float_words import f32_text
from qwengpu.runtime.launch import TRAP_DESCRIPTIONS, Launch
from qwengpu.runtime.launch_shape import index_text, launch_dims
from qwengpu.runtime.machine_state import signed_word

INDENT = " " * 5


def lanes_of(mask: int, lanes: int) -> list[int]:
    return [lane for lane in range(lanes) if mask >> lane & 1]


def mask_text(mask: int, lanes: int) -> str:
    """`0123` for all lanes, `01..` for lanes 0 and 1."""
    return "".join(str(lane) if mask >> lane & 1 else "." for lane in range(lanes))


def lane_list(lanes: list[int]) -> str:
    return " ".join(str(lane) for lane in lanes)


def memory_name(launch: Launch, word: int) -> str:
    """`c[3]` for word 3 of buffer c, or `mem[word]` outside every buffer."""
    found = launch.region_of_word(word)
    if found is None:
        return f"mem[{word}]"
    region, index = found
    return f"{region.name}[{index}]"


def stored_text(launch: Launch, word_address: int, value: int) -> str:
    """A stored word: signed, or as a float beside its bits in a launch's f32 buffer."""
    found = launch.region_of_word(word_address)
    if found is not None and found[0].element == "f32":
        return f"{f32_text(value)} ({value & MASK32:#010x})"
    return str(signed_word(value))


def register_text(value: int, is_float: bool) -> str:
    return f"{f32_text(value)} ({value & MASK32:#010x})" if is_float else str(signed_word(value))


def written_text(value: int, op: int, is_float: bool) -> str:
    """A register write: fadd.s1's sum word in hex (it is no number), else `register_text`."""
    return f"{value & MASK32:#010x}" if op == Op.FADD1 else register_text(value, is_float)


def _ptx_opcode_is_f32(program, pc: int) -> bool:
    """Whether the machine instruction at pc comes from a PTX instruction of type .f32 (a
    load of a float shows the float it read)."""
    if pc >= len(program.slots) or program.slots[pc].origin is None:
        return False
    words = [word for word in program.slots[pc].ptx_text.split() if not word.startswith("@")]
    return bool(words) and words[0].split(".")[-1] == "f32"


def format_record(index: int, record: dict[str, int], launch: Launch) -> list[str]:
    lanes = launch.limits.lanes
    pc = record["pc"]
    program = launch.program
    instruction = launch.instructions[pc] if pc < len(launch.instructions) else None
    text = str(instruction) if instruction is not None else "(empty slot)"
    where = ""
    if pc < len(program.slots) and program.slots[pc].origin is not None:
        slot = program.slots[pc]
        where = f"  ; line {slot.ptx_loc.line}: {slot.ptx_text}"
        cuda = slot.origin.cuda_loc
        if cuda is not None:  # PTX made with -lineinfo says which CUDA line it came from
            where += f"  ({os.path.basename(cuda.file)}:{cuda.line})"
    block, _ = launch.thread_of(record["warp"], 0)
    block_name = index_text(block, launch_dims(launch)[0])
    warp = f"warp {record['warp']}" + (f" (block {block_name})" if launch.grid > 1 else "")
    head = (f"#{index:<4d}{warp}  pc {pc:<3d} "
            f"active {mask_text(record['active'], lanes)}  "
            f"exec {mask_text(record['exec'], lanes)}  {text:<22s}{where}")
    lines = [head.rstrip()]
    if record.get("trap"):
        kind = TRAP_DESCRIPTIONS.get(record["trap"], f"trap {record['trap']}")
        lines.append(f"{INDENT}TRAP: {kind} (lane {record['trap_lane']}); the machine stops")
        return lines
    if record["rwen"]:
        # a float the FPU computed, or one a load of a float read, shows beside its bits
        is_float = record["op"] == Op.FADD2 or (record["op"] == Op.LD
                                                 and _ptx_opcode_is_f32(program, pc))
        values = [written_text(record[f"rval{lane}"], record["op"], is_float)
                  if record["rwen"] >> lane & 1 else "." for lane in range(lanes)]
        lines.append(f"{INDENT}r{record['rd']} = [{', '.join(values)}]")
    if record["pwen"]:
        values = [str(record["pval"] >> lane & 1) if record["pwen"] >> lane & 1 else "."
                  for lane in range(lanes)]
        lines.append(f"{INDENT}p{record['pd']} = [{', '.join(values)}]")
    if record["mwen"]:
        stores = [f"{memory_name(launch, record[f'maddr{lane}'])} = "
                  f"{stored_text(launch, record[f'maddr{lane}'], record[f'mval{lane}'])} "
                  f"(lane {lane})" for lane in lanes_of(record["mwen"], lanes)]
        lines.append(f"{INDENT}store " + ", ".join(stores))
    if record["op"] == Op.BRA and record["exec"]:
        taken = lanes_of(record["taken"], lanes)
        staying = [lane for lane in lanes_of(record["active"], lanes) if lane not in taken]
        target = instruction.imm & MASK32 if instruction is not None else "?"
        line = f"{INDENT}branch to {target}: taken by lanes {lane_list(taken) or 'none'}"
        if staying:
            line += f", lanes {lane_list(staying)} go on to {pc + 1}"
        lines.append(line)
    elif record["op"] == Op.BRA:
        lines.append(f"{INDENT}branch not taken: lanes go on to {pc + 1}")
    if record["exited"]:
        lines.append(f"{INDENT}exit: lanes {lane_list(lanes_of(record['exited'], lanes))} finish")
    lines += _cooperation(record, lanes)
    return lines


def _cooperation(record: dict[str, int], lanes: int) -> list[str]:
    """What a barrier or a serial instruction did to the warps and lanes."""
    lines = []
    op = record["op"]
    if record.get("released"):
        lines.append(f"{INDENT}barrier released: every warp of the block goes on")
    elif op == Op.BAR and record["exec"]:
        lines.append(f"{INDENT}barrier: the warp waits for the others of its block")
    if op in SERIAL and record["exec"]:
        ran = lanes_of(record["exec"], lanes)
        if len(ran) > 1:
            lines.append(f"{INDENT}lane {ran[0]} ran it; lanes {lane_list(ran[1:])} run it "
                         "later, in turn")
    return lines


def format_trace(records: Iterable[dict[str, int]], launch: Launch) -> Iterator[str]:
    """Every line of the readable trace."""
    count = 0
    for index, record in enumerate(records):
        yield from format_record(index, record, launch)
        count += 1
    yield f"{count} records"
