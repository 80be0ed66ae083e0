"""The glue between a launch and the machine: fill its state, run it, collect the results.

A launch (program, memory image, parameters, grid and block size) becomes the initial state of
the machine exactly as docs/isa.md ("State") says, on the reference interpreter of the spec.
The numbers that decide what fits (LANES, WARPS, MEM_WORDS, PARAM_WORDS, PROG_WORDS) are read
from the elaborated spec, so a changed spec changes what fits; a launch that does not fit is a
`CapacityError` saying by how much.

    machine = load_machine()                                  # specs/qwengpu.hdl
    machine = load_machine("specs/qwengpu.hdl", {"LANES": 1, "WARPS": 1})   # -P overrides
    result = run(machine, program, memory, params, grid=2, block=8)
    result.memory, result.records, result.trap

`new_simulator` returns the filled `Simulator` for callers that want to step it themselves.
Elaborated specs are cached per file (and modification time) and overrides, so repeated
launches are cheap; `machine_from_source` does the same for spec text (a checkpoint's
machine.json, qwengpu.runtime.machine_file).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

import qwengpu
from qwengpu.dsl.elaborate import elaborate_source, load_design
from qwengpu.dsl.interp import Simulator, compile_step
from qwengpu.dsl.netlist import Design
from qwengpu.errors import CapacityError, HdlError, LaunchError, Location, UserError
from qwengpu.isa import DEFAULT_ISA, MASK32, MAX_LAUNCH_RECORDS, Instruction, Trap
from qwengpu.isa.machine import MachineIsa

DEFAULT_SPEC = Path(qwengpu.__file__).resolve().parents[1] / "specs" / "qwengpu.hdl"
DEFAULT_MAX_RECORDS = 1_000_000

# What a launch fills: memories and registers by name, as docs/isa.md lists them.
LAUNCH_MEMORIES = ("prog", "mem", "params", "live", "warp_ctaid", "warp_tid0")
LAUNCH_REGISTERS = ("ntid", "nctaid")
SHAPE_PARAMETERS = ("LANES", "WARPS", "REGS", "PREDS", "MEM_WORDS", "PARAM_WORDS", "PROG_WORDS")
WINDOW_PARAMETERS = ("SHARED_WORDS", "LOCAL_WORDS")     # a spec without them has none


@dataclass(frozen=True)
class MachineShape:
    """The spec's parameters that decide what a launch may use."""

    lanes: int
    warps: int
    regs: int
    preds: int
    mem_words: int
    param_words: int
    prog_words: int
    shared_words: int = 0       # at most this many a block (and at most mem_words)
    local_words: int = 0        # at most this many a thread

    @classmethod
    def from_design(cls, design: Design) -> "MachineShape":
        missing = [name for name in SHAPE_PARAMETERS if name not in design.params]
        if missing:
            raise HdlError(f"{design.name} is not a QwenGPU machine: it has no parameter "
                           f"{', '.join(missing)} (docs/isa.md)", Location(design.file))
        mem_words = design.params["MEM_WORDS"]
        windows = [min(design.params.get(name, 0), mem_words) for name in WINDOW_PARAMETERS]
        return cls(*(design.params[name] for name in SHAPE_PARAMETERS), *windows)


class Machine:
    """An elaborated machine spec, its shape, and its compiled step (shared by simulators)."""

    def __init__(self, design: Design):
        self.design = design
        self.shape = MachineShape.from_design(design)
        _check_launch_state(design, self.shape)
        _check_record_fields(design, self.shape)
        self._step = compile_step(design)
        self._isa: MachineIsa | None = None

    def simulator(self) -> Simulator:
        """A fresh simulator in the reset state."""
        return Simulator(self.design, self._step)

    @property
    def isa(self) -> MachineIsa:
        """The machine's instruction set, read from its spec (a spec whose opcodes carry no
        assembly forms has the default machine's)."""
        if self._isa is None:
            self._isa = MachineIsa.from_design(self.design) \
                if self.design.enum_texts.get("Op") else DEFAULT_ISA
        return self._isa


# The record fields the runtime reads (docs/isa.md, "Records"): launches, traps, `--trace`.
RECORD_FIELDS = ("warp", "pc", "active", "exec", "op", "rwen", "rd", "rval*", "pwen", "pd",
                 "pval", "mwen", "maddr*", "mval*", "trap", "trap_lane", "taken", "exited")


def _check_record_fields(design: Design, shape: MachineShape) -> None:
    """Refuse a spec whose `emit` statements leave out a field the runtime reads."""
    emitted = {record_field.name for record_field in design.record}
    needed = [name for field in RECORD_FIELDS
              for name in ([field[:-1] + str(lane) for lane in range(shape.lanes)]
                           if field.endswith("*") else [field])]
    missing = [name for name in needed if name not in emitted]
    if missing:
        raise HdlError(f"{design.name}'s record lacks {', '.join(missing)}: a launch's trace "
                       "needs every field of docs/isa.md's record table (emit them, "
                       "optionally with `when`)",
                       design.record[-1].loc if design.record else Location(design.file))


def _check_launch_state(design: Design, shape: MachineShape) -> None:
    expected_shapes = {"prog": (shape.prog_words,), "mem": (shape.mem_words,),
                       "params": (shape.param_words,), "live": (shape.warps, shape.lanes),
                       "warp_ctaid": (shape.warps,), "warp_tid0": (shape.warps,)}
    for name in LAUNCH_MEMORIES:
        memory = design.memories.get(name)
        if memory is None:
            raise HdlError(f"{design.name} has no memory '{name}', which a launch fills "
                           f"(docs/isa.md, \"State\")", Location(design.file))
        if memory.shape != expected_shapes[name]:
            raise HdlError(f"memory {name} has shape {list(memory.shape)}, a launch expects "
                           f"{list(expected_shapes[name])}", memory.loc)
    for name in LAUNCH_REGISTERS:
        if name not in design.registers:
            raise HdlError(f"{design.name} has no register '{name}', which a launch fills "
                           f"(docs/isa.md, \"State\")", Location(design.file))
    if design.memories["prog"].width != 64:
        raise HdlError("memory prog must hold 64-bit instructions", design.memories["prog"].loc)


@lru_cache(maxsize=16)
def _cached_machine(path: str, mtime_ns: int, overrides: tuple) -> Machine:
    return Machine(load_design(path, dict(overrides)))


def load_machine(spec: str | Path | None = None,
                 overrides: Mapping[str, int] | None = None) -> Machine:
    """The machine of a spec file (default: the repository's specs/qwengpu.hdl)."""
    path = Path(spec) if spec is not None else DEFAULT_SPEC
    try:
        mtime_ns = path.stat().st_mtime_ns
    except OSError:
        mtime_ns = 0          # load_design reports the missing file
    return _cached_machine(str(path), mtime_ns, tuple(sorted((overrides or {}).items())))


@lru_cache(maxsize=8)
def _cached_machine_of_source(source: str, file: str, overrides: tuple) -> Machine:
    return Machine(elaborate_source(source, file, dict(overrides)))


def machine_from_source(source: str, file: str,
                        overrides: Mapping[str, int] | None = None) -> Machine:
    """The machine of spec text (a checkpoint's machine.json); `file` names it in errors."""
    return _cached_machine_of_source(source, file, tuple(sorted((overrides or {}).items())))


def _too_many(what: str, count: int, limit: int, parameter: str) -> CapacityError:
    return CapacityError(f"{what}: {count}, but the machine holds {limit} ({parameter}); "
                         f"{count - limit} too many")


def warps_per_block(block: int, lanes: int) -> int:
    return -(-block // lanes)


# The state that gives blocks their shared memory and threads their local memory, and the
# barriers' (docs/isa.md, "Shared and local memory", "Barriers"); a spec may lack them all.
WINDOW_STATE = ("warp_block", "warp_shared", "thread_local", "waiting", "shared_words",
                "local_words")


@dataclass(frozen=True)
class Windows:
    """Where a launch's shared and local memory lie in the machine's memory: each block's
    window of `shared_words` words from `shared_bases[block]`, each thread's (block, thread
    in block) of `local_words` from `local_bases[block][thread]`."""

    shared_words: int = 0
    local_words: int = 0
    shared_bases: tuple[int, ...] = ()
    local_bases: tuple[tuple[int, ...], ...] = ()

    @property
    def words(self) -> int:
        return self.shared_words * len(self.shared_bases) + \
            self.local_words * sum(len(threads) for threads in self.local_bases)

    @classmethod
    def laid_out(cls, first_word: int, grid: int, block: int, shared_words: int,
                 local_words: int, shape: "MachineShape", local_align_words: int = 1
                 ) -> "Windows":
        """Windows from `first_word` on: every block's shared memory, then every thread's
        local memory, from a multiple of `local_align_words` (`local_words` is one too).
        Raises `CapacityError` when they do not fit in the memory."""
        if shared_words > shape.shared_words:
            raise _too_many("words of shared memory a block has", shared_words,
                            shape.shared_words, "SHARED_WORDS")
        if local_words > shape.local_words:
            raise _too_many("words of local memory a thread has", local_words,
                            shape.local_words, "LOCAL_WORDS")
        shared_bases = tuple(first_word + b * shared_words for b in range(grid)) \
            if shared_words else ()
        start = first_word + shared_words * len(shared_bases)
        if local_words:
            start = -(-start // local_align_words) * local_align_words
        local_bases = tuple(tuple(start + (b * block + t) * local_words for t in range(block))
                            for b in range(grid)) if local_words else ()
        windows = cls(shared_words, local_words, shared_bases, local_bases)
        end = start + local_words * grid * block if local_words else first_word + windows.words
        if end > shape.mem_words:
            raise CapacityError(
                f"memory: the launch's words ({first_word}) and its shared and local memory "
                f"({windows.words}: {shared_words} shared a block, {local_words} local a "
                f"thread) need {end} words, but the machine has {shape.mem_words} "
                f"(MEM_WORDS); {end - shape.mem_words} too many")
        return windows


def new_simulator(machine: Machine | str | Path | None, program: Sequence[Instruction],
                  memory: Sequence[int], params: Sequence[int], grid: int,
                  block: int, windows: Windows | None = None) -> Simulator:
    """A simulator whose state holds this launch (docs/isa.md, "State"), ready to step.

    `machine` is a `Machine`, a spec path, or None for the default spec.  Memory and
    parameter words may be negative; they are taken modulo 2**32.  Raises `CapacityError`
    when something does not fit and `LaunchError` for a grid or block below 1."""
    if not isinstance(machine, Machine):
        machine = load_machine(machine)
    shape = machine.shape
    if grid < 1 or block < 1:
        raise LaunchError(f"grid and block must be at least 1 (got grid {grid}, "
                          f"block {block})")
    if len(program) > shape.prog_words:
        raise _too_many("instructions in the program", len(program), shape.prog_words,
                        "PROG_WORDS")
    if len(memory) > shape.mem_words:
        raise _too_many("words in the memory image", len(memory), shape.mem_words,
                        "MEM_WORDS")
    if len(params) > shape.param_words:
        raise _too_many("parameter words", len(params), shape.param_words, "PARAM_WORDS")
    per_block = warps_per_block(block, shape.lanes)
    if grid * per_block > shape.warps:
        raise CapacityError(
            f"warps needed by the launch: {grid * per_block} ({grid} block"
            f"{'s' if grid != 1 else ''} of {block} threads, {per_block} warp"
            f"{'s' if per_block != 1 else ''} of {shape.lanes} lanes each), but the machine "
            f"holds {shape.warps} (WARPS); {grid * per_block - shape.warps} too many")

    sim = machine.simulator()
    sim.load_memory("prog", [instruction.encode(machine.isa) for instruction in program])
    sim.load_memory("mem", list(memory))
    sim.load_memory("params", list(params))
    for warp in range(grid * per_block):
        block_index, warp_in_block = divmod(warp, per_block)
        tid0 = warp_in_block * shape.lanes
        sim.write_memory("warp_ctaid", (warp,), block_index)
        sim.write_memory("warp_tid0", (warp,), tid0)
        for lane in range(shape.lanes):
            sim.write_memory("live", (warp, lane), int(tid0 + lane < block))
    sim.set_register("ntid", block)
    sim.set_register("nctaid", grid)
    _fill_windows(machine, sim, windows or Windows(), grid, block, per_block)
    return sim


def _fill_windows(machine: Machine, sim: Simulator, windows: Windows, grid: int, block: int,
                  per_block: int) -> None:
    design, lanes = machine.design, machine.shape.lanes
    if not all(name in design.memories or name in design.registers for name in WINDOW_STATE):
        if windows.words:
            raise CapacityError(f"{design.name} has no shared or local memory (its spec lacks "
                                f"{', '.join(WINDOW_STATE)}), which this launch uses")
        return
    for warp in range(grid * per_block):
        block_index, warp_in_block = divmod(warp, per_block)
        sim.write_memory("warp_block", (warp,), block_index)
        if windows.shared_words:
            sim.write_memory("warp_shared", (warp,), windows.shared_bases[block_index])
        if windows.local_words:
            for lane in range(lanes):
                thread = warp_in_block * lanes + lane
                if thread < block:
                    sim.write_memory("thread_local", (warp, lane),
                                     windows.local_bases[block_index][thread])
    sim.set_register("shared_words", windows.shared_words)
    sim.set_register("local_words", windows.local_words)


@dataclass
class MachineRun:
    """What a launch produced on the interpreter."""

    records: list[dict[str, int]]
    memory: list[int]                     # final global memory, words as unsigned ints
    trap: Trap = Trap.NONE
    trap_record: dict[str, int] | None = field(default=None)   # the record that trapped

    @property
    def trapped(self) -> bool:
        return self.trap != Trap.NONE


def unfinished_message(records: Sequence[dict[str, int]], max_records: int) -> str:
    """Why a launch stopped at `max_records`: the warps the last records ran, each with its
    live lanes and the pcs it went round (an endless loop shows as a small set of pcs)."""
    recent = records[-64:]
    loops: dict[int, tuple[int, set[int]]] = {}
    for record in recent:
        active, pcs = loops.setdefault(record["warp"], (record["active"], set()))
        loops[record["warp"]] = (record["active"], pcs | {record["pc"]})
    described = []
    for warp, (active, pcs) in sorted(loops.items()):
        lanes = ",".join(str(lane) for lane in range(active.bit_length()) if active >> lane & 1)
        shown = ", ".join(str(pc) for pc in sorted(pcs)[:8]) + (", ..." if len(pcs) > 8 else "")
        described.append(f"warp {warp} (lanes {lanes or 'none'}) at pcs {shown}")
    return (f"the launch did not finish within {max_records} records (an endless loop?); its "
            f"last {len(recent)} records ran " + "; ".join(described))


def check_max_records(max_records: int):
    """A launch runs 1 .. MAX_LAUNCH_RECORDS records: the loader's address proofs rest on the
    bound (`qwengpu.ptx.ranges`)."""
    if not 1 <= max_records <= MAX_LAUNCH_RECORDS:
        raise UserError(f"--max-records must be 1 .. {MAX_LAUNCH_RECORDS} (the loader leaves out "
                        "address checks that a longer launch could need; docs/ptx.md "
                        f"\"Memory\"), not {max_records}")


def run_simulator(sim: Simulator, max_records: int = DEFAULT_MAX_RECORDS) -> MachineRun:
    """Step a filled simulator until the machine stops; `LaunchError` past `max_records`."""
    check_max_records(max_records)
    records = sim.run(max_records)
    if len(records) == max_records and sim.step() is not None:
        raise LaunchError(unfinished_message(records, max_records))
    trap = Trap(sim.registers.get("trap", 0)) if sim.registers.get("halted") else Trap.NONE
    return MachineRun(records=records, memory=list(sim.memories["mem"]), trap=trap,
                        trap_record=records[-1] if trap != Trap.NONE and records else None)


def run(machine: Machine | str | Path | None, program: Sequence[Instruction],
        memory: Sequence[int], params: Sequence[int], grid: int, block: int,
        max_records: int = DEFAULT_MAX_RECORDS) -> MachineRun:
    """Run a launch to the end on the interpreter (see `new_simulator` for the arguments)."""
    return run_simulator(new_simulator(machine, program, memory, params, grid, block),
                         max_records)


def signed_word(value: int) -> int:
    """A 32-bit word read as two's complement."""
    value &= MASK32
    return value - (1 << 32) if value & 0x8000_0000 else value
