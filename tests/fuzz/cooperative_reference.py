"""An independent evaluator of PTX kernels whose threads cooperate (the cooperative fuzz).

Written from the PTX ISA manual and docs/isa.md, importing nothing from `qwengpu` (nor from
`ptx_reference.py`): shared memory, `bar.sync 0`, atomics and `red`, `shfl.sync`,
`vote.sync`, `activemask` and byte and halfword stores, with the integer instructions around
them.  `run_ptx(text, grid, block, buffers, args)` gives the buffers after the launch.

**Execution.**  A block's threads run in warps of `WARP_LANES` (4, QwenGPU's `WARP_SZ`) lanes
in lockstep, each lane with its own PC: a warp runs the instruction at the lowest PC of its
unfinished lanes, for the lanes there.  nvcc lays a join after both sides of an `if` and a
loop's exit after its body, so these are the lanes a reconvergence stack would run together;
that is what decides a vote or `activemask` inside a branch.  Within one instruction of a
warp, shuffles and votes read every lane before any writes, and atomics and sub-word stores
go lane by lane in lane order (each sees the word as the lanes before it left it: the order
QwenGPU documents for a warp).  Warps run one at a time, each up to its next barrier, and
blocks one after the other: an order no kernel whose result is defined can observe.

**Only defined results.**  Where PTX leaves a kernel's result to the hardware's timing, the
evaluator refuses it (`NotDefined`), so the fuzz compares only what both sides must agree on,
and its shrinker cannot turn a kernel into one whose answer is a matter of scheduling:

- a race: two threads touch one byte without a barrier between them (different blocks never
  have one), and one of them writes it plainly, or one reads it plainly and the other
  updates it atomically;
- atomics on one word by two warps with no barrier between them, unless both are the same
  operation and it commutes (`add`, `min`, `max`, `and`, `or`, `xor`) and neither's returned
  old value is read (by either order the word ends the same; the old values would differ);
- an undefined value read: shared memory before any thread wrote it, a shuffle from a lane
  that does not run it, a register never written;
- a barrier that only some of a warp's lanes that have not exited reach (PTX has each wait
  for the others of its warp, which QwenGPU does not; a barrier waits for the threads of the
  block that have not exited, at any `bar.sync 0`, as PTX's barrier 0 counts arrivals);
- a shuffle or vote whose member mask leaves out a lane running it or names a lane of the
  warp that is not there with it, or whose lanes give different masks.

Memory is bytes.  Buffers lie `GLOBAL_SPACING` bytes apart and shared variables
`SHARED_SPACING` apart, and an access must lie inside one buffer or variable (else
`PtxReferenceError`): a kernel that uses only symbol and buffer addresses gets the same answer
from any layout, so this one need not be the loader's (docs/ptx.md, "Shared memory").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

WARP_LANES = 4
FULL = 0xFFFF_FFFF
DEFAULT_STEP_LIMIT = 200_000          # warp steps in one launch
GLOBAL_SPACING = 0x1_0000
SHARED_SPACING = 0x1000
GENERIC_SHARED = 1 << 40              # the generic address of shared byte 0
UNDEFINED = type("Undefined", (), {"__repr__": lambda self: "UNDEFINED"})()


class PtxReferenceError(Exception):
    """The kernel is outside what the evaluator understands, or is not valid PTX to run."""


class NotDefined(PtxReferenceError):
    """PTX does not define the kernel's result: a race, order-dependent atomics, ..."""


class StepLimitExceeded(PtxReferenceError):
    """The launch ran longer than the step limit (most likely an endless loop)."""


def mask(width: int) -> int:
    return (1 << width) - 1


def signed(value: int, width: int) -> int:
    value &= mask(width)
    return value - (1 << width) if value >> (width - 1) else value


# ---- the meaning of operations: each written once ---------------------------------------------

# binary operations on unsigned operands of `width` bits (masked afterwards); `s`: signed type
BINARY = {
    "add": lambda a, b, w, s: a + b,
    "sub": lambda a, b, w, s: a - b,
    "mul.lo": lambda a, b, w, s: a * b,
    "mul.hi": lambda a, b, w, s: (signed(a, w) * signed(b, w) if s else a * b) >> w,
    "and": lambda a, b, w, s: a & b,
    "or": lambda a, b, w, s: a | b,
    "xor": lambda a, b, w, s: a ^ b,
    # PTX clamps a shift amount above the width to the width
    "shl": lambda a, b, w, s: 0 if b >= w else a << b,
    "shr": lambda a, b, w, s: signed(a, w) >> min(b, w) if s else (0 if b >= w else a >> b),
    "min": lambda a, b, w, s: min(signed(a, w), signed(b, w)) if s else min(a, b),
    "max": lambda a, b, w, s: max(signed(a, w), signed(b, w)) if s else max(a, b),
}

COMPARE = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b,
    "hi": lambda a, b: a > b, "hs": lambda a, b: a >= b,
}
UNSIGNED_COMPARE = {"lo", "ls", "hi", "hs"}

# atom.OP: the word's new value from the old one, b and c (PTX ISA, "atom"); 32-bit words
ATOMIC = {
    "add": lambda old, b, c, s: old + b,
    "min": lambda old, b, c, s: min(signed(old, 32), signed(b, 32)) if s else min(old, b),
    "max": lambda old, b, c, s: max(signed(old, 32), signed(b, 32)) if s else max(old, b),
    "and": lambda old, b, c, s: old & b,
    "or": lambda old, b, c, s: old | b,
    "xor": lambda old, b, c, s: old ^ b,
    "exch": lambda old, b, c, s: b,
    "cas": lambda old, b, c, s: c if old == b else old,
    "inc": lambda old, b, c, s: 0 if old >= b else old + 1,
    "dec": lambda old, b, c, s: b if old == 0 or old > b else old - 1,
}
COMMUTATIVE = {"add", "min", "max", "and", "or", "xor"}   # one of these twice: either order
ORDERING = {"relaxed", "acquire", "release", "acq_rel", "sc", "cta", "gpu", "sys"}

SIZES = {"8": 1, "16": 2, "32": 4, "64": 8}
SPACES = ("global", "shared", "generic")


def space_of(parts: list[str]) -> str:
    """The state space of `ld`/`st` (`ld.shared.u32`, ...; none written: generic)."""
    return parts[1] if parts[1] in SPACES or parts[1] == "param" else "generic"


def serial_order(lanes: list) -> list:
    """The order a warp's lanes run an atomic in: lane order, as QwenGPU documents (docs/isa.md,
    "Serial instructions"; PTX leaves it open)."""
    return lanes


def shuffle_source(mode: str, lane: int, b: int, c: int) -> tuple[int, bool]:
    """The lane j a shuffle reads and whether it is in range (PTX ISA, "shfl.sync"): c holds
    the clamp (c[4:0]) and the segment mask (c[12:8]); a lane past the warp's WARP_LANES lanes
    is out of range too (QwenGPU's warps have 4)."""
    b, clamp, segment = b & 0x1F, c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & segment) | (clamp & ~segment)
    min_lane = lane & segment
    if mode == "up":
        j = lane - b
        return j, j >= max_lane
    j = {"down": lane + b, "bfly": lane ^ b, "idx": min_lane | (b & ~segment)}[mode]
    return j, j <= max_lane and j < WARP_LANES


# ---- parsing ------------------------------------------------------------------------------------

@dataclass
class Instruction:
    """One PTX instruction as written: `@guard opcode operands;`, with its line number."""

    opcode: str
    operands: list[str]
    line: int
    guard: str | None = None
    guard_negated: bool = False

    @property
    def parts(self) -> list[str]:
        return [part for part in self.opcode.split(".") if part not in ORDERING]

    @property
    def type_name(self) -> str:
        return self.parts[-1]

    @property
    def width(self) -> int:
        return 1 if self.type_name == "pred" else int(self.type_name[1:])

    def fail(self, message: str, kind=PtxReferenceError) -> PtxReferenceError:
        return kind(f"line {self.line}: {self.opcode}: {message}")


@dataclass
class Kernel:
    name: str
    params: list[tuple[str, str]]                      # (name, type such as "u64")
    registers: dict[str, int] = field(default_factory=dict)    # name -> width in bits
    shared: dict[str, int] = field(default_factory=dict)       # variable -> size in bytes
    instructions: list[Instruction] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)


ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.S)
PARAM = re.compile(r"\.param\s+\.(\w+)\s+([\w$]+)")
REGISTERS = re.compile(r"^\.reg\s+\.(\w+)\s+(%?[\w$]+)(?:<(\d+)>)?\s*;$")
SHARED = re.compile(r"^\.shared\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+([\w$]+)(?:\[(\d+)\])?\s*;$")
LABEL = re.compile(r"^([\w$]+):$")
GUARD = re.compile(r"^@(!?)(%?\w+)\s+")
ADDRESS = re.compile(r"^\[\s*(%?[\w$.]+)\s*(?:\+\s*(-?\w+))?\s*\]$")


def type_width(type_name: str) -> int:
    return 1 if type_name == "pred" else int(type_name[1:])


def parse_kernel(text: str) -> Kernel:
    """The single `.entry` of `text`: parameters, registers, shared variables, instructions."""
    entry = ENTRY.search(text)
    if entry is None:
        raise PtxReferenceError("no .entry in the PTX text")
    kernel = Kernel(entry.group(1), [(m.group(2), m.group(1))
                                     for m in PARAM.finditer(entry.group(2))])
    for line in text[:entry.start()].split("\n"):          # module-level .shared variables
        declare_shared(kernel, line.split("//", 1)[0].strip())
    first_line = text.count("\n", 0, entry.end()) + 1
    for offset, raw in enumerate(text[entry.end():].split("\n")):
        line, number = raw.split("//", 1)[0].strip(), first_line + offset
        if not line or line in ("{", "}") or declare_shared(kernel, line):
            continue
        registers = REGISTERS.match(line)
        if registers:
            width, name, count = type_width(registers.group(1)), *registers.group(2, 3)
            names = [f"{name}{index}" for index in range(int(count))] if count else [name]
            kernel.registers.update((each, width) for each in names)
        elif line.startswith("."):
            continue                                          # .loc, .pragma, ...
        elif LABEL.match(line):
            kernel.labels[LABEL.match(line).group(1)] = len(kernel.instructions)
        elif line.endswith(";"):
            kernel.instructions.append(parse_instruction(line[:-1].strip(), number))
        else:
            raise PtxReferenceError(f"line {number}: expected an instruction ending in ';'")
    return kernel


def declare_shared(kernel: Kernel, line: str) -> bool:
    match = SHARED.match(line)
    if match:
        type_name, name, count = match.groups()
        kernel.shared[name] = (type_width(type_name) // 8) * int(count or 1)
    return match is not None


def parse_instruction(text: str, number: int) -> Instruction:
    guard, negated = None, False
    match = GUARD.match(text)
    if match:
        negated, guard = match.group(1) == "!", match.group(2)
        text = text[match.end():]
    opcode, _, rest = text.partition(" ")
    operands = [operand.strip() for operand in rest.split(",")] if rest.strip() else []
    return Instruction(opcode, operands, number, guard, negated)


def parse_immediate(text: str) -> int | None:
    text = text.rstrip("U")
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    try:
        value = int(digits, 16) if digits.lower().startswith("0x") else int(digits, 10)
    except ValueError:
        return None
    return -value if negative else value


# ---- threads, memory and what they did ---------------------------------------------------------

@dataclass(eq=False)
class Thread:
    block: int
    tid: int
    special: dict[str, int]
    registers: dict = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)  # register -> atomic whose old value
    pc: int = 0
    exited: bool = False

    @property
    def lane(self) -> int:
        return self.tid % WARP_LANES

    @property
    def warp(self) -> tuple[int, int]:
        return self.block, self.tid // WARP_LANES

    def __str__(self) -> str:
        return f"thread {self.tid} of block {self.block}"


@dataclass
class Access:
    thread: Thread
    phase: int
    kind: str                       # "read", "write" or "atomic"


VERBS = {"read": "reads", "write": "writes", "atomic": "updates atomically"}


@dataclass
class AtomicEvent:
    number: int
    thread: Thread
    phase: int
    op: str                         # "add", "min.s", "exch", ...


@dataclass
class Region:
    space: str
    name: str
    start: int
    size: int


def concurrent(a: Thread, phase_a: int, b: Thread, phase_b: int) -> bool:
    """Whether nothing orders the two threads' accesses: a barrier orders a block's threads
    (phases), nothing orders blocks; one thread's accesses are in program order."""
    return a is not b and (a.block != b.block or phase_a == phase_b)


class Memory:
    """Bytes of global memory and of each block's shared memory; undefined until written.
    Every access is logged so that races are found wherever they are in the launch."""

    def __init__(self):
        self.bytes: dict[tuple, int] = {}
        self.regions: list[Region] = []
        self.accesses: dict[tuple, list[Access]] = {}
        self.atomics: dict[tuple, list[AtomicEvent]] = {}
        self.used_atomics: set[int] = set()

    def key(self, space: str, thread: Thread, address: int, size: int,
            ins: Instruction) -> tuple:
        """The key of the first byte: (space, block for shared memory, byte address)."""
        if address % size:
            raise ins.fail(f"byte address {address:#x} is not a multiple of {size}")
        for region in self.regions:
            if region.space == space and region.start <= address and \
                    address + size <= region.start + region.size:
                return space, thread.block if space == "shared" else None, address
        raise ins.fail(f"{space} byte address {address:#x} is in no buffer or variable")

    def log(self, key: tuple, size: int, thread: Thread, phase: int, kind: str,
            ins: Instruction):
        space, block, address = key
        for byte in range(address, address + size):
            earlier = self.accesses.setdefault((space, block, byte), [])
            for other in earlier:
                if not concurrent(other.thread, other.phase, thread, phase) or \
                        kind == other.kind != "write":
                    continue
                raise ins.fail(f"a race: {thread} {VERBS[kind]} {self.name(key)} (byte "
                               f"{byte % 4}), which {other.thread} {VERBS[other.kind]} "
                               "with no barrier between", NotDefined)
            if not any(other.thread is thread and other.phase == phase and
                       other.kind == kind for other in earlier):
                earlier.append(Access(thread, phase, kind))

    def name(self, key: tuple) -> str:
        space, _, address = key
        region = next(r for r in self.regions if r.space == space and
                      r.start <= address < r.start + r.size)
        return f"{region.name}[{(address - region.start) // 4}]"

    def read(self, key: tuple, size: int):
        space, block, address = key
        values = [self.bytes.get((space, block, address + i)) for i in range(size)]
        if None in values:
            return UNDEFINED
        return sum(value << (8 * i) for i, value in enumerate(values))

    def write(self, key: tuple, size: int, value: int):
        space, block, address = key
        for i in range(size):
            self.bytes[(space, block, address + i)] = (value >> (8 * i)) & 0xFF

    def check_atomic_order(self):
        """Atomics on one word that nothing orders must commute and return nothing read."""
        for key, events in self.atomics.items():
            for index, first in enumerate(events):
                for second in events[index + 1:]:
                    if first.thread.warp == second.thread.warp or not concurrent(
                            first.thread, first.phase, second.thread, second.phase):
                        continue
                    where = f"{self.name(key)} by {first.thread} and {second.thread}"
                    if first.op != second.op or first.op.split(".")[0] not in COMMUTATIVE:
                        raise NotDefined(f"atom.{first.op} and atom.{second.op} on {where}, "
                                         "with no barrier between: the word depends on "
                                         "their order")
                    if {first.number, second.number} & self.used_atomics:
                        raise NotDefined(f"the old value of an atom.{first.op} on {where} "
                                         "is read, but nothing orders the two")


# ---- the launch ---------------------------------------------------------------------------------

@dataclass
class Block:
    index: int
    warps: list[list[Thread]]
    waiting: dict[int, int] = field(default_factory=dict)   # warp -> the `bar` it waits at
    phase: int = 0                                         # barriers released so far


class Launch:
    """One launch of a kernel: its memory, parameters and blocks, run to the end."""

    def __init__(self, kernel: Kernel, buffers: dict[str, list[int]], args: list,
                 grid: int, block: int, step_limit: int):
        if len(args) != len(kernel.params):
            raise PtxReferenceError(f"kernel {kernel.name} takes {len(kernel.params)} "
                                    f"arguments, got {len(args)}")
        self.kernel, self.grid, self.block_size = kernel, grid, block
        self.step_limit, self.steps, self.atomic_count = step_limit, 0, 0
        self.memory = Memory()
        self.buffer_addresses = {}
        for index, (name, words) in enumerate(buffers.items()):
            start = GLOBAL_SPACING * (index + 1)
            self.buffer_addresses[name] = start
            self.memory.regions.append(Region("global", name, start, 4 * len(words)))
            for offset, word in enumerate(words):
                self.memory.write(("global", None, start + 4 * offset), 4, word & FULL)
        self.symbols = {}
        for index, (name, size) in enumerate(kernel.shared.items()):
            self.symbols[name] = SHARED_SPACING * (index + 1)
            self.memory.regions.append(Region("shared", name, self.symbols[name], size))
        self.params = {}
        for (name, type_name), arg in zip(kernel.params, args):
            value = self.buffer_addresses[arg] if isinstance(arg, str) else arg
            self.params[name] = value & mask(type_width(type_name))

    def run(self) -> dict[str, list[int]]:
        for index in range(self.grid):
            threads = [Thread(index, tid, self.special(index, tid))
                       for tid in range(self.block_size)]
            self.run_block(Block(index, [threads[first:first + WARP_LANES] for first in
                                         range(0, self.block_size, WARP_LANES)]))
        self.memory.check_atomic_order()
        return {region.name: [self.memory.read(("global", None, region.start + 4 * i), 4)
                              for i in range(region.size // 4)]
                for region in self.memory.regions if region.space == "global"}

    def special(self, block: int, tid: int) -> dict[str, int]:
        values = {"%tid.x": tid, "%ntid.x": self.block_size, "%ctaid.x": block,
                  "%nctaid.x": self.grid, "%laneid": tid % WARP_LANES}
        for axis in "yz":                                   # a 1-D launch
            values.update({f"%tid.{axis}": 0, f"%ntid.{axis}": 1, f"%ctaid.{axis}": 0,
                           f"%nctaid.{axis}": 1})
        return values

    def run_block(self, block: Block):
        """Each warp up to its next barrier in turn; then every warp is past it.  PTX's
        `bar.sync` waits for the threads that have not exited, at whichever `bar.sync 0`
        (barrier 0 counts arrivals, not instructions)."""
        while True:
            for index, warp in enumerate(block.warps):
                while index not in block.waiting and any(not t.exited for t in warp):
                    self.step(block, index)
            if not block.waiting:
                return
            block.waiting.clear()
            block.phase += 1

    def step(self, block: Block, warp_index: int):
        """One instruction of one warp: the lanes at its lowest PC run it."""
        self.steps += 1
        if self.steps > self.step_limit:
            raise StepLimitExceeded(f"the launch ran more than {self.step_limit} warp steps: "
                                    "an endless loop?")
        warp = block.warps[warp_index]
        live = [t for t in warp if not t.exited]
        pc = min(t.pc for t in live)
        if pc >= len(self.kernel.instructions):
            raise PtxReferenceError("a thread ran past the last instruction without ret")
        ins = self.kernel.instructions[pc]
        active = [t for t in live if t.pc == pc]
        for t in active:
            t.pc = pc + 1
        executing = [t for t in active if ins.guard is None or
                     self.predicate(t, ins.guard, ins) != ins.guard_negated]
        name = ins.parts[0]
        if name in ("bar", "barrier"):
            self.barrier(block, warp_index, live, executing, ins, pc)
        elif not executing:
            return
        elif name == "shfl":
            self.shuffle(warp, executing, ins)
        elif name == "vote":
            self.vote(warp, executing, ins)
        elif name == "activemask":
            bits = sum(1 << t.lane for t in executing)
            for t in executing:
                self.write(t, ins.operands[0], bits, ins)
        elif name in ("atom", "red"):
            for t in serial_order(executing):
                self.atomic(t, ins, block.phase)
        else:
            for t in executing:
                self.execute(t, ins, block.phase)

    # -- operands ---------------------------------------------------------------------------

    def read(self, thread: Thread, operand: str, width: int, ins: Instruction) -> int:
        if operand in thread.special:
            return thread.special[operand] & mask(width)
        if operand == "WARP_SZ":
            return WARP_LANES
        if operand in self.symbols:
            return self.symbols[operand] & mask(width)
        if operand.startswith("%"):
            if operand not in self.kernel.registers:
                raise ins.fail(f"{operand} is not a declared register (%warpid and the like "
                               "are not read: PTX does not tie them to %tid)")
            if operand in thread.tags:
                self.memory.used_atomics.add(thread.tags[operand])
            value = thread.registers.get(operand)
            if value is None:
                raise ins.fail(f"{operand} is read before it is written ({thread})")
            if value is UNDEFINED:
                raise ins.fail(f"{operand} holds an undefined value ({thread}): shared "
                               "memory no thread wrote, or a shuffle from a lane that did "
                               "not run it", NotDefined)
            if isinstance(value, bool):
                raise ins.fail(f"{operand} is a predicate; a value is needed")
            return value & mask(width)
        value = parse_immediate(operand)
        if value is None:
            raise ins.fail(f"cannot read operand {operand!r}")
        return value & mask(width)

    def predicate(self, thread: Thread, operand: str, ins: Instruction) -> bool:
        negated = operand.startswith("!")
        value = thread.registers.get(operand.lstrip("!"))
        if not isinstance(value, bool):
            raise ins.fail(f"{operand} is not a predicate that has been set ({thread})")
        return value != negated

    def write(self, thread: Thread, name: str, value, ins: Instruction):
        if name not in self.kernel.registers:
            raise ins.fail(f"{name} is not a declared register")
        thread.tags.pop(name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            value &= mask(self.kernel.registers[name])
        thread.registers[name] = value

    def address(self, thread: Thread, operand: str, space: str, size: int,
                ins: Instruction) -> tuple:
        """The key of the bytes an access reaches; a generic address at or past
        GENERIC_SHARED is the thread's block's shared memory (what `cvta.shared` makes)."""
        match = ADDRESS.match(operand)
        if match is None:
            raise ins.fail(f"cannot read address {operand!r}")
        width = 32 if space == "shared" else 64
        start = self.read(thread, match.group(1), width, ins)
        offset = parse_immediate(match.group(2)) if match.group(2) else 0
        address = (start + offset) & mask(width)
        if space == "generic":
            space = "shared" if address >= GENERIC_SHARED else "global"
            address -= GENERIC_SHARED if space == "shared" else 0
        return self.memory.key(space, thread, address, size, ins)

    # -- what threads do together -----------------------------------------------------------

    def barrier(self, block: Block, warp_index: int, live: list[Thread],
                executing: list[Thread], ins: Instruction, pc: int):
        if ins.parts[1:2] != ["sync"] or ins.operands != ["0"]:
            raise ins.fail("only bar.sync 0 / barrier.sync 0 (__syncthreads) is known")
        if len(executing) != len(live):
            raise ins.fail(f"a barrier reached by only some lanes of warp {warp_index} of "
                           f"block {block.index}", NotDefined)
        block.waiting[warp_index] = pc

    def members(self, warp: list[Thread], executing: list[Thread], operand: str | None,
                ins: Instruction):
        """The member mask must name exactly the lanes of the warp running the instruction
        (lanes that exited, or that the block does not have, may be named too)."""
        masks = {FULL if operand is None else self.read(t, operand, 32, ins)
                 for t in executing}
        if len(masks) > 1:
            raise ins.fail("the lanes give different member masks", NotDefined)
        members = masks.pop()
        for t in warp:
            named = members >> t.lane & 1
            if t in executing and not named:
                raise ins.fail(f"{t} runs it, but the member mask {members:#x} leaves out "
                               "its lane", NotDefined)
            if named and not t.exited and t not in executing:
                raise ins.fail(f"the member mask {members:#x} names {t}, which does not run "
                               "it with the others (not converged)", NotDefined)

    def shuffle(self, warp: list[Thread], executing: list[Thread], ins: Instruction):
        """shfl.sync.mode.b32 d|p, a, b, c, membermask (PTX ISA pseudo-code); a source lane
        past the warp's WARP_LANES lanes is out of range."""
        sync = ins.parts[1] == "sync"
        mode = ins.parts[2 if sync else 1]
        if ins.type_name != "b32" or mode not in ("up", "down", "bfly", "idx") or \
                len(ins.operands) != (5 if sync else 4):
            raise ins.fail("not a shfl.sync.{up,down,bfly,idx}.b32 d|p, a, b, c, m")
        self.members(warp, executing, ins.operands[4] if sync else None, ins)
        destination, _, predicate = ins.operands[0].partition("|")
        by_lane = {t.lane: t for t in executing}
        results = []
        for t in executing:
            j, valid = shuffle_source(mode, t.lane, self.read(t, ins.operands[2], 32, ins),
                                      self.read(t, ins.operands[3], 32, ins))
            source = by_lane.get(j if valid else t.lane)
            value = UNDEFINED if source is None else \
                self.read(source, ins.operands[1], 32, ins)
            results.append((t, value, valid))
        for t, value, valid in results:                     # every lane read before any writes
            self.write(t, destination, value, ins)
            if predicate:
                self.write(t, predicate, valid, ins)

    def vote(self, warp: list[Thread], executing: list[Thread], ins: Instruction):
        sync = ins.parts[1] == "sync"
        mode = ins.parts[2 if sync else 1]
        if len(ins.operands) != (3 if sync else 2) or mode not in ("ballot", "any", "all",
                                                                   "uni"):
            raise ins.fail("not a vote.sync.{ballot.b32,any.pred,all.pred,uni.pred} d, p, m")
        self.members(warp, executing, ins.operands[2] if sync else None, ins)
        votes = [(t, self.predicate(t, ins.operands[1], ins)) for t in executing]
        values = [vote for _, vote in votes]
        result = {"ballot": sum(1 << t.lane for t, vote in votes if vote),
                  "any": any(values), "all": all(values),
                  "uni": all(values) or not any(values)}[mode]
        for t in executing:
            self.write(t, ins.operands[0], result, ins)

    def atomic(self, thread: Thread, ins: Instruction, phase: int):
        parts, is_red = ins.parts, ins.parts[0] == "red"
        if len(parts) == 3:
            parts = [parts[0], "generic", *parts[1:]]
        if len(parts) != 4 or parts[1] not in SPACES or parts[2] not in ATOMIC \
                or parts[3] not in ("u32", "s32", "b32"):
            raise ins.fail("not an atom/red{.global,.shared,}.OP.{u32,s32,b32}")
        space, op, type_name = parts[1:]
        operands = ([None] if is_red else []) + ins.operands
        if len(operands) != (4 if op == "cas" else 3) or (is_red and op in ("exch", "cas")):
            raise ins.fail("wrong operands")
        key = self.address(thread, operands[1], space, 4, ins)
        b = self.read(thread, operands[2], 32, ins)
        c = self.read(thread, operands[3], 32, ins) if op == "cas" else 0
        self.memory.log(key, 4, thread, phase, "atomic", ins)
        old = self.memory.read(key, 4)
        if old is UNDEFINED:
            raise ins.fail(f"an atomic on {self.memory.name(key)}, which no thread has "
                           "written", NotDefined)
        self.memory.write(key, 4, ATOMIC[op](old, b, c, type_name == "s32") & FULL)
        self.atomic_count += 1
        kind = op + ({"s32": ".s", "u32": ".u"}[type_name] if op in ("min", "max") else "")
        self.memory.atomics.setdefault(key, []).append(
            AtomicEvent(self.atomic_count, thread, phase, kind))
        if not is_red:
            self.write(thread, operands[0], old, ins)
            thread.tags[operands[0]] = self.atomic_count

    # -- what one thread does ---------------------------------------------------------------

    def execute(self, t: Thread, ins: Instruction, phase: int):
        parts, ops = ins.parts, ins.operands
        name = parts[0]
        if name == "bra":
            if ops[0] not in self.kernel.labels:
                raise ins.fail(f"unknown label {ops[0]}")
            t.pc = self.kernel.labels[ops[0]]
        elif name in ("ret", "exit"):
            t.exited = True
        elif name == "ld" and parts[1] == "param":
            param = ops[1].strip("[] ")
            if param not in self.params:
                raise ins.fail(f"no parameter {param}")
            self.write(t, ops[0], self.params[param] & mask(ins.width), ins)
        elif name == "ld":
            size = SIZES[ins.type_name[1:]]
            key = self.address(t, ops[1], space_of(parts), size, ins)
            self.memory.log(key, size, t, phase, "read", ins)
            value = self.memory.read(key, size)
            if value is not UNDEFINED and ins.type_name[0] == "s":
                value = signed(value, 8 * size)
            self.write(t, ops[0], value, ins)
        elif name == "st":
            size = SIZES[ins.type_name[1:]]
            key = self.address(t, ops[0], space_of(parts), size, ins)
            value = self.read(t, ops[1], 8 * size, ins)
            self.memory.log(key, size, t, phase, "write", ins)
            self.memory.write(key, size, value)
        elif name == "cvta" and parts[1:3] == ["to", "global"]:
            self.write(t, ops[0], self.read(t, ops[1], 64, ins), ins)
        elif name == "cvta" and parts[1] == "shared":
            self.write(t, ops[0], self.read(t, ops[1], 32, ins) + GENERIC_SHARED, ins)
        elif name == "cvta" and parts[1:3] == ["to", "shared"]:
            self.write(t, ops[0], self.read(t, ops[1], 64, ins) - GENERIC_SHARED, ins)
        elif ins.type_name == "pred" and name in ("and", "or", "xor", "not", "mov"):
            values = [self.predicate(t, operand, ins) for operand in ops[1:]]
            result = {"and": lambda: values[0] and values[1],
                      "or": lambda: values[0] or values[1],
                      "xor": lambda: values[0] != values[1],
                      "not": lambda: not values[0], "mov": lambda: values[0]}[name]()
            self.write(t, ops[0], result, ins)
        else:
            self.arithmetic(t, ins)

    def arithmetic(self, t: Thread, ins: Instruction):
        parts, ops = ins.parts, ins.operands
        name, width, is_signed = parts[0], ins.width, ins.type_name[0] == "s"

        def operand(index: int, bits: int = width) -> int:
            return self.read(t, ops[index], bits, ins)

        if name == "mov":
            result = operand(1)
        elif name == "not":
            result = ~operand(1)
        elif name == "cvt":                                 # integer to integer
            source, width = parts[2], type_width(parts[1])
            result = operand(1, type_width(source))
            if source[0] == "s":
                result = signed(result, type_width(source))
        elif name in ("div", "rem"):                        # truncating towards zero
            a, b = operand(1), operand(2)
            if b == 0:
                raise ins.fail("division by zero (PTX leaves the result unspecified)")
            if is_signed:
                a, b = signed(a, width), signed(b, width)
            quotient = abs(a) // abs(b) * (-1 if (a < 0) != (b < 0) else 1)
            result = quotient if name == "div" else a - quotient * b
        elif name == "bfi":                                 # insert a's low bits into b
            position, length = operand(3, 32) & 0xFF, operand(4, 32) & 0xFF
            field_mask = mask(min(length, width)) << position & mask(width)
            result = (operand(2) & ~field_mask) | (operand(1) << position & field_mask)
        elif name == "shf":                                 # the funnel b:a shifted
            amount = operand(3, 32)
            amount = amount & 31 if parts[2] == "wrap" else min(amount, 32)
            pair = operand(2) << 32 | operand(1)
            result = pair << amount >> 32 if parts[1] == "l" else pair >> amount
        elif name == "popc":
            result = bin(operand(1)).count("1")
        elif name == "mul" and parts[1] == "wide":
            a, b = operand(1), operand(2)
            if is_signed:
                a, b = signed(a, width), signed(b, width)
            result, width = a * b, 2 * width
        elif name == "mad" and parts[1] == "lo":
            result = operand(1) * operand(2) + operand(3)
        elif name == "setp":
            if len(parts) != 3 or parts[1] not in COMPARE:
                raise ins.fail("unsupported comparison")
            a, b = operand(1), operand(2)
            if is_signed and parts[1] not in UNSIGNED_COMPARE:
                a, b = signed(a, width), signed(b, width)
            self.write(t, ops[0], bool(COMPARE[parts[1]](a, b)), ins)
            return
        elif name == "selp":
            result = operand(1) if self.predicate(t, ops[3], ins) else operand(2)
        else:
            operation = ".".join(parts[:2]) if name == "mul" else name
            if operation not in BINARY or len(ops) != 3:
                raise ins.fail("not an instruction the cooperative evaluator knows")
            amount_width = 32 if name in ("shl", "shr") else width   # shift amounts: .u32
            result = BINARY[operation](operand(1), operand(2, amount_width), width, is_signed)
        self.write(t, ops[0], result & mask(width), ins)


def run_ptx(text: str, grid: int, block: int, buffers: dict[str, list[int]], args: list,
            step_limit: int = DEFAULT_STEP_LIMIT) -> dict[str, list[int]]:
    """Run the launch; the buffers afterwards, as unsigned 32-bit words.  Raises
    `NotDefined` where PTX leaves the result to timing, `PtxReferenceError` otherwise."""
    return Launch(parse_kernel(text), buffers, args, grid, block, step_limit).run()
