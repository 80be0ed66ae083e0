"""Spilling: values that do not fit in the registers live in the thread's local memory.

When colouring fails (`qwengpu.ptx.regalloc`), the allocator picks values to spill and this
module rewrites the code around them, then colouring runs again:

- a spilled register `v` gets a slot, a word of the thread's local window after its `.local`
  variables (`qwengpu.ptx.local_memory`); every instruction that reads `v` reads a fresh
  temporary loaded just before it (`ld.local t, [rz+slot]`), and every one that writes it
  writes a fresh temporary stored just after (`st.local [rz+slot], t`).  A copy from or into
  a spilled value becomes the load or the store itself.
- **guarded writes**: a guarded write that keeps the old value in lanes whose guard fails
  (a partial definition) writes its temporary under the guard and stores it under the same
  guard, so those lanes keep the old word in memory; when the instruction also reads `v`,
  the temporary is loaded first and stored in every lane.
- a value with one unguarded definition that reads no register (`s2r`, `ldp`, a constant) is
  **rematerialised** instead: each use recomputes it and the definition goes; it takes no slot.
- a spilled **predicate** is kept as a word, 0 for true and 1 for false: `selp r, rz, 1, p;
  st.local [rz+slot], r` and `ld.local r, [rz+slot]; setp.eq p, r, 0` (`r` a fresh register
  temporary).

The temporaries live from one instruction to the next and are never spilled again.  Slots are
symbolic (`SpillSlot`) until `assign_slots` colours them: two spilled values share a word when
they are never live at once in memory.  Spill costs (`spill_costs`) count the loads and
stores a spill adds, each weighted by 10 to the depth of the loops it sits in (`loop_depths`),
so values used in inner loops stay in registers.  Every instruction the rewrite adds carries a
note (`spill %r5`, `reload %r5`, `remat %r5`) that `Program.listing` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count

import networkx as nx

from qwengpu.isa import Cmp, Op, Space
from qwengpu.ptx.liveness import Liveness, control_flow_graph, successors, strip_labels
from qwengpu.ptx.vcode import TRUE, ZERO, ParamRef, SymbolRef, VInstr, VLabel, VPred, VReg

LOCAL = int(Space.LOCAL)
LOOP_WEIGHT = 10


@dataclass(frozen=True)
class SpillSlot:
    """The byte offset of a spilled value's slot, given by `assign_slots`."""

    value: str

    def __str__(self) -> str:
        return f"slot({self.value})"


def loop_depths(instructions: list[VInstr], labels: dict[str, int]) -> list[int]:
    """How many loops each instruction sits in: natural loops of the CFG's back edges (an
    edge to a block that dominates its source), one per header."""
    graph = control_flow_graph(instructions, labels)
    depths = [0] * len(instructions)
    if not instructions:
        return depths
    dominators = nx.immediate_dominators(graph, 0)
    bodies: dict[int, set[int]] = {}
    for source, header in graph.edges:
        if source in dominators and _dominates(dominators, header, source):
            body = bodies.setdefault(header, {header})
            work = [source]
            while work:
                block = work.pop()
                if block not in body:
                    body.add(block)
                    work.extend(graph.predecessors(block))
    for body in bodies.values():
        for block in body:
            for index in graph.nodes[block]["instructions"]:
                depths[index] += 1
    return depths


def _dominates(dominators: dict, first: int, second: int) -> bool:
    node = second
    while True:
        if node == first:
            return True
        parent = dominators.get(node)
        if parent is None or parent == node:
            return False
        node = parent


def rematerializable(instructions: list[VInstr], live: Liveness, kind) -> dict:
    """Values of `kind` with one unguarded definition that reads no register and is not live
    on entry: value -> that definition."""
    if kind is not VReg:
        return {}
    definitions: dict = {}
    for ins in instructions:
        for value in ins.defs():
            definitions.setdefault(value, []).append(ins)
    entry = live.live_in[0] if instructions else frozenset()
    found = {}
    for value, defs in definitions.items():
        ins = defs[0]
        if len(defs) != 1 or ins.guarded or value in entry or not isinstance(value, VReg):
            continue
        constant = ins.op == Op.ADD and ins.a == ZERO and isinstance(ins.b, (int, SymbolRef))
        if constant or ins.op == Op.S2R or (ins.op == Op.LDP and isinstance(ins.imm, ParamRef)):
            found[value] = ins
    return found


def spill_costs(instructions: list[VInstr], live: Liveness, kind, depths: list[int],
                remat: dict, unspillable: set) -> dict:
    """What spilling each value of `kind` costs: the loads and stores it adds, weighted by
    loop depth.  Values that cannot be spilled, or whose spilling frees nothing (live only
    from one instruction to the next), are left out."""
    costs: dict = {}
    span: dict = {}
    for index, ins in enumerate(instructions):
        weight = LOOP_WEIGHT ** depths[index]
        for value in set(ins.uses()):
            if isinstance(value, kind):
                costs[value] = costs.get(value, 0) + weight
        for value in ins.defs():
            if isinstance(value, kind) and value not in remat:
                costs[value] = costs.get(value, 0) + weight
        for value in live.live_in[index]:
            span[value] = span.get(value, 0) + 1
    return {value: cost for value, cost in costs.items()
            if value not in unspillable and span.get(value, 0) > 1}


class Spiller:
    """Rewrites code around spilled values; remembers its temporaries (never spilled)."""

    def __init__(self, code: list):
        self.code = code
        self.unspillable: set = set()
        self.spilled: list = []
        self._names = count(1)

    def temp(self, kind):
        name = f"$s{next(self._names)}" if kind is VReg else f"$q{next(self._names)}"
        value = kind(name)
        self.unspillable.add(value)
        return value

    def spill(self, values: list, remat: dict):
        """Rewrite the code so that `values` live in memory (or are recomputed: those in
        `remat`, from `rematerializable`)."""
        chosen = set(values)
        remat = {value: ins for value, ins in remat.items() if value in chosen}
        self.spilled.extend(values)
        rewritten = []
        for item in self.code:
            if isinstance(item, VLabel):
                rewritten.append(item)
            else:
                rewritten.extend(self._rewrite(item, chosen, remat))
        self.code[:] = rewritten

    def _rewrite(self, ins: VInstr, chosen: set, remat: dict) -> list[VInstr]:
        touched = [value for value in dict.fromkeys((*ins.defs(), *ins.uses()))
                   if value in chosen]
        if not touched:
            return [ins]
        if ins.d in remat and remat[ins.d] is ins:
            return []                                   # recomputed at every use instead
        if ins.is_move and not ins.guarded and isinstance(ins.d, VReg):
            if ins.a in chosen and ins.d not in chosen and ins.a not in remat:
                return [self._load(ins.d, ins.a, ins)]
            if ins.d in chosen and ins.a not in chosen:
                return [_local_access(Op.ST, None, ins.a, ins.d, ins, f"spill {ins.d}")]
        operands = {value for value in (ins.a, ins.b, ins.c, ins.guard)
                    if isinstance(value, (VReg, VPred))}
        partial = ins.guarded and not ins.full_def
        before, written = [], None
        for value in touched:
            temp = self.temp(type(value))
            if value in operands:
                before += self._reload(value, temp, ins, remat)
            if ins.d == value:
                written = (value, temp, value in operands)
            _replace(ins, value, temp)
        if written is None:
            return before + [ins]
        value, temp, reads = written
        if partial and not reads:
            ins.full_def = True             # the store keeps the guard: failing lanes keep it
        keep_guard = ins.guarded and not (partial and reads)
        return before + [ins] + self._store(value, temp, ins, keep_guard)

    def _load(self, into: VReg, value, origin: VInstr) -> VInstr:
        return _local_access(Op.LD, into, None, value, origin, f"reload {value}")

    def _reload(self, value, temp, origin: VInstr, remat: dict) -> list[VInstr]:
        if value in remat:
            definition = remat[value]
            copy = VInstr(op=definition.op, d=temp, a=definition.a, b=definition.b,
                          c=definition.c, imm=definition.imm, origin=origin.origin,
                          note=f"remat {value}")
            return [copy]
        if isinstance(value, VReg):
            return [self._load(temp, value, origin)]
        word = self.temp(VReg)
        return [self._load(word, value, origin),
                VInstr(op=Op.SETP, d=temp, a=word, b=0, c=Cmp.EQ, origin=origin.origin,
                       note=f"reload {value}")]

    def _store(self, value, temp, origin: VInstr, keep_guard: bool) -> list[VInstr]:
        guard = (origin.guard, origin.guard_negated) if keep_guard else (TRUE, False)
        if isinstance(value, VReg):
            return [_local_access(Op.ST, None, temp, value, origin, f"spill {value}", guard)]
        word = self.temp(VReg)
        to_word = VInstr(op=Op.SELP, d=word, a=ZERO, b=1, c=temp, guard=guard[0],
                         guard_negated=guard[1], full_def=True, origin=origin.origin,
                         note=f"spill {value}")
        return [to_word, _local_access(Op.ST, None, word, value, origin, f"spill {value}", guard)]


def _local_access(op: Op, into, stored, value, origin: VInstr, note: str,
                  guard: tuple = (TRUE, False)) -> VInstr:
    return VInstr(op=op, d=into, a=ZERO, b=stored, imm=SpillSlot(str(value)), guard=guard[0],
                  guard_negated=guard[1], space=LOCAL, origin=origin.origin, note=note)


def _replace(ins: VInstr, value, temp):
    for field in ("d", "a", "b", "c", "guard"):
        if getattr(ins, field) == value:
            setattr(ins, field, temp)


def assign_slots(code: list, base_bytes: int) -> int:
    """Give each spill slot a word from `base_bytes` on (values never live in memory at once
    share one), write the offsets into the code, and return how many words they take."""
    instructions, labels = strip_labels(code)
    accesses = [(index, ins) for index, ins in enumerate(instructions)
                if isinstance(ins.imm, SpillSlot)]
    if not accesses:
        return 0
    live_in = _slot_liveness(instructions, labels)
    order = {slot: position for position, slot in
             enumerate(dict.fromkeys(ins.imm for _, ins in accesses))}
    graph = nx.Graph()
    graph.add_nodes_from(order)
    entry = sorted(live_in[0], key=order.get)
    graph.add_edges_from((a, b) for i, a in enumerate(entry) for b in entry[i + 1:])
    for index, ins in accesses:
        if ins.op == Op.ST:
            after = set().union(*(live_in[s] for s in successors(instructions, labels, index)))
            graph.add_edges_from((ins.imm, other) for other in after if other != ins.imm)
    words: dict = {}
    for slot in sorted(order, key=order.get):
        taken = {words[other] for other in graph[slot] if other in words}
        words[slot] = next(word for word in range(len(order)) if word not in taken)
    for _, ins in accesses:
        ins.imm = base_bytes + 4 * words[ins.imm]
    return max(words.values()) + 1


def _slot_liveness(instructions: list[VInstr], labels: dict[str, int]) -> list[frozenset]:
    """The slots whose word a later load still reads, before each instruction."""
    live_in = [frozenset()] * len(instructions)
    changed = True
    while changed:
        changed = False
        for index in reversed(range(len(instructions))):
            ins = instructions[index]
            live = frozenset().union(*(live_in[s] for s in
                                       successors(instructions, labels, index)))
            if isinstance(ins.imm, SpillSlot):
                if ins.op == Op.LD:
                    live = live | {ins.imm}
                elif not ins.guarded:
                    live = live - {ins.imm}
            if live != live_in[index]:
                live_in[index] = live
                changed = True
    return live_in
