"""Checkers of the backend's two IRs: `verify_plan(plan)` and `verify_schedule(schedule)`.

Like `qwengpu.ir.verify` for the graph, each checks every invariant the next step relies on
and raises `PlanError` naming the first op or value that breaks one — always a compiler bug,
never a user mistake.  `qwengpu.compiler.compile(..., check=True)` runs them after their
steps (the tests always do).

A plan: every value an op reads is the embedding's or written by exactly one op, nothing
writes an embedding value, the ops' reads form no cycle, each op's work reads only its
declared inputs, MLP work runs in the MLP and mixer work takes heads, values are well formed
(a one-hot group holds its domain, a binary one its count in its bits, an analog one is one
dim with a scale), and the emission reads values that exist.

A schedule: every op sits at a sublayer of the target (MLP work at an MLP sublayer, mixer
work at the mixer of a linear-attention layer), reads only values written at an earlier
sublayer, and each layer's units (erasures included) and heads fit the target; every value
is ready when its writer has run, holds dims inside the residual that no other value holds
while both are live, and is erased only after its last reader.
"""

from __future__ import annotations

import networkx as nx

from qwengpu.backend_torch.ops import MLP_WORK, Choose, DigitWork, Function, Op, Plan, \
    SharedLuts, operand_values
from qwengpu.backend_torch.residual import BINARY, ONEHOT
from qwengpu.backend_torch.target import FULL

REGIONS = ("scratch", "commit", "state", "step", "emit")


class PlanError(Exception):
    """A broken invariant of a plan or a schedule: always a compiler bug."""


def _work_operands(op: Op) -> list:
    work = op.work
    if isinstance(work, (DigitWork, SharedLuts, Function)):
        return list(work.operands)
    if isinstance(work, Choose):
        return [work.selector, *(arm for _, arm in work.arms), work.default]
    return []


def verify_plan(plan: Plan) -> None:
    """Check a plan (see the module doc); `PlanError` for the first problem."""
    writer: dict[str, str] = {}
    for op in plan.ops:
        if op.region not in REGIONS:
            raise PlanError(f"{op.name}: unknown region {op.region!r}")
        for name in op.inputs + op.outputs:
            if name not in plan.values:
                raise PlanError(f"{op.name}: unknown value {name}")
        for name in op.outputs:
            if name in plan.embedding:
                raise PlanError(f"{op.name} writes {name}, which the embedding sets")
            if name in writer:
                raise PlanError(f"{name} is written by both {writer[name]} and {op.name}")
            writer[name] = op.name
        undeclared = set(operand_values(_work_operands(op))) - set(op.inputs)
        if undeclared:
            raise PlanError(f"{op.name} reads {sorted(undeclared)} without declaring them")
        if isinstance(op.work, MLP_WORK) != (op.kind == "mlp") or \
                (op.kind != "mlp" and op.heads < 1):
            raise PlanError(f"{op.name}: {op.label} work of kind {op.kind} with "
                            f"{op.heads} heads")
    for op in plan.ops:
        for name in op.inputs:
            if name not in writer and name not in plan.embedding:
                raise PlanError(f"{op.name} reads {name}, which nothing writes")
    reads = nx.DiGraph()
    for op in plan.ops:
        reads.add_node(op.name)
        for name in op.inputs:
            if name in writer:
                reads.add_edge(writer[name], op.name)
    try:
        cycle = nx.find_cycle(reads)
    except nx.NetworkXNoCycle:
        cycle = None
    if cycle:
        raise PlanError(f"ops read each other in a circle: {[edge[0] for edge in cycle]}")
    for value in plan.values.values():
        _check_value(value)
    for label, name in plan.emission.items():
        if name not in plan.values:
            raise PlanError(f"the emission's {label} reads the unknown value {name}")


def _check_value(value) -> None:
    if value.analog_scale is not None:
        if value.size != 1:
            raise PlanError(f"{value.name}: an analog value of {value.size} dims")
        return
    if value.encoding == BINARY:
        if not 0 < value.values <= 1 << value.size:
            raise PlanError(f"{value.name}: {value.values} values in {value.size} bits")
    elif value.encoding != ONEHOT:
        raise PlanError(f"{value.name}: unknown encoding {value.encoding!r}")
    if not value.domain or min(value.domain) < 0 or max(value.domain) >= value.values:
        raise PlanError(f"{value.name}: domain outside its {value.values} values")


def verify_schedule(schedule) -> None:
    """Check a schedule (see the module doc); `PlanError` for the first problem."""
    plan, target = schedule.plan, schedule.target
    sublayers = 2 * target.num_layers
    types = target.layer_types
    for op in plan.ops:
        if not 0 <= op.sublayer < sublayers:
            raise PlanError(f"{op.name} is at sublayer {op.sublayer}, outside 0..{sublayers - 1}")
        at_mlp = op.sublayer % 2 == 1
        if at_mlp != (op.kind == "mlp"):
            raise PlanError(f"{op.name} ({op.kind}) at sublayer {op.sublayer}")
        if not at_mlp and types[op.layer] == FULL:
            raise PlanError(f"{op.name} at the mixer of full-attention layer {op.layer}")
        for name in op.inputs:
            if schedule.ready[name] > op.sublayer:
                raise PlanError(f"{op.name} at sublayer {op.sublayer} reads {name}, ready at "
                                f"{schedule.ready[name]}")
        for name in op.outputs:
            if schedule.ready[name] != op.sublayer + 1:
                raise PlanError(f"{name} is ready at {schedule.ready[name]}, its writer "
                                f"{op.name} runs at {op.sublayer}")
    for layer in range(target.num_layers):
        if schedule.layer_units(layer) > target.intermediate_size:
            raise PlanError(f"layer {layer} uses {schedule.layer_units(layer)} MLP units, the "
                            f"target has {target.intermediate_size}")
        if schedule.heads.get(layer, 0) > max(target.linear_heads, 0):
            raise PlanError(f"layer {layer} uses {schedule.heads[layer]} heads, the target "
                            f"has {target.linear_heads}")
    _check_residual(schedule)


def _check_residual(schedule) -> None:
    plan, target = schedule.plan, schedule.target
    end = 2 * target.num_layers
    last = schedule.last_use()
    spans = []
    for name in schedule.order:
        value = plan.values[name]
        start = schedule.start[name]
        group = value.group(start)
        if group.start < 1 or group.stop > target.hidden_size:
            raise PlanError(f"{name} holds dims {group.start}..{group.stop - 1}, outside "
                            f"1..{target.hidden_size - 1}")
        erased = schedule.erase_at.get(name)
        if erased is not None and erased < last[name]:
            raise PlanError(f"{name} is erased at sublayer {erased}, read until {last[name]}")
        # held from the sublayer that writes it (the embedding: -1) to the one that erases
        # it, which may write another value into the same dims
        alive = (schedule.ready[name] - 1, end if erased is None else erased)
        spans.append((group.start, group.stop, alive, name))
    spans.sort()
    for i, (start, stop, alive, name) in enumerate(spans):
        for other_start, _, other_alive, other in spans[i + 1:]:
            if other_start >= stop:
                break
            if alive[0] < other_alive[1] and other_alive[0] < alive[1]:
                raise PlanError(f"{name} and {other} share residual dims while both live")
    if schedule.dims > target.hidden_size:
        raise PlanError(f"the schedule uses {schedule.dims} dims, the target has "
                        f"{target.hidden_size}")
