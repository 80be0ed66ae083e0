"""Register allocation: virtual registers onto r0..r14, virtual predicates onto p0..p6.

Classic graph colouring (Chaitin-Briggs):

1. liveness over the CFG (`qwengpu.ptx.liveness`);
2. an interference graph (networkx) per register class: a definition interferes with
   everything live after it, except the source of a copy;
3. conservative (Briggs) coalescing of copies, so `d = t` disappears when it can without
   making the graph harder to colour;
4. simplify/select colouring with optimistic pushes, colours biased towards copy partners;
   when that fails, networkx's DSATUR colouring is tried as well.

There is no spilling (memory belongs to the kernel's buffers): a kernel that needs more
registers than the machine has fails with a `CapacityError` that says how many it needs and
points at the PTX line where the most values are live at once.  Everything is deterministic:
registers are numbered in order of first appearance and every tie is broken by that order.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from qwengpu.errors import CapacityError, Location
from qwengpu.ptx.liveness import Liveness, liveness, strip_labels
from qwengpu.ptx.vcode import VInstr, VPred, VReg


@dataclass
class Allocation:
    """Physical index of every virtual register and predicate, and how many were used."""

    registers: dict[VReg, int]
    predicates: dict[VPred, int]
    registers_used: int
    predicates_used: int
    peak_live_registers: int
    peak_live_predicates: int


@dataclass
class _ClassResult:
    colours: dict
    used: int
    peak: int


def allocate(code: list, register_count: int, predicate_count: int, kernel_name: str,
             kernel_loc: Location | None, source: str | None = None) -> Allocation:
    instructions, labels = strip_labels(code)
    live = liveness(instructions, labels)
    results = []
    for kind, count, noun in ((VReg, register_count, "registers"),
                              (VPred, predicate_count, "predicate registers")):
        result = _allocate_class(instructions, live, kind, count)
        if result.used > count:
            raise _pressure_error(instructions, live, kind, count, noun, result, kernel_name,
                                  kernel_loc, source)
        results.append(result)
    registers, predicates = results
    return Allocation(registers.colours, predicates.colours, registers.used, predicates.used,
                      registers.peak, predicates.peak)


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
    peak_index, peak = 0, -1
    for index in range(len(instructions)):
        here = max(sum(isinstance(r, kind) for r in live.live_in[index]),
                   sum(isinstance(r, kind) for r in live.live_out[index]))
        if here > peak:
            peak_index, peak = index, here
    origin = instructions[peak_index].origin if instructions else None
    loc = origin.loc if origin is not None else kernel_loc
    if result.peak > count:
        message = (f"kernel {kernel_name} needs {result.peak} {noun} at once here, but QwenGPU "
                   f"has {count} ({result.peak - count} too many)")
    else:
        message = (f"kernel {kernel_name} needs {result.used} {noun} after allocation, but "
                   f"QwenGPU has {count} (at most {result.peak} are live at once, here)")
    return CapacityError(message, loc, source)
