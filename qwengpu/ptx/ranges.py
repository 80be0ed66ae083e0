"""Value ranges of a kernel's registers: which 64-bit addresses can never leave 32 bits.

A GPU faults on an address at or past 2^32 bytes; the machine addresses memory by an
address's low word, so such an address would wrap to the start of memory instead.  The loader
keeps an access's high word and traps on it (`select_memory._checked_address`) unless this
analysis proves the address is in (M - 2^32, 2^32) (M = the memory's bytes): below 0 such an
address's low word is past the memory anyway, and the access traps without help.

It is an abstract interpretation over the PTX control-flow graph with one interval per
register. An interval holds the values a register may have as integers congruent to its bits
(`None`: any bits); `unsigned_view` and `signed_view` read it as the instruction's type does.
What it starts from (`Facts`): the launch's grid and block, and each parameter's range (its
value when the launch gives one, else `default_facts`: a buffer address for a parameter of the
pointer size, anything for the others). A predicate remembers the comparison that set it
(`Comparison`, or two joined by and/or: `Junction`) until a register compared is written, and a
guarded branch narrows each way to the values that go that way; a block no launch keeping to
the facts reaches needs no check at all. Loops are cut short by widening, with one bound that
is not an interval's: a launch runs at most `MAX_LAUNCH_RECORDS` records (the interpreter and
the model runner refuse more), so an instruction runs at most that often in a thread, and a
register a loop changes only by adding or subtracting a step it does not change itself moves at
most MAX_LAUNCH_RECORDS steps from where it entered the loop. That covers the loops nvcc
writes: counters, and pointers stepped by the element size. Anything else in a loop (products
of changing values, values loaded from memory) is any value, and its accesses keep the check.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from qwengpu.isa import MAX_LAUNCH_RECORDS
from qwengpu.ptx import cfg, ir
from qwengpu.ptx.cuda_lines import readable
from qwengpu.ptx.geometry import Geometry, special_range

Range = tuple[int, int] | None          # lo..hi as integers congruent to the bits; None: any

_NO_DESTINATION = {"st", "bra", "ret", "exit", "bar", "barrier", "membar", "fence", "trap",
                   "red", "prefetch", "prefetchu", "brkpt", "pmevent", "nanosleep", "setp"}
_WIDENING_VISITS = 3                     # joins at a loop head before it widens
_GIVE_UP_VISITS = 40                     # then every register still changing there is any value


@dataclass(frozen=True)
class Facts:
    """What the analysis may assume: threads per block and blocks (ranges), each parameter's
    range by name (a parameter not named is any value), the memory's size in bytes, and the
    launch's shape (a 3-D block or grid gives each of its indices its own range)."""

    block: tuple[int, int]
    grid: tuple[int, int]
    lanes: int
    warps: int
    memory_bytes: int
    params: dict[str, Range] = field(default_factory=dict)
    geometry: Geometry = Geometry()     # the shape of block and grid (`qwengpu.ptx.geometry`)


def default_facts(kernel: ir.Kernel, limits, pointer_bytes: int) -> Facts:
    """Facts that hold for the launches a kernel is usually given: any shape the machine
    has, and a buffer's address in a parameter of the pointer size (`proven_accesses` keeps
    only the facts its proofs need, and a launch is checked against those: `kept_to`)."""
    memory_bytes = 4 * limits.memory_words
    params = {param.name: (0, memory_bytes - 1) for param in kernel.params
              if not param.is_array and param.size_bytes == pointer_bytes}
    threads = limits.warps * limits.lanes
    return Facts(block=(1, threads), grid=(1, limits.warps), lanes=limits.lanes,
                 warps=limits.warps, memory_bytes=memory_bytes, params=params)


def fit(lo: int, hi: int, width: int) -> Range:
    """lo..hi as a `width`-bit range: any value when it spans every bit pattern."""
    size = 1 << width
    if hi - lo >= size - 1:
        return None
    shift = lo // size * size
    return lo - shift, hi - shift


def unsigned_view(value: Range, width: int) -> tuple[int, int]:
    size = 1 << width
    if value is None or value[1] >= size:       # `fit` keeps lo in 0..size-1
        return 0, size - 1
    return value


def signed_view(value: Range, width: int) -> tuple[int, int]:
    half = 1 << (width - 1)
    if value is None:
        return -half, half - 1
    lo, hi = value
    if hi < half:
        return lo, hi
    if lo >= half:
        return lo - 2 * half, hi - 2 * half
    return -half, half - 1


def join(a: Range, b: Range, width: int) -> Range:
    """The smallest range holding both (bits wrap around: -1..0 is a range of two values)."""
    if a is None or b is None:
        return None
    size, best = 1 << width, None
    for shift in (-size, 0, size):
        lo, hi = min(a[0], b[0] + shift), max(a[1], b[1] + shift)
        if best is None or hi - lo < best[1] - best[0]:
            best = lo, hi
    return fit(*best, width)


def _products(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    corners = [x * y for x in a for y in b]
    return min(corners), max(corners)


# ---- the analysis -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """What a predicate holds: `setp.CMP.TYPE p, a, b` (a and b: ("reg", name) or ("imm",
    value)), kept while neither a nor b is written again."""

    cmp: str
    type_name: str
    a: tuple
    b: tuple

    def mentions(self, name: str) -> bool:
        return ("reg", name) in (self.a, self.b)


@dataclass(frozen=True)
class Junction:
    """What `and.pred`/`or.pred` of two compared predicates holds: both comparisons when it is
    true (and), neither when it is false (or), as nvcc writes `if (j >= 0 && j < n)`."""

    op: str
    parts: tuple[Comparison, Comparison]

    def mentions(self, name: str) -> bool:
        return any(part.mentions(name) for part in self.parts)


# a register not in it is any value; a predicate in it holds the comparison(s) it names
State = dict[str, "Range | Comparison | Junction"]

_NEGATED = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le",
            "lo": "hs", "hs": "lo", "ls": "hi", "hi": "ls"}


def proven_accesses(kernel: ir.Kernel, facts: Facts, variables: set[str]
                    ) -> tuple[set[int], Facts]:
    """`id()`s of the instructions whose memory operand, a 64-bit register (+ offset), is
    proven to stay in (M - 2^32, 2^32): they need no address check; and the facts those
    proofs rest on (each fact widened to any launch's that proves as much without it), which
    a launch of the code must keep to.  `variables`: the names of the memory variables the
    kernel can see (their addresses are in memory)."""
    proven = _Analysis(kernel, facts, variables).proven()
    needed = replace(facts, params={name: value for name, value in facts.params.items()
                                    if value is not None})
    for fact in ("block", "grid", *needed.params):
        if fact == "block":
            weaker = replace(needed, block=(1, facts.warps * facts.lanes))
        elif fact == "grid":
            weaker = replace(needed, grid=(1, facts.warps))
        else:
            weaker = replace(needed, params={name: value for name, value in needed.params.items()
                                             if name != fact})
        if weaker != needed and _Analysis(kernel, weaker, variables).proven() >= proven:
            needed = weaker
    return proven, needed


def kept_to(facts: Facts, block: int, grid: int, params: dict[str, int]) -> str | None:
    """Why a launch (threads per block, blocks, parameter values as unsigned numbers) breaks
    `facts`, or None if it keeps to them."""
    for name, value, (lo, hi) in (("block", block, facts.block), ("grid", grid, facts.grid)):
        if not lo <= value <= hi:
            return f"{name} {value} (the code was compiled for {lo}..{hi})"
    for name, value in params.items():
        allowed = facts.params.get(name)
        if allowed is not None and not allowed[0] <= value <= allowed[1]:
            return (f"parameter {readable(name)} = {value} (the code was compiled for "
                    f"{allowed[0]}..{allowed[1]} there)")
    return None


class _Analysis:
    def __init__(self, kernel: ir.Kernel, facts: Facts, variables: set[str]):
        self.kernel, self.facts, self.variables = kernel, facts, variables
        self.widths = {name: ir.type_width(type_name)
                       for name, type_name in kernel.registers.items()}
        self.blocks = cfg.blocks(kernel.body)
        self.loops, self.heads, self.dominators = cfg.loops(self.blocks)
        self.written = {head: {name for index in body for ins in self.blocks[index].statements
                               for name in _destination_names(ins)}
                        for head, body in self.loops.items()}
        self.states: list[State | None] = [None] * len(self.blocks)
        self.states[0] = {}
        self._solve()

    # ---- fixpoint ------------------------------------------------------------------------------

    def _solve(self):
        visits = [0] * len(self.blocks)
        work = [0]
        while work:
            index = work.pop()
            state = dict(self.states[index])
            for ins in self.blocks[index].statements:
                self._step(state, ins)
            for successor in self.blocks[index].successors:
                incoming = self._along(index, successor, state)
                if incoming is None:
                    continue                            # the branch cannot go this way
                new = self._widen(successor, incoming, visits)
                if new is not None:
                    self.states[successor] = new
                    if successor not in work:
                        work.append(successor)

    def _along(self, index: int, successor: int, state: State) -> State | None:
        """The state on the edge to `successor`: narrowed by what the block's guarded branch
        knows of its predicate that way, or None if it cannot be taken."""
        block = self.blocks[index]
        last = block.statements[-1] if block.statements else None
        fall_through = index + 1
        if last is None or last.opcode != "bra" or last.guard is None or \
                block.taken == fall_through:
            return state
        fact = state.get(last.guard.register)
        holds = (successor == block.taken) != last.guard.negated
        if isinstance(fact, Comparison):
            return self._narrowed(state, fact, holds)
        if isinstance(fact, Junction) and holds == (fact.op == "and"):
            for part in fact.parts:
                state = self._narrowed(state, part, holds)
                if state is None:
                    return None
        return state

    def _narrowed(self, state: State, fact: Comparison, holds: bool) -> State | None:
        """`state` where `fact` holds (or does not): each register compared is kept to the
        values that can make it so; None if none can."""
        cmp = fact.cmp if holds else _NEGATED[fact.cmp]
        width = ir.type_width(fact.type_name)
        signed = ir.is_signed(fact.type_name) and cmp not in ("lo", "ls", "hi", "hs")
        view = signed_view if signed else unsigned_view
        (a_lo, a_hi), (b_lo, b_hi) = (view(self._read(state, _operand(side), width), width)
                                      for side in (fact.a, fact.b))
        strict = 1 if cmp in ("lt", "lo", "gt", "hi") else 0
        if cmp in ("lt", "lo", "le", "ls"):
            a_hi, b_lo = min(a_hi, b_hi - strict), max(b_lo, a_lo + strict)
        elif cmp in ("gt", "hi", "ge", "hs"):
            a_lo, b_hi = max(a_lo, b_lo + strict), min(b_hi, a_hi - strict)
        elif cmp == "eq":
            a_lo = b_lo = max(a_lo, b_lo)
            a_hi = b_hi = min(a_hi, b_hi)
        if a_lo > a_hi or b_lo > b_hi:
            return None
        narrowed = dict(state)
        for side, lo, hi in ((fact.a, a_lo, a_hi), (fact.b, b_lo, b_hi)):
            if side[0] == "reg" and self.widths.get(side[1]) == width:
                narrowed[side[1]] = fit(lo, hi, width)
        return narrowed

    def _widen(self, index: int, incoming: State, visits: list[int]) -> State | None:
        """The block's new entry state with `incoming` joined in, or None if it is unchanged.
        At a loop head visited often enough, a register the loop writes is given its drift
        bound (recomputed every time, from the ranges it enters with), or any value if it still
        grows."""
        old = self.states[index]
        if old is None:
            return dict(incoming)
        new = {name: _merge(value, incoming.get(name), self.widths.get(name, 64))
               for name, value in old.items() if name in incoming}
        new = {name: value for name, value in new.items() if value is not None}
        if index in self.heads:
            visits[index] += 1
            if visits[index] >= _WIDENING_VISITS:
                written = self.written.get(index)           # None: a cycle entered midway
                for name in written if written is not None else set(new):
                    bound = None
                    if written is not None and visits[index] <= _GIVE_UP_VISITS:
                        bound = self._drift_bound(index, name)
                    if bound is not None:
                        new[name] = bound
                    elif name in new and new[name] != old.get(name):
                        del new[name]
        return None if new == old else new

    def _drift_bound(self, head: int, name: str) -> Range:
        """Where `name` can be at a loop head, if every write to it in the loop sets it to a
        value it had in this run of the loop plus a step the loop does not change: then each
        of its values is at most MAX_LAUNCH_RECORDS steps from the range it entered with."""
        body, width = self.loops.get(head), self.widths.get(name)
        if body is None or width is None:
            return None
        steps = [self._step_of(index, position, name, head, width) for index in body
                 for position, ins in enumerate(self.blocks[index].statements)
                 if name in _destination_names(ins)]
        if not steps or None in steps:
            return None
        entry = None
        for predecessor in self.blocks[head].predecessors:
            if predecessor in body or self.states[predecessor] is None:
                continue
            state = dict(self.states[predecessor])
            for ins in self.blocks[predecessor].statements:
                self._step(state, ins)
            if state.get(name) is None:
                return None
            entry = state[name] if entry is None else join(entry, state[name], width)
        if entry is None:
            return None
        down = min(0, *(lo for lo, _ in steps)) * MAX_LAUNCH_RECORDS
        up = max(0, *(hi for _, hi in steps)) * MAX_LAUNCH_RECORDS
        return fit(entry[0] + down, entry[1] + up, width)

    def _step_of(self, index: int, position: int, name: str, head: int, width: int):
        """The signed range of the step the write at (block, position) adds to `name`: for
        `name = name +/- step`, or `mov name, t` after `t = name +/- step` (the only write to
        t in the loop, on every path from the loop head to the mov); None for another form."""
        ins = self.blocks[index].statements[position]
        if ins.opcode == "mov" and ins.guard is None and len(ins.operands) == 2 \
                and isinstance(ins.operands[1], ir.Register) \
                and self.widths.get(ins.operands[1].name) == width:
            copied = ins.operands[1].name
            writes = [(block, place) for block in self.loops[head]
                      for place, statement in enumerate(self.blocks[block].statements)
                      if copied in _destination_names(statement)]
            if len(writes) != 1:
                return None
            block, place = writes[0]
            before = block != index and block in self.dominators.get(index, ()) or \
                block == index and place < position
            sum_ins = self.blocks[block].statements[place]
            if not before or sum_ins.guard is not None:
                return None
            return self._step_of_sum(sum_ins, name, head, width)
        return self._step_of_sum(ins, name, head, width)

    def _step_of_sum(self, ins: ir.Instruction, name: str, head: int, width: int):
        """What `ins`, `d = name +/- step`, adds to `name`'s value, or None for another form."""
        if ins.opcode not in ("add", "sub") or _has_carry(ins) or len(ins.operands) != 3 \
                or _type_width(ins) != width:
            return None
        _, first, second = ins.operands
        if ins.opcode == "add" and isinstance(second, ir.Register) and second.name == name:
            first, second = second, first
        if not (isinstance(first, ir.Register) and first.name == name):
            return None
        if isinstance(second, ir.Register) and second.name in self.written[head]:
            return None                                 # the step changes in the loop
        lo, hi = signed_view(self._read(self.states[head], second, width), width)
        return (lo, hi) if ins.opcode == "add" else (-hi, -lo)

    def proven(self) -> set[int]:
        """The accesses proven safe; those in a block no launch keeping to the facts reaches
        (a branch the facts decide) are too: they never run."""
        proven = set()
        for block, entry in zip(self.blocks, self.states):
            state = dict(entry) if entry is not None else None
            for ins in block.statements:
                if ins.opcode in ("ld", "st", "atom", "red", "prefetch") and \
                        (state is None or self._safe(state, ins)):
                    proven.add(id(ins))
                if state is not None:
                    self._step(state, ins)
        return proven

    def _safe(self, state: State, ins: ir.Instruction) -> bool:
        memory = [operand for operand in ins.operands if isinstance(operand, ir.Memory)]
        if len(memory) != 1 or not isinstance(memory[0].base, ir.Register):
            return False
        base = memory[0].base
        if self.widths.get(base.name) != 64:
            return False
        lo, hi = signed_view(state.get(base.name), 64)
        lo, hi = lo + memory[0].offset, hi + memory[0].offset
        # the last byte the access touches stays below 2^32 too (a .v4.u32 reads 16 bytes)
        return self.facts.memory_bytes - (1 << 32) < lo and hi + 16 < (1 << 32)

    # ---- one instruction -------------------------------------------------------------------------

    def _step(self, state: State, ins: ir.Instruction):
        if ins.opcode == "setp":
            self._compare(state, ins)
            return
        names = _destination_names(ins)
        if not names:
            return
        for fact_name in [key for key, fact in state.items()
                          if isinstance(fact, (Comparison, Junction))
                          and any(map(fact.mentions, names))]:
            del state[fact_name]
        if ins.opcode in ("and", "or") and ins.modifiers == ("pred",) and ins.guard is None \
                and isinstance(ins.operands[0], ir.Register):
            parts = tuple(state.get(operand.name) for operand in ins.operands[1:]
                          if isinstance(operand, ir.Register))
            state.pop(ins.operands[0].name, None)
            if len(parts) == 2 and all(isinstance(part, Comparison) for part in parts):
                state[ins.operands[0].name] = Junction(ins.opcode, parts)
            return
        value = self._value(state, ins)
        for name in names:
            width = self.widths.get(name)
            if width is None or width == 1:
                state.pop(name, None)             # a predicate written otherwise: unknown
                continue
            result = value if len(names) == 1 else None
            value_width = _type_width(ins)
            if result is not None and value_width not in (None, width):
                # into a wider register: extended as the type says (a narrower one truncates)
                types = [m for m in ins.modifiers if m in ir.TYPE_WIDTHS]
                extend = signed_view if ir.is_signed(types[0]) else unsigned_view
                result = fit(*extend(result, value_width), width)
            if ins.guard is not None:
                result = join(result, state.get(name), width)
            if result is None:
                state.pop(name, None)
            else:
                state[name] = result

    def _compare(self, state: State, ins: ir.Instruction):
        """`setp.CMP.TYPE p, a, b`: p holds the comparison (anything else: p unknown)."""
        first = ins.operands[0] if ins.operands else None
        for name in ((first.first, first.second) if isinstance(first, ir.RegisterPair) else
                     (first.name,) if isinstance(first, ir.Register) else ()):
            state.pop(name, None)
        types = [m for m in ins.modifiers if m in ir.INTEGER_TYPES]
        cmps = [m for m in ins.modifiers if m in _NEGATED]
        if ins.guard is not None or not isinstance(first, ir.Register) or len(types) != 1 \
                or len(cmps) != 1 or len(ins.modifiers) != 2 or len(ins.operands) != 3:
            return
        sides = [_side(operand) for operand in ins.operands[1:]]
        if None not in sides:
            state[first.name] = Comparison(cmps[0], types[0], *sides)

    def _value(self, state: State, ins: ir.Instruction) -> Range:
        """The range of what `ins` writes, at the width of its type; None when unknown."""
        types = [m for m in ins.modifiers if m in ir.TYPE_WIDTHS]
        op, sources = ins.opcode, ins.operands[1:]
        if not types or _has_carry(ins):
            return None
        width = ir.type_width(types[-1])
        if op in ("mov", "cvta") and len(sources) == 1:
            return self._read(state, sources[0], width)          # bits, of any type
        if any(t not in ir.INTEGER_TYPES for t in types):
            return None
        signed = ir.is_signed(types[-1])
        view = signed_view if signed else unsigned_view

        def read(operand, operand_width=width) -> Range:
            return self._read(state, operand, operand_width)

        if op == "cvt" and len(types) == 2 and len(sources) == 1:
            source_width = ir.type_width(types[1])
            source_view = signed_view if ir.is_signed(types[1]) else unsigned_view
            lo, hi = source_view(read(sources[0], source_width), source_width)
            return fit(lo, hi, ir.type_width(types[0]))
        if op == "ld" and "param" in ins.modifiers and len(sources) == 1:
            memory = sources[0]
            if isinstance(memory, ir.Memory) and isinstance(memory.base, ir.Symbol) \
                    and memory.offset == 0 and memory.base.name in self.facts.params:
                value = self.facts.params[memory.base.name]
                return None if value is None else fit(*value, width)
            return None
        if op in ("add", "sub") and len(sources) == 2:
            a, b = (read(source) for source in sources)
            if a is None or b is None:
                return None
            if op == "add":
                return fit(a[0] + b[0], a[1] + b[1], width)
            return fit(a[0] - b[1], a[1] - b[0], width)
        if op in ("mul", "mad") and "hi" not in ins.modifiers and len(sources) in (2, 3):
            out_width = 2 * width if "wide" in ins.modifiers else width
            lo, hi = _products(view(read(sources[0]), width), view(read(sources[1]), width))
            if op == "mad":
                addend = read(sources[2], out_width)
                if addend is None:
                    return None
                lo, hi = lo + addend[0], hi + addend[1]
            return fit(lo, hi, out_width)
        if op == "shl" and len(sources) == 2 and isinstance(sources[1], ir.Immediate):
            a = read(sources[0])
            shift = sources[1].value & 0xFFFF_FFFF          # PTX reads the count unsigned
            return None if a is None or shift >= width else fit(a[0] << shift, a[1] << shift,
                                                                 width)
        if op == "shr" and len(sources) == 2 and isinstance(sources[1], ir.Immediate):
            lo, hi = view(read(sources[0]), width)
            shift = min(sources[1].value & 0xFFFF_FFFF, width - 1 if signed else width)
            return fit(lo >> shift, hi >> shift, width)
        if op == "and" and len(sources) == 2:
            bounds = [unsigned_view(read(source), width)[1] for source in sources]
            return 0, min(bounds)
        if op in ("or", "xor") and len(sources) == 2:
            top = max(unsigned_view(read(source), width)[1] for source in sources)
            return 0, (1 << top.bit_length()) - 1
        if op in ("rem", "div") and len(sources) == 2:
            (a_lo, a_hi), (b_lo, b_hi) = (view(read(source), width) for source in sources)
            if a_lo < 0 or b_lo <= 0:
                return None
            return (0, min(a_hi, b_hi - 1)) if op == "rem" else (a_lo // b_hi, a_hi // b_lo)
        if op in ("min", "max") and len(sources) == 2:
            (a_lo, a_hi), (b_lo, b_hi) = (view(read(source), width) for source in sources)
            pick = min if op == "min" else max
            return fit(pick(a_lo, b_lo), pick(a_hi, b_hi), width)
        if op in ("neg", "not") and len(sources) == 1:
            a = read(sources[0])
            if a is None:
                return None
            return fit(-a[1], -a[0], width) if op == "neg" else fit(-a[1] - 1, -a[0] - 1, width)
        if op in ("selp", "slct") and len(sources) == 3:
            return join(read(sources[0]), read(sources[1]), width)
        return None

    def _read(self, state: State, operand, width: int) -> Range:
        if isinstance(operand, ir.Immediate):
            return fit(operand.value, operand.value, width)
        if isinstance(operand, ir.Symbol):
            if operand.name == "WARP_SZ":          # the warp's lanes, a constant
                return fit(self.facts.lanes, self.facts.lanes, width)
            if operand.name not in self.variables:
                return None
            return 0, self.facts.memory_bytes - 1
        if not isinstance(operand, ir.Register):
            return None
        special = self._special(operand.name)
        if special is not False:
            return special if special is None else fit(*special, width)
        register_width = self.widths.get(operand.name)
        value = state.get(operand.name)
        if register_width is None or value is None or isinstance(value, (Comparison, Junction)):
            return None
        if register_width >= width:
            return fit(*value, width)
        lo, hi = unsigned_view(value, register_width)
        return (lo, hi) if hi < 1 << (register_width - 1) else None

    def _special(self, name: str):
        """A special register's range, None if unknown, False if `name` is not special."""
        if name.startswith("%") and name not in self.widths:
            return special_range(name, self.facts)
        return False


def _merge(a, b, width: int):
    """Two states' ranges joined; two predicates' comparisons kept only if the same."""
    if isinstance(a, (Comparison, Junction)) or isinstance(b, (Comparison, Junction)):
        return a if a == b else None
    return join(a, b, width)


def _side(operand) -> tuple | None:
    if isinstance(operand, ir.Register):
        return "reg", operand.name
    if isinstance(operand, ir.Immediate):
        return "imm", operand.value
    return None


def _operand(side: tuple):
    """A comparison's side back as an operand `_read` takes."""
    kind, value = side
    return ir.Register(value, None) if kind == "reg" else ir.Immediate(value, str(value), None)


def _type_width(ins: ir.Instruction) -> int | None:
    types = [m for m in ins.modifiers if m in ir.TYPE_WIDTHS]
    if not types:
        return None
    if ins.opcode in ("mul", "mad") and "wide" in ins.modifiers:
        return 2 * ir.type_width(types[-1])
    return ir.type_width(types[0])


def _has_carry(ins: ir.Instruction) -> bool:
    return ins.opcode in ("addc", "subc", "madc") or "cc" in ins.modifiers


def _destination_names(ins: ir.Instruction) -> set[str]:
    """The registers `ins` writes (predicates included)."""
    if ins.opcode in _NO_DESTINATION or not ins.operands:
        return set()
    first = ins.operands[0]
    if isinstance(first, ir.Register):
        return {first.name}
    if isinstance(first, ir.RegisterPair):
        return {first.first, first.second}
    if isinstance(first, ir.Vector):
        return {element.name for element in first.elements if isinstance(element, ir.Register)}
    return set()
