"""How many write ports a machine's stores need: what the trace protocol must know before any
graph exists (a record ends with one `commit:port{k}` token per port after the first).

A state element is banked (`choose_bank_dims`) when a step writes it more than once or it
has more elements than a DeltaNet head has slots: along the dims every access addresses
with a constant.  Writes that banks still cannot separate (`mem[maddr[lane]]`, one per lane)
are the store's write ports; `write_ports(design)` is the most any store has.  The plan of
the compiler banks the same way (`qwengpu.backend_torch.stores.plan_stores`).

`port_conditions(design)` says when a record needs port token k at all: when a write on
port k requires a bit of an always-present record field (its enable is an AND with
`field[bit]`, e.g. `mem[maddr[lane]] <= ... when mwen[lane] & ...`), port k is needed only
when one of those bits is set; a record whose bits are all 0 enables no write on port k and
leaves its token out.
"""

from __future__ import annotations

from collections import Counter
from math import prod

from qwengpu.dsl.netlist import Design, StateWrite
from qwengpu.trace.optional import required_field_bits

HEAD_SLOTS = 127


def choose_bank_dims(kind: str, shape: tuple[int, ...], writes: int,
                     indices: list[tuple[int | None, ...]]) -> tuple[int, ...]:
    """The dims a memory is banked along: none unless it is written more than once per step
    or too large for one head; then every dim that all its accesses (`indices`: per access,
    each dim's constant or None) address with a constant."""
    if kind != "memory" or (writes <= 1 and prod(shape) <= HEAD_SLOTS):
        return ()
    return tuple(d for d in range(len(shape))
                 if all(index[d] is not None for index in indices))


def write_ports(design: Design) -> int:
    """The most writes one store takes per step (banks as `plan_stores` makes them, from the
    elaborated design): the record's commit tokens.  Constant folding can only bank further,
    so the plan of the design never needs more."""
    return max([1] + [len(writes) for writes in _store_writes(design)])


def _store_writes(design: Design) -> list[list[StateWrite]]:
    """The writes of each store (a register, or a bank of a memory), in spec order: the k-th
    is the store's write port k."""
    def constant(node_id: int) -> int | None:
        node = design.nodes[node_id]
        return node.value if node.op == "const" else None

    stores = []
    for name, memory in design.memories.items():
        writes = [w for w in design.writes if w.state == name]
        indices = [tuple(map(constant, w.index)) for w in writes]
        reads = [tuple(map(constant, n.args)) for n in design.nodes
                 if n.op == "read" and n.state == name]
        dims = choose_bank_dims("memory", memory.shape, len(writes), indices + reads)
        banks: dict[tuple, list[StateWrite]] = {}
        for write, index in zip(writes, indices):
            banks.setdefault(tuple(index[d] for d in dims), []).append(write)
        stores += banks.values()
    for name in design.registers:
        stores.append([w for w in design.writes if w.state == name])
    return [writes for writes in stores if writes]


def port_conditions(design: Design) -> list[tuple[tuple[str, int], ...] | None]:
    """Per write port k = 1 .. write_ports-1: the (field, bit) pairs one of which a record
    must have set for some write on port k to be enabled, or None when a write on port k
    requires no field bit (its token is in every record)."""
    conditions: list[list[tuple[str, int]] | None] = \
        [[] for _ in range(write_ports(design) - 1)]
    for writes in _store_writes(design):
        for port, write in enumerate(writes[1:]):
            bits = sorted(b for b in required_field_bits(design, write.enable)
                          if b[1] is not None)
            if not bits or conditions[port] is None:
                conditions[port] = None
            elif bits[0] not in conditions[port]:
                conditions[port].append(bits[0])
    return [None if c is None else tuple(c) for c in conditions]
