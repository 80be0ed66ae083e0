"""Weights of a scheduled plan: each op through its gadget, the embedding and the lm_head.

MLP ops get one `MlpWriter` each, over their own units of the layer's MLP (the input rms
from the schedule's norm ledger), and go to the gadget of their work
(`qwengpu/backend_torch/gadgets/`): `sum` -> `arith.digit_sum`, `carry` -> `arith.carry`,
`select` and `choose` -> `choose.choose`, `priority` -> `choose.priority`, `lut`, shared
luts and `fn` -> `table.table`, `mul_column` -> `multiply.mul_column`.  Every gadget is
built from restoring steps (`step.py`), so every output is a clean group whatever the small
deviations of the inputs; binary values (`encodings.py`) are read through cube forms.  Mixer
ops: `scratch` (`gadgets/scratch.py`) and `memory` (`gadgets/memory.Memory`, one replica
per read port).  The embedding sets each token's embedding values (`plan.embedding_values`);
the lm_head collects a margin per matching emission group.  `record_units` runs an op's
gadget on a counting writer (the scheduler's cost) and keeps what it wrote, which `replay`
then puts at the op's real dims (a compile runs each gadget once); `bf16_risks` names the
sums too wide for bf16.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import torch

from qwengpu.backend_torch.gadgets.arith import carry, digit_sum
from qwengpu.backend_torch.gadgets.choose import choose, priority
from qwengpu.backend_torch.gadgets.core import MlpWriter, entry_arrays, put
from qwengpu.backend_torch.gadgets.memory import Memory, SlotAddress, address, fixed_address, \
    when
from qwengpu.backend_torch.gadgets.multiply import mul_column
from qwengpu.backend_torch.gadgets.scratch import scratch
from qwengpu.backend_torch.gadgets.table import table
from qwengpu.backend_torch.ops import CONSTANT_GROUP, HEAD_DIM, Choose, DigitWork, Function, \
    Op, Plan, SharedLuts
from qwengpu.backend_torch.residual import ANALOG, ONE_DIM, Group
from qwengpu.ir.digits import DIGIT_OPS, sum_values


class _Operands:
    """Operands of one op resolved to (group or None, domain, constant or None)."""

    def __init__(self, plan: Plan, groups: dict[str, Group], operands: Sequence[tuple]):
        self.items = []
        for kind, payload in operands:
            if kind == "c":
                self.items.append((None, (payload,), payload))
            else:
                self.items.append((groups[payload], plan.values[payload].domain, None))


def emit_mlp(writer: MlpWriter, op: Op, plan: Plan, groups: dict[str, Group]) -> None:
    """Add the units of MLP op `op` through its gadget (its output group is zero before
    this layer)."""
    work = op.work
    out = groups[op.outputs[0]]
    writer.constant_group = groups[CONSTANT_GROUP]
    writer.exact_groups = set(plan.embedding)

    def inputs(items) -> list:
        return _Operands(plan, groups, items).items

    if isinstance(work, Function):
        table(writer, inputs(work.operands), work.fn, out)
    elif isinstance(work, Choose):
        arms = [(values, inputs([arm])[0]) for values, arm in work.arms]
        choose(writer, inputs([work.selector])[0], arms, inputs([work.default])[0], out)
    elif isinstance(work, SharedLuts):
        fns = [_lut_function(plan, node) for node in work.nodes]
        table(writer, inputs(work.operands), lambda *values: tuple(fn(*values) for fn in fns),
              [groups[name] for name in op.outputs])
    elif not isinstance(work, DigitWork):
        raise ValueError(f"{op.name}: {work.label} is not MLP work")
    elif work.operator == "sum":
        node = work.node
        digit_sum(writer, inputs(work.operands), node.terms,
                  lambda total: node.table[total - node.base], out)
    elif work.operator == "carry":
        carry(writer, inputs(work.operands), out)
    elif work.operator == "select":
        selector, *arms = inputs(work.operands)
        choose(writer, selector, [((i,), arm) for i, arm in enumerate(arms)], None, out)
    elif work.operator == "mul_column":
        mul_column(writer, work.node.low, work.node.groups[0], inputs(work.operands), out)
    elif work.operator == "priority":
        count = len(work.node.terms)
        items = inputs(work.operands)
        priority(writer, work.node.terms, items[:count], items[count:2 * count], items[-1],
                 out)
    elif work.operator == "lut":
        table(writer, inputs(work.operands), _lut_function(plan, work.node), out)
    else:
        raise ValueError(f"{op.name}: unknown MLP op {work.operator}")


def _lut_function(plan: Plan, node):
    """A `lut` node's table as a function of its operands' values."""
    widths = [plan.graph.node(a).width for a in node.args]
    return lambda *values: DIGIT_OPS["lut"].evaluate(node, values, widths)


BF16_SAFE_RANGE = 16


def bf16_risks(plan: Plan) -> list[tuple[Op, int]]:
    """`sum` ops whose reachable totals span more than `BF16_SAFE_RANGE`: their far steps
    have pre-activations too large for bf16 gate outputs (measured: the multiplier column
    sums of tests/backend_torch/specs/alu_mix.hdl fail in bf16, pass in fp32)."""
    risks = []
    for op in plan.ops:
        if not isinstance(op.work, DigitWork) or op.work.operator != "sum":
            continue
        node = op.work.node
        domains = [(o[1],) if o[0] == "c" else plan.values[o[1]].domain
                   for o in op.work.operands]
        totals = sum_values(node.terms, domains)
        if max(totals) - min(totals) > BF16_SAFE_RANGE:
            risks.append((op, max(totals) - min(totals)))
    return risks


@dataclass(frozen=True)
class Recording:
    """An MLP op's units as its gadget placed them on a counting writer (`record_units`):
    its groups one after another from the dim after ONE, each (unit counted from 0, dim,
    value) entry of gate, up and down.  `replay` puts the same units at the op's real groups
    without running the gadget again."""

    units: int
    groups: dict[str, Group]
    entries: tuple[list, list, list]


def record_units(op: Op, plan: Plan) -> Recording:
    """MLP op `op`'s gadget run on a counting writer: its units and their entries."""
    groups, start = {}, ONE_DIM + 1
    for name in dict.fromkeys(op.inputs + op.outputs + [CONSTANT_GROUP]):
        groups[name] = plan.values[name].group(start)
        start = groups[name].stop
    writer = MlpWriter(None, range(1 << 30), 1.0)
    emit_mlp(writer, op, plan, groups)
    return Recording(writer.flush(), groups, writer.entries())


def replay(writer: MlpWriter, recording: Recording, groups: dict[str, Group]) -> bool:
    """Write a recorded op's units at `groups` (its groups where the weights go): the same
    weights `emit_mlp` writes there, since a gadget reads a group's dims only through its
    start.  False, writing nothing, where the layout differs in more than where the groups
    start (another size, scale or kind) or two of the op's groups overlap (or take the ONE
    dim): then the gadget has to run again."""
    moved = torch.zeros(ONE_DIM + 1 + sum(g.size for g in recording.groups.values()),
                        dtype=torch.long)
    moved[ONE_DIM] = ONE_DIM
    taken = [range(ONE_DIM, ONE_DIM + 1)]
    for name, at_count in recording.groups.items():
        group = groups[name]
        if replace(group, start=at_count.start) != at_count or \
                any(group.start < other.stop and other.start < group.stop for other in taken):
            return False
        taken.append(group.dims)
        moved[at_count.start:at_count.stop] = torch.arange(group.start, group.stop)
    writer.replay(recording.units, *((units, moved[dims], values) for units, dims, values
                                     in map(entry_arrays, recording.entries)))
    return True


# -- mixers ---------------------------------------------------------------------------------
def emit_scratch(model, layer: int, heads: Sequence[int], rms: float, op: Op,
                 groups: dict[str, Group]) -> None:
    """Install a scratch op (`gadgets/scratch.py`) into value heads `heads` of `layer`."""
    scratch(model.model.layers[layer].linear_attn, heads, rms, op.name,
            groups[op.work.slot_value], groups[CONSTANT_GROUP], op.work.heads, groups)


def emit_memory(model, layer: int, heads: Sequence[int], rms: float, op: Op,
                groups: dict[str, Group], sizes: dict[str, int]) -> None:
    """Install one replica of a state element (a `memory` op); a store of more slots than a
    head has keys goes to `work.banks` sets of heads (`_install_banks`)."""
    work = op.work
    if work.banks > 1:
        _install_banks(model, layer, heads, rms, op, groups)
        return
    kind, payload = work.address
    key = fixed_address(payload) if kind == "fixed" else \
        address(groups[payload], lambda v: min(v, HEAD_DIM - 1))   # v >= size: enable is 0
    memory = Memory(op.name, key, [groups[v] for v in work.values],
                    [when(groups[g], *vals) for g, vals in work.when], groups[work.init])
    kind, payload = work.query
    if kind == "fixed":
        query = fixed_address(payload)
    else:
        spare = min(sizes[work.element], HEAD_DIM - 1)
        query = address(groups[payload], lambda v: min(v, spare))
    memory.install(model, layer, list(heads), rms, query, [groups[v] for v in op.outputs])


def _install_banks(model, layer: int, heads: Sequence[int], rms: float, op: Op,
                   groups: dict[str, Group]) -> None:
    """A store of more than `HEAD_DIM` slots (its spare included): bank b, in its own heads,
    holds slots 128 b to 128 b + 127.  A bank writes only when the write index is one of its
    slots (one more write condition: an aligned block of values is one cube, so a binary
    index reads it); its query is hot for its own slots only, so for an index in another bank
    every query channel is cold, the layer's L2 norm (with its epsilon) keeps the query near
    1e-17 and the bank's read-out is some 1e-13 of the hot bank's (every consumer restores
    its inputs; docs/state.md, "Memories of more than 128 words").  Every bank's read-out goes
    to the same output groups: they add up to the hot bank's value."""
    work = op.work
    (_, written), (_, read) = work.address, work.query
    write_index, read_index = groups[written], groups[read]
    per_bank = len(heads) // work.banks
    for bank in range(work.banks):
        base = bank * HEAD_DIM

        def in_bank(group: Group) -> dict[tuple[int], int]:
            return {(v,): v - base for v in range(base, min(base + HEAD_DIM, group.count))}
        key = SlotAddress((write_index,), in_bank(write_index))
        conditions = [when(groups[g], *vals) for g, vals in work.when]
        if key.slot_of:
            conditions.append(when(write_index, *(v for v, in key.slot_of)))
        else:               # an index that never reaches this bank: only <bos> writes it
            key = fixed_address(0)
            conditions.append(when(groups[work.init], 1))
        memory = Memory(f"{op.name}.bank{bank}", key, [groups[v] for v in work.values],
                        conditions, groups[work.init])
        memory.install(model, layer, list(heads[bank * per_bank:(bank + 1) * per_bank]), rms,
                       SlotAddress((read_index,), in_bank(read_index)),
                       [groups[v] for v in op.outputs])


# -- embedding and lm_head --------------------------------------------------------------------
def embedding_table(plan: Plan, groups: dict[str, Group], hidden: int) -> torch.Tensor:
    from qwengpu.backend_torch.plan import embedding_values
    protocol = plan.protocol
    table = torch.zeros(protocol.vocab_size, hidden, dtype=torch.float64)
    table[:, 0] = 1.0
    for token_id in range(protocol.vocab_size):
        for name, value in embedding_values(plan, token_id).items():
            group = groups[name]
            if group.kind == ANALOG:
                table[token_id, group.start] = value * group.scale
                continue
            for dim, coef in put(group, value).items():
                table[token_id, dim] = coef
    return table


def lm_head_table(plan: Plan, groups: dict[str, Group], hidden: int, final_rms: float,
                  margin: float) -> torch.Tensor:
    """Rows of field tokens, port tokens and eos collect `margin` per matching emission group
    (a missing high digit is a wildcard; port tokens and eos match any digit); every other
    token's row is 0.  The step logic writes the next token into the emission groups
    (`next.kind`, `next.lo`, `next.hi`), one hot entry each, so the right token collects
    `margin` from every group and any other differs from it in at least one (the record
    position, or a digit of the same field): it is at least `margin` lower.  The final
    norm's rms is folded in, so the margin is in logits."""
    protocol = plan.protocol
    kind, lo, hi = (groups[plan.emission[k]] for k in ("kind", "lo", "hi"))
    unit = margin * final_rms
    table = torch.zeros(protocol.vocab_size, hidden, dtype=torch.float64)
    for token in protocol.tokens:
        row = table[token.id]
        if token.kind == "field":
            row[kind.dim(token.slot)] = unit
            row[lo.dim(token.value & 15)] = unit
            if protocol.slot_digits(token.slot)[1] is not None:     # a high digit
                row[hi.dim(token.value >> 4)] = unit
            else:
                row[hi.start:hi.stop] = unit
        elif token.id == protocol.eos_id or token.kind == "port":
            position = token.slot if token.kind == "port" else protocol.tokens_per_record
            row[kind.dim(position)] = unit
            row[lo.start:lo.stop] = unit
            row[hi.start:hi.stop] = unit
    return table
