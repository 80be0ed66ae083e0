"""Register allocation: virtual registers onto r0..r14, virtual predicates onto p0..p6.

Classic graph colouring (Chaitin-Briggs):

1. liveness over the CFG (`qwengpu.ptx.liveness`);
2. an interference graph (networkx) per register class: a definition interferes with
   everything live after it, except the source of a copy;
3. conservative (Briggs) coalescing of copies, so `d = t` disappears when it can without
   making the graph harder to colour;
4. simplify/select colouring with optimistic pushes, colours biased towards copy partners;
   when that fails, networkx's DSATUR colouring is tried as well.

When colouring fails, values are **spilled** to the thread's local memory
(`qwengpu.ptx.spill`) and colouring runs again: predicates first (their spills go through
registers), then registers.  Which values: simplify/select once more without coalescing, where
a blocked graph gives up the value of least spill cost per neighbour (loads and stores added,
weighted by loop depth); the values select finds no colour for are spilled.  A kernel whose
spill slots do not fit in the local memory a thread may have (`LOCAL_WORDS`, after its
`.local` arrays) fails with a `CapacityError` that says how many registers it needs, how
many words its spills take and by how much they overflow, at the PTX line where the most
values are live at once.  Everything is deterministic: registers are numbered in order of
first appearance and every tie is broken by that order.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from qwengpu.errors import CapacityError, Location
from qwengpu.isa import Op
from qwengpu.ptx.liveness import Liveness, liveness, strip_labels
from qwengpu.ptx.spill import (Spiller, assign_slots, loop_depths, rematerializable,
                               spill_costs)
from qwengpu.ptx.vcode import VInstr, VPred, VReg


@dataclass(frozen=True)
class SpillArea:
    """Where spill slots may go: words of the thread's local window from byte `base_bytes`
    (after its `.local` variables), `words` of them at most."""

    base_bytes: int = 0
    words: int = 0


@dataclass
class Allocation:
    """Physical index of every virtual register and predicate, and how many were used."""

    registers: dict[VReg, int]
    predicates: dict[VPred, int]
    registers_used: int
    predicates_used: int
    peak_live_registers: int
    peak_live_predicates: int
    spill_words: int = 0              # words of local memory the spill slots take
    spilled: tuple = ()               # the values spilled (or rematerialised), in order


@dataclass
class _ClassResult:
    colours: dict
    used: int
    peak: int


def allocate(code: list, register_count: int, predicate_count: int, kernel_name: str,
             kernel_loc: Location | None, source: str | None = None,
             spill_area: SpillArea = SpillArea()) -> Allocation:
    """Colour `code`'s virtual registers, spilling (rewriting `code` in place) where needed."""
    spiller = Spiller(code)
    classes = ((VPred, predicate_count, "predicate registers"),
               (VReg, register_count, "registers"))
    first_peaks: dict = {}
    while True:
        instructions, labels = strip_labels(code)
        live = liveness(instructions, labels)
        results = []
        for kind, count, noun in classes:
            result = _allocate_class(instructions, live, kind, count)
            if kind not in first_peaks:      # the code before any spill: for the messages
                peak_at = instructions[_peak_index(instructions, live, kind)] \
                    if instructions else None
                first_peaks[kind] = (result, peak_at.origin if peak_at else None)
            if result.used > count:
                break
            results.append(result)
        else:
            break
        spills = _choose_spills(instructions, labels, live, kind, count, spiller,
                                max(1, (result.peak - count) // 2))
        if not spills:
            error = _pressure_error(instructions, live, kind, count, noun, result, kernel_name,
                                    kernel_loc, source)
            if spiller.spilled:
                error.message += (" (with every other value spilled: one instruction needs "
                                  "that many at once)")
                error.args = (error.message,)
            raise error
        spiller.spill(spills, rematerializable(instructions, live, kind))
    predicates, registers = results
    words = assign_slots(code, spill_area.base_bytes)
    _drop_reloads_of_stored_words(code, registers.colours)
    if words > spill_area.words:
        raise _spill_error(first_peaks, words, spill_area, register_count, predicate_count,
                           kernel_name, kernel_loc, source)
    return Allocation(registers.colours, predicates.colours, registers.used, predicates.used,
                      first_peaks[VReg][0].peak, first_peaks[VPred][0].peak, words,
                      tuple(spiller.spilled))


def _choose_spills(instructions: list[VInstr], labels: dict, live: Liveness, kind, count: int,
                   spiller: Spiller, at_most: int) -> list:
    """The values to spill: simplify/select on the uncoalesced interference graph, where a
    blocked graph pushes the value of least cost per neighbour; of those select cannot colour
    (a temporary that cannot go gives way to its cheapest spillable neighbour), the `at_most`
    cheapest go.  Spilling a few at a time and colouring again spills no more than needed."""
    graph = interference_graph(instructions, live, kind)
    order = {node: position for position, node in enumerate(graph.nodes)}
    remat = rematerializable(instructions, live, kind)
    costs = spill_costs(instructions, live, kind, loop_depths(instructions, labels), remat,
                        spiller.unspillable)
    work, stack = graph.copy(), []
    while work:
        low = [node for node in work if work.degree(node) < count]
        if low:
            node = min(low, key=lambda n: (work.degree(n), order[n]))
        else:
            node = min(work, key=lambda n: (costs.get(n, float("inf")) / max(work.degree(n), 1),
                                            order[n]))
        stack.append(node)
        work.remove_node(node)
    colours: dict = {}
    chosen: list = []
    for node in reversed(stack):
        taken = {colours[n] for n in graph[node] if n in colours}
        free = next((colour for colour in range(count) if colour not in taken), None)
        if free is not None:
            colours[node] = free
        elif node in costs:
            chosen.append(node)
        else:
            options = [n for n in graph[node] if n in costs and n not in chosen]
            if options:
                chosen.append(min(options, key=lambda n: (costs[n], order[n])))
    cheapest = sorted(set(chosen), key=lambda n: (costs[n], order[n]))[:at_most]
    return sorted(cheapest, key=order.get)


def _drop_reloads_of_stored_words(code: list, colours: dict):
    """`st.local [rz+k], r; ld.local r, [rz+k]` of spill code: the word is still in r."""
    index = 1
    while index < len(code):
        store, load = code[index - 1], code[index]
        if isinstance(store, VInstr) and isinstance(load, VInstr) and store.op == Op.ST \
                and load.op == Op.LD and store.note.startswith("spill") \
                and load.note.startswith("reload") and not store.guarded \
                and not load.guarded and store.imm == load.imm and isinstance(load.d, VReg) \
                and colours.get(store.b) == colours.get(load.d) is not None:
            del code[index]
            continue
        index += 1


def _peak_index(instructions: list[VInstr], live: Liveness, kind) -> int:
    """The first instruction where the most values of `kind` are live."""
    peak_index, peak = 0, -1
    for index in range(len(instructions)):
        here = max(sum(isinstance(r, kind) for r in live.live_in[index]),
                   sum(isinstance(r, kind) for r in live.live_out[index]))
        if here > peak:
            peak_index, peak = index, here
    return peak_index


def _order_of_appearance(instructions: list[VInstr], kind) -> dict:
    order: dict = {}
    for ins in instructions:
        for register in (*ins.defs(), *ins.uses()):
            if isinstance(register, kind) and register not in order:
                order[register] = len(order)
    return order


def interference_graph(instructions: list[VInstr], live: Liveness, kind) -> nx.Graph:
    graph = nx.Graph()
    order = _order_of_appearance(instructions, kind)
    graph.add_nodes_from(sorted(order, key=order.get))
    entry = [register for register in live.live_in[0] if isinstance(register, kind)] \
        if instructions else []
    for position, first in enumerate(sorted(entry, key=order.get)):
        for second in sorted(entry, key=order.get)[position + 1:]:
            graph.add_edge(first, second)
    for index, ins in enumerate(instructions):
        copied = ins.a if ins.is_move and not ins.guarded else None
        for defined in ins.defs():
            if not isinstance(defined, kind):
                continue
            for other in live.live_out[index]:
                if isinstance(other, kind) and other != defined and other != copied:
                    graph.add_edge(defined, other)
    return graph


def _allocate_class(instructions: list[VInstr], live: Liveness, kind, count: int) -> _ClassResult:
    graph = interference_graph(instructions, live, kind)
    order = {node: position for position, node in enumerate(graph.nodes)}
    peak = max((sum(isinstance(r, kind) for r in live_set) for live_set in
                (*live.live_in, *live.live_out)), default=0)
    moves = [(ins.d, ins.a) for ins in instructions
             if ins.is_move and not ins.guarded and isinstance(ins.d, kind)]
    merged, alias = _coalesce(graph, moves, count, order)
    colours = _colour(merged, count, moves, alias, order)
    if colours is None:
        dsatur = nx.greedy_color(merged, strategy="DSATUR")
        if max(dsatur.values(), default=-1) < count:
            colours = dsatur
        else:
            return _ClassResult({}, max(max(dsatur.values()) + 1, peak), peak)
    result = {node: colours[alias.get(node, node)] for node in graph.nodes}
    return _ClassResult(result, max(result.values(), default=-1) + 1, peak)


def _find(alias: dict, node):
    while node in alias:
        node = alias[node]
    return node


def _coalesce(graph: nx.Graph, moves: list, count: int, order: dict) -> tuple[nx.Graph, dict]:
    """Merge copy-related nodes that do not interfere, when Briggs' test says the merged node
    cannot make colouring harder (fewer than `count` neighbours of significant degree)."""
    graph = graph.copy()
    alias: dict = {}
    for destination, source in moves:
        first, second = _find(alias, destination), _find(alias, source)
        if first == second or first not in graph or second not in graph:
            continue
        if graph.has_edge(first, second):
            continue
        neighbours = set(graph[first]) | set(graph[second])
        significant = sum(1 for node in neighbours if graph.degree(node) >= count)
        if significant >= count:
            continue
        keep, drop = sorted((first, second), key=order.get)
        for neighbour in list(graph[drop]):
            graph.add_edge(keep, neighbour)
        graph.remove_node(drop)
        alias[drop] = keep
    return graph, {node: _find(alias, node) for node in list(alias)}


def _colour(graph: nx.Graph, count: int, moves: list, alias: dict, order: dict) -> dict | None:
    work = graph.copy()
    stack = []
    while work:
        low = [node for node in work if work.degree(node) < count]
        if low:
            node = min(low, key=lambda n: (work.degree(n), order[n]))
        else:  # optimistic: it may still find a colour when popped
            node = max(work, key=lambda n: (work.degree(n), -order[n]))
        stack.append(node)
        work.remove_node(node)
    partners: dict = {}
    for destination, source in moves:
        first, second = alias.get(destination, destination), alias.get(source, source)
        if first != second:
            partners.setdefault(first, []).append(second)
            partners.setdefault(second, []).append(first)
    colours: dict = {}
    for node in reversed(stack):
        taken = {colours[n] for n in graph[node] if n in colours}
        preferred = [colours[p] for p in partners.get(node, ()) if p in colours
                     and colours[p] not in taken]
        if preferred:
            colours[node] = preferred[0]
            continue
        free = next((colour for colour in range(count) if colour not in taken), None)
        if free is None:
            return None
        colours[node] = free
    return colours


def _pressure_error(instructions, live: Liveness, kind, count, noun, result: _ClassResult,
                    kernel_name, kernel_loc, source) -> CapacityError:
    origin = instructions[_peak_index(instructions, live, kind)].origin if instructions else None
    loc = origin.loc if origin is not None else kernel_loc
    if result.peak > count:
        message = (f"kernel {kernel_name} needs {result.peak} {noun} at once here, but QwenGPU "
                   f"has {count} ({result.peak - count} too many)")
    else:
        message = (f"kernel {kernel_name} needs {result.used} {noun} after allocation, but "
                   f"QwenGPU has {count} (at most {result.peak} are live at once, here)")
    return CapacityError(message, loc, source)


def _spill_error(first_peaks: dict, words: int, area: SpillArea, register_count: int,
                 predicate_count: int, kernel_name, kernel_loc, source) -> CapacityError:
    """The spills do not fit in a thread's local memory: say what needed them and by how
    much they overflow, at the line of the highest register pressure."""
    kind = VReg if first_peaks[VReg][0].peak > register_count else VPred
    result, origin = first_peaks[kind]
    count, noun = (register_count, "registers") if kind is VReg else \
        (predicate_count, "predicate registers")
    arrays = area.base_bytes // 4
    limit = arrays + area.words
    if limit == 0:
        where = "there is no local memory to spill them to (LOCAL_WORDS = 0)"
    elif arrays:
        where = (f"its spills need {words} words of local memory a thread, which with its "
                 f"{arrays} words of local arrays make {arrays + words}, but a thread has "
                 f"{limit} (LOCAL_WORDS; {arrays + words - limit} too many)")
    else:
        where = (f"its spills need {words} words of local memory a thread, but a thread has "
                 f"{limit} (LOCAL_WORDS; {words - limit} too many)")
    message = (f"kernel {kernel_name} needs {result.peak} {noun} at once here, but QwenGPU "
               f"has {count}, and {where}")
    return CapacityError(message, origin.loc if origin is not None else kernel_loc, source)
