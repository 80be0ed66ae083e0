"""Scheduling a plan into exactly 45 Qwen3.5 layers, residual allocation, and its text dump.

`schedule_plan(plan, target)` places every op of a `Plan` (`plan.py`) at a *sublayer*:
`2*L` is the token mixer of layer `L`, `2*L + 1` its MLP.  A value written by a sublayer is
readable from the next one.  Ops are placed in plan order (a dependency order), each at the
earliest sublayer of its kind where its inputs are ready and the layer still has room (MLP
units, DeltaNet heads; mixers only in `linear_attention` layers): list scheduling, ASAP,
deterministic.  The scratch sits in layer 0's mixer by construction (its inputs are the
embedding).  A plan that needs more than 45 layers, or more residual dims than the target
has, fails with a `CapacityError` naming the resource, what was needed, what there is, and
the HDL line of the op that overflowed.

Residual dims: every value gets its own group for the whole pass (no reuse yet; the figures
say how much reuse would save: `peak_live_dims`).  The norm ledger follows: the input of
sublayer `s` holds ONE plus one hot entry per value written before `s`, on every token.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from qwengpu.backend_torch.emit import count_units
from qwengpu.backend_torch.plan import Op, Plan
from qwengpu.backend_torch.target import FULL, Target, fit_min_target
from qwengpu.errors import CapacityError


@dataclass
class Schedule:
    plan: Plan
    target: Target                      # the shape built (min resolved)
    ready: dict[str, int]               # value -> first sublayer that can read it
    layers_used: int
    units: dict[int, int] = field(default_factory=dict)      # layer -> MLP units
    heads: dict[int, int] = field(default_factory=dict)      # layer -> DeltaNet heads
    order: list[str] = field(default_factory=list)           # values in allocation order

    def ops_at(self, sublayer: int) -> list[Op]:
        return [op for op in self.plan.ops if op.sublayer == sublayer]

    def live_values(self, sublayer: int) -> list[str]:
        """Values holding a hot entry at the input of `sublayer` (for the norm ledger)."""
        return [v for v in self.order if self.ready[v] <= sublayer]

    def hot_entries(self, sublayer: int) -> int:
        return 1 + len(self.live_values(sublayer))

    @property
    def dims(self) -> int:
        return 1 + sum(self.plan.values[v].size for v in self.order)

    def last_use(self) -> dict[str, int]:
        last = {v: self.ready[v] for v in self.order}
        for op in self.plan.ops:
            for v in op.inputs:
                last[v] = max(last[v], op.sublayer)
        for v in self.plan.emission.values():
            last[v] = 2 * self.target.num_layers
        return last

    @property
    def peak_live_dims(self) -> int:
        """The most dims live at once if dead values gave their dims back."""
        last = self.last_use()
        peak = 0
        for s in range(2 * self.target.num_layers + 1):
            live = sum(self.plan.values[v].size for v in self.order
                       if self.ready[v] <= s <= last[v])
            peak = max(peak, live)
        return 1 + peak


def schedule_plan(plan: Plan, target: Target) -> Schedule:
    """Place every op (see the module doc); `CapacityError` when the plan does not fit."""
    layer_types = target.layer_types
    ready = {name: 0 for name in plan.embedding}
    units: dict[int, int] = defaultdict(int)
    heads: dict[int, int] = defaultdict(int)
    for op in plan.ops:
        if op.kind == "mlp":
            op.units = count_units(op, plan)
        earliest = max((ready[v] for v in op.inputs), default=0)
        sublayer = _place(op, earliest, target, layer_types, units, heads)
        op.sublayer = sublayer
        if op.kind == "mlp":
            units[op.layer] += op.units
        else:
            heads[op.layer] += op.heads
        for v in op.outputs:
            ready[v] = sublayer + 1
    layers_used = 1 + max(op.layer for op in plan.ops)
    order = sorted(ready, key=lambda v: (ready[v], list(plan.values).index(v)))
    dims = 1 + sum(plan.values[v].size for v in order)
    built = fit_min_target(target, dims, max(units.values(), default=1),
                           max(heads.values(), default=1))
    if dims > built.hidden_size:
        culprit = max(plan.ops, key=lambda op: op.sublayer)
        raise CapacityError(f"residual dims: the plan needs {dims} (peak live "
                            f"{_peak(plan, ready)}), target {built.name} has "
                            f"{built.hidden_size}", culprit.loc)
    return Schedule(plan, built, ready, layers_used, dict(units), dict(heads), order)


def _peak(plan: Plan, ready: dict[str, int]) -> int:
    return max(sum(plan.values[v].size for v in ready if ready[v] <= s)
               for s in range(max(ready.values()) + 1))


def _place(op: Op, earliest: int, target: Target, layer_types, units, heads) -> int:
    mixer = op.kind != "mlp"
    sublayer = earliest
    while True:
        if sublayer % 2 != (0 if mixer else 1):
            sublayer += 1
            continue
        layer = sublayer // 2
        if layer >= target.num_layers:
            raise CapacityError(
                f"layers: {op.name} ({op.region}) needs layer {layer + 1} of "
                f"{target.num_layers}: the logic is too deep for the target", op.loc)
        if mixer:
            if op.heads > target.heads_per_layer:
                raise CapacityError(f"DeltaNet heads: {op.name} needs {op.heads} heads in one "
                                    f"layer, the target has {target.heads_per_layer}", op.loc)
            fits = layer_types[layer] != FULL and \
                heads[layer] + op.heads <= target.heads_per_layer
        else:
            if op.units > target.units_per_layer:
                raise CapacityError(f"MLP units: {op.name} needs {op.units} units, a layer "
                                    f"has {target.units_per_layer}", op.loc)
            fits = units[layer] + op.units <= target.units_per_layer
        if fits:
            return sublayer
        sublayer += 2


# -- text -------------------------------------------------------------------------------------
def format_schedule(schedule: Schedule) -> str:
    """Layer by layer: ops, residual values read and written, heads, utilisation."""
    plan, target = schedule.plan, schedule.target
    lines = [f"schedule of {plan.graph.name} for target {target.name}: "
             f"{target.num_layers} layers, {schedule.layers_used} used; hidden "
             f"{target.hidden_size}, intermediate {target.intermediate_size}, DeltaNet heads "
             f"{target.linear_heads} per layer",
             f"residual: {schedule.dims} dims allocated (peak live "
             f"{schedule.peak_live_dims}); {len(plan.ops)} ops, "
             f"{sum(op.units for op in plan.ops)} MLP units, "
             f"{sum(op.heads for op in plan.ops)} DeltaNet heads"]
    types = target.layer_types
    for layer in range(schedule.layers_used):
        mixer, mlp = schedule.ops_at(2 * layer), schedule.ops_at(2 * layer + 1)
        used_heads = schedule.heads.get(layer, 0)
        used_units = schedule.units.get(layer, 0)
        lines.append(f"layer {layer} ({types[layer]}): heads {used_heads}/{target.linear_heads}"
                     f" {_bar(used_heads, target.linear_heads)}  units {used_units}/"
                     f"{target.intermediate_size} {_bar(used_units, target.intermediate_size)}"
                     f"  hot entries {schedule.hot_entries(2 * layer)}")
        for label, ops in (("mixer", mixer), ("mlp", mlp)):
            for op in ops:
                cost = f"{op.heads} heads" if op.kind != "mlp" else f"{op.units} units"
                spec = op.spec.get("op", op.kind)
                where = f" @{op.loc}" if op.loc else ""
                lines.append(f"  {label:5} {op.name} = {spec}({', '.join(op.inputs)}) -> "
                             f"{', '.join(op.outputs)} [{op.region}, {cost}]{where}")
    lines.append(f"layers {schedule.layers_used}..{target.num_layers - 1}: empty (exact no-ops)")
    lines += format_breakdown(schedule)
    return "\n".join(lines) + "\n"


def format_breakdown(schedule: Schedule, top: int = 12) -> list[str]:
    """Where the cost comes from: per region, and the HDL lines with the most MLP units and
    residual dims (what to restructure first when a spec does not fit)."""
    plan = schedule.plan
    regions: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    lines_cost: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for op in plan.ops:
        dims = sum(plan.values[v].size for v in op.outputs)
        row = regions[op.region]
        row[0] += 1
        row[1] += op.units
        row[2] += op.heads
        row[3] += dims
        if op.loc is not None:
            key = f"{op.loc.file}:{op.loc.line}"
            lines_cost[key][0] += op.units
            lines_cost[key][1] += dims
            lines_cost[key][2] += op.heads
    out = ["cost by region: " + "; ".join(
        f"{name} {ops} ops, {units} units, {heads} heads, {dims} dims"
        for name, (ops, units, heads, dims) in sorted(regions.items()))]
    ranked = sorted(lines_cost.items(), key=lambda item: (-item[1][0], item[0]))[:top]
    if ranked:
        out.append("HDL lines with the most MLP units (units, dims, heads):")
        out += [f"  {where}: {units} units, {dims} dims, {heads} heads"
                for where, (units, dims, heads) in ranked]
    return out


def _bar(used: int, total: int, width: int = 20) -> str:
    if not total:
        return ""
    filled = round(width * used / total)
    return "[" + "#" * filled + "." * (width - filled) + "]"
