"""What a trace page shows of one launch, as plain JSON data (`qwengpu.runtime.trace_page`
turns it into the page).

    data = launch_page_data(launch, result, protocol, name="examples/vector_add/launch.json",
                            backend="sim")

The records go in as the machine wrote them: one list of values a record, in the order of
the protocol's fields (`fields`: name, width and presence condition of each, as the spec's
`emit` statements define them), so a field this module has never heard of still reaches the
page, which shows it raw.  What the page computes from them is only replay: `state_writes`
says which fields write which state (docs/isa.md, "A record": `rwen`/`rd`/`rvalN` a lane's
register, `pwen`/`pd`/`pval` a lane's predicate, `mwen`/`maddrN`/`mvalN` a memory word), and
the page applies those writes record by record from the launch's initial state
(`memory`; registers and predicates start at 0, docs/trace.md "The prompt") — it never runs
an instruction.  Around the records: the program (machine instruction, PTX line and text and
the CUDA line, with its text where the `.cu` file is readable, of every slot), the memory
regions by name, the launched threads, what each record did in words (the lines `hdlc run
--trace` prints under its first), where a warp's lanes split at a branch and join again
(`divergence_events`), the trap, and for a trace a model wrote the token texts of every
record (`record_tokens`).
Nothing in it depends on the clock or the machine the command ran on: the same launch gives
the same data.
"""

from __future__ import annotations

import os
from typing import Sequence

from qwengpu.isa import MASK32, Op
from qwengpu.runtime.launch import Launch, LaunchResult
from qwengpu.runtime.launch_shape import launch_dims
from qwengpu.runtime.trace_format import format_record, lanes_of
from qwengpu.trace.decode import TraceDecoder
from qwengpu.trace.protocol import TraceProtocol

# JavaScript numbers hold integers exactly up to 2^53; a wider field's value goes as text.
EXACT_IN_JAVASCRIPT = 1 << 53

# How record fields write machine state, for the page's replay (docs/isa.md, "A record").
# kind "lane_register": for each lane whose bit of `mask` is set, state[warp][lane][record[
# index]] = record[value + lane]; "lane_predicate": the same with bit `lane` of record[value];
# "memory": word record[address + lane] = record[value + lane], lanes in order (a later lane
# wins).  An entry is used when the protocol has all of its fields.
STATE_WRITES = (
    {"state": "registers", "kind": "lane_register", "mask": "rwen", "index": "rd",
     "value": "rval"},
    {"state": "predicates", "kind": "lane_predicate", "mask": "pwen", "index": "pd",
     "value": "pval"},
    {"state": "memory", "kind": "memory", "mask": "mwen", "address": "maddr", "value": "mval"},
)


def _writes_for(field_names: set[str], lanes: int) -> list[dict]:
    usable = []
    for write in STATE_WRITES:
        needed = {write["mask"], write.get("index"), write["value"] if write["kind"] ==
                  "lane_predicate" else None}
        for lane in range(lanes):
            if write["kind"] != "lane_predicate":
                needed.add(write["value"] + str(lane))
            if write["kind"] == "memory":
                needed.add(write["address"] + str(lane))
        if needed - {None} <= field_names:
            usable.append(write)
    return usable


def _page_value(value: int) -> int | str:
    return value if 0 <= value < EXACT_IN_JAVASCRIPT else str(value)


def record_rows(records: Sequence[dict[str, int]], names: Sequence[str]) -> list[list]:
    """Each record as the list of its values in `names` order (0 for a field it lacks)."""
    return [[_page_value(record.get(name, 0)) for name in names] for record in records]


def record_tokens(ids: Sequence[int], protocol: TraceProtocol
                  ) -> tuple[list[list[str]], list[str]]:
    """The token texts of each record of a trace (the ids after the prompt), and those after
    the last record (`<eos>`; a trace cut short leaves the unfinished record's tokens
    there).  The split is the decoder's own: a record's tokens end where it completes one."""
    decoder = TraceDecoder(protocol)
    per_record: list[list[str]] = []
    pending: list[str] = []
    for token_id in ids:
        pending.append(protocol.describe(token_id).text)
        if decoder.feed(token_id) is not None:
            per_record.append(pending)
            pending = []
    return per_record, pending


def divergence_events(records: Sequence[dict[str, int]], launch: Launch) -> list[dict | None]:
    """Where a warp's lanes part and meet again, one entry a record (None: neither).

    A split is a record after which its active lanes go to two places: some took its branch
    (`taken`), the others go on to the next instruction (a guard that failed, or a branch
    not taken), none of them finishing there.  A join is a record whose active lanes hold
    every lane of its warp's previous record that did not finish, and more: lanes that were
    waiting elsewhere have reached the same pc.  Both are read off the masks alone."""
    lanes = launch.limits.lanes
    before: dict[int, int] = {}          # warp -> active lanes of its last record, not exited
    events: list[dict | None] = []
    for record in records:
        warp, active = record["warp"], record["active"]
        event = None
        previous = before.get(warp, 0)
        gained = active & ~previous
        if previous and active & previous == previous and gained:
            event = {"kind": "join", "warp": warp, "pc": record["pc"],
                     "lanes": lanes_of(active, lanes), "joined": lanes_of(gained, lanes)}
        taken = record.get("taken", 0) & active
        stays = active & ~taken & ~record.get("exited", 0)
        target = _branch_target(record, launch)
        if taken and stays and target != record["pc"] + 1:
            event = {"kind": "split", "warp": warp, "pc": record["pc"],
                     "taken": lanes_of(taken, lanes), "target": target,
                     "stay": lanes_of(stays, lanes), "next": record["pc"] + 1,
                     **({"joined": event["joined"]} if event else {})}
        events.append(event)
        before[warp] = active & ~record.get("exited", 0)
    return events


def _branch_target(record: dict[str, int], launch: Launch) -> int | None:
    pc = record["pc"]
    if record.get("op") == Op.BRA and pc < len(launch.instructions):
        return launch.instructions[pc].imm & MASK32
    return None


def _cuda_line(cuda_file: str, line: int, ptx_path: str) -> str | None:
    """The text of line `line` of the CUDA file a PTX `.loc` names, when it can be read."""
    candidates = [cuda_file] if os.path.isabs(cuda_file) else \
        [os.path.join(os.path.dirname(ptx_path), cuda_file), cuda_file]
    for candidate in candidates:
        try:
            with open(candidate, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        return lines[line - 1].strip() if 0 < line <= len(lines) else None
    return None


def program_rows(launch: Launch) -> list[dict]:
    """Every program slot: the machine instruction, its PTX line and text, its CUDA line."""
    rows = []
    program = launch.program
    for pc, instruction in enumerate(launch.instructions):
        slot = program.slots[pc] if pc < len(program.slots) else None
        origin = slot.origin if slot is not None else None
        row = {"pc": pc, "instruction": str(instruction),
               "ptx_line": slot.ptx_loc.line if origin is not None else None,
               "ptx": slot.ptx_text if origin is not None else "",
               "cuda": None, "cuda_text": None}
        cuda = getattr(origin, "cuda_loc", None)
        if cuda is not None and cuda.line:   # -lineinfo PTX: the CUDA line (0: none)
            row["cuda"] = f"{os.path.basename(cuda.file)}:{cuda.line}"
            row["cuda_text"] = _cuda_line(cuda.file, cuda.line, program.ptx_path)
        rows.append(row)
    return rows


def thread_rows(launch: Launch) -> list[dict]:
    """The launched threads: warp, lane, block and thread index of each."""
    rows = []
    for warp in range(launch.warps):
        for lane in range(launch.limits.lanes):
            block, thread = launch.thread_of(warp, lane)
            if thread < launch.block:
                rows.append({"warp": warp, "lane": lane, "block": block, "thread": thread})
    return rows


def launch_page_data(launch: Launch, result: LaunchResult, protocol: TraceProtocol,
                     name: str, backend: str, ids: Sequence[int] | None = None) -> dict:
    """The page data of one launch that ran (see the module docstring); `ids`, the trace a
    model wrote (after its prompt), gives each record's tokens."""
    records = result.records
    names = [field.name for field in protocol.fields]
    names += sorted({key for record in records for key in record} - set(names))
    known = {field.name: field for field in protocol.fields}
    fields = [{"name": name_, "width": known[name_].width if name_ in known else None,
               "when": known[name_].when if name_ in known else None,
               "when_bit": known[name_].when_bit if name_ in known else None}
              for name_ in names]
    lanes = launch.limits.lanes
    data = {
        "name": name, "kernel": launch.kernel, "source": launch.source_path,
        "ptx": launch.program.ptx_path, "backend": backend,
        "grid": launch.grid, "block": launch.block, "lanes": lanes, "warps": launch.warps,
        "grid_dims": list(launch_dims(launch)[0]), "block_dims": list(launch_dims(launch)[1]),
        "registers": launch.limits.registers, "predicates": launch.limits.predicates,
        "memory_words": launch.limits.memory_words,
        "ops": {str(int(op)): op.name.lower() for op in Op},
        "fields": fields, "state_writes": _writes_for(set(names), lanes),
        "records": record_rows(records, names),
        "text": [format_record(index, record, launch)[1:] for index, record in
                 enumerate(records)],
        "divergence": divergence_events(records, launch),
        "program": program_rows(launch), "threads": thread_rows(launch),
        "regions": [{"name": region.name, "base": region.base_word, "words": region.words,
                     "kind": region.kind} for region in launch.regions],
        "memory": [_page_value(word) for word in launch.memory],
        "trap": result.trap.as_json() if result.trap is not None else None,
        "tokens": None, "end_tokens": None, "error": None,
    }
    if ids is not None:
        data["tokens"], data["end_tokens"] = record_tokens(ids, protocol)
    return data


def failed_page_data(name: str, backend: str, message: str) -> dict:
    """The page entry of a launch that did not end (its error, no records)."""
    return {"name": name, "backend": backend, "error": message}


def page_entry(name: str, launch: Launch, outcome, protocol: TraceProtocol,
               backend: str) -> dict:
    """A launch's page entry from what its run gave: a result (its records, and the ids
    when a model wrote them) or the error that stopped it."""
    if isinstance(outcome, Exception):
        render = getattr(outcome, "render", None)
        return failed_page_data(name, backend, render() if render else str(outcome))
    return launch_page_data(launch, outcome, protocol, name, backend,
                            ids=getattr(outcome, "ids", None))
