"""State elements as *stores*: the DeltaNet memories a plan writes and reads.

A state element is one store unless it must be split into **banks**: when a step writes it
more than once (a DeltaNet head takes one write per token) or when it has more elements than
a head has slots (127 and a spare).  Banks split the element along the index dimensions that
every write and every read of the element addresses with a constant (e.g. the lane of
`regs[warp][lane][reg]` in an unrolled per-lane datapath): bank `b` holds the elements whose
constant dims equal `b`, addressed by the remaining dims.  Each write then goes to its own
bank and each read reads one bank, so every bank still sees at most one write per commit.
Prompt commits (`E[i]`) go to the bank of `i` with the local index (`commit_target`).

Writes that banks cannot separate (`mem[maddr[lane]]`, one per lane) are the store's *write
ports*, numbered in the spec's order; `qwengpu.trace.write_ports.write_ports(design)` is the
most any store has, which the trace protocol needs before any graph exists (one commit
token per port and record); the banking rule, `choose_bank_dims`, lives there too.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import prod

from qwengpu.ir import Graph
from qwengpu.trace.write_ports import choose_bank_dims


@dataclass(frozen=True)
class Store:
    name: str                       # the element's name, or "E@b0.b1" for a bank
    element: str
    kind: str                       # memory | register
    width: int
    bank_dims: tuple[int, ...]      # element dims fixed by the bank
    bank: tuple[int, ...]           # their values
    shape: tuple[int, ...]          # the other dims (the local index)
    mode: int                       # tok.mode value of its commit tokens

    @property
    def size(self) -> int:
        return prod(self.shape) if self.kind == "memory" else 1


def index_digits(node, args=None) -> list[list[int]]:
    """Per dimension, the arg ids of a read's or write's index digits."""
    args = list(node.args if args is None else args)
    groups = node.groups or (1,) * len(args)
    if node.op == "write":
        groups, args = groups[1:-1], args[groups[0]:len(args) - groups[-1]]
    out, position = [], 0
    for count in groups:
        out.append(args[position:position + count])
        position += count
    return out


def const_index(graph: Graph, digits: list[int]) -> int | None:
    values = [graph.const_value(d) for d in digits]
    if any(v is None for v in values):
        return None
    return sum(v << (4 * k) for k, v in enumerate(values))


def plan_stores(graph: Graph, protocol, first_mode: int) -> list[Store]:
    """The stores of every state element, in protocol order (banks in row-major order)."""
    stores = []
    for element in protocol.state:
        ports = [n for _, n in graph.items()
                 if n.state == element.name and n.op in ("read", "write")]
        writes = sum(1 for n in ports if n.op == "write")
        indices = [tuple(const_index(graph, digits) for digits in index_digits(n))
                   for n in ports] if element.kind == "memory" else []
        bank_dims = choose_bank_dims(element.kind, element.shape, writes, indices)
        shape = tuple(s for d, s in enumerate(element.shape) if d not in bank_dims)
        banks = list(itertools.product(*(range(element.shape[d]) for d in bank_dims)))
        for bank in banks:
            name = element.name if not bank_dims else \
                f"{element.name}@" + ".".join(str(b) for b in bank)
            stores.append(Store(name, element.name, element.kind, element.width, bank_dims,
                                bank, shape, first_mode + len(stores)))
    return stores


def store_of(stores: list[Store], element: str, bank: tuple[int, ...]) -> Store:
    for store in stores:
        if store.element == element and store.bank == bank:
            return store
    raise KeyError((element, bank))


def commit_target(stores: list[Store], element, index: tuple[int, ...]) -> tuple[Store, int]:
    """The store and local flat index a commit token `element[index]` writes."""
    mine = [s for s in stores if s.element == element.name]
    bank_dims = mine[0].bank_dims
    bank = tuple(index[d] for d in bank_dims)
    store = store_of(stores, element.name, bank)
    flat = 0
    for d, (size, position) in enumerate(zip(element.shape, index)):
        if d not in bank_dims:
            flat = flat * size + position
    return store, flat
