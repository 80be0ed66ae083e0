"""How many write ports a machine's stores need: what the trace protocol must know before any
graph exists (a record ends with one `commit:port{k}` token per port after the first).

A state element is banked (`choose_bank_dims`) when a step writes it more than once or it
has more elements than a DeltaNet head has slots: along the dims every access addresses
with a constant.  Writes that banks still cannot separate (`mem[maddr[lane]]`, one per lane)
are the store's write ports; `write_ports(design)` is the most any store has.  The plan of
the compiler banks the same way (`qwengpu.backend_torch.stores.plan_stores`).
"""

from __future__ import annotations

from collections import Counter
from math import prod

from qwengpu.dsl.netlist import Design

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
    def constant(node_id: int) -> int | None:
        node = design.nodes[node_id]
        return node.value if node.op == "const" else None

    most = 1
    for name, memory in design.memories.items():
        writes = [tuple(map(constant, w.index)) for w in design.writes if w.state == name]
        reads = [tuple(map(constant, n.args)) for n in design.nodes
                 if n.op == "read" and n.state == name]
        dims = choose_bank_dims("memory", memory.shape, len(writes), writes + reads)
        banks = Counter(tuple(index[d] for d in dims) for index in writes)
        most = max([most, *banks.values()])
    registers = Counter(w.state for w in design.writes if w.state in design.registers)
    return max([most, *registers.values()])
