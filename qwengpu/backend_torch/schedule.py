"""Scheduling a plan into exactly 45 Qwen3.5 layers, residual allocation, and its text dump.

`schedule_plan(plan, target)` places every op of a `Plan` (`plan.py`) at a *sublayer*:
`2*L` is the token mixer of layer `L`, `2*L + 1` its MLP.  A value written by a sublayer is
readable from the next one.  List scheduling, sublayer by sublayer: the ops of the sublayer's
kind whose inputs are ready go in order of their latest possible sublayer (ALAP; ties by plan
order) while the layer has room (MLP units, DeltaNet heads; mixers only in
`linear_attention` layers); deterministic.  A file target's caps are its sizes; for `min`
the caps are the pair of unit and head caps that still fits 45 layers with the fewest weights
(`_min_caps`), so the layers are used evenly and min's intermediate size is what one layer
really needs; a file target's ops get the smallest unit cap that lets the residual fit
(`_file_target_schedule`), and its erasures the rest of each layer.  The scratch sits in layer 0's mixer by construction (its inputs are the
embedding).  A plan that needs more than 45 layers, or more residual dims than the target
has, fails with a `CapacityError` naming the resource, what was needed, what there is, and
the HDL line of the op that overflowed; at a file target whose layers would hold the plan if
they were wider, the resource is the layer's MLP units or DeltaNet heads (`_narrow_layers`:
how many a layer needs, how many it has), not the layer count.

Residual dims are reused: a value holds its group from the sublayer that writes it until the
MLP sublayer at or after its last reader, which erases it (one linear unit per dim writing
minus the value) where that layer has units to spare; the freed dims go to values written
later (`reuse_layout`, first fit over the lifetimes).  The norm ledger follows: the input of
sublayer `s` holds ONE plus one hot entry per one-hot value written before `s` and not
erased before `s`, the same on every token.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from qwengpu.backend_torch.emit import record_units
from qwengpu.backend_torch.names import op_name, plan_names
from qwengpu.backend_torch.ops import CONSTANT_GROUP, NORM_ANCHOR, Op, Plan
from qwengpu.backend_torch.residual import merge_runs
from qwengpu.backend_torch.target import FULL, Target, fit_min_target
from qwengpu.errors import CapacityError


@dataclass
class Schedule:
    plan: Plan
    target: Target                      # the shape built (min resolved)
    ready: dict[str, int]               # value -> first sublayer that can read it
    layers_used: int
    units: dict[int, int] = field(default_factory=dict)      # layer -> MLP units of the ops
    heads: dict[int, int] = field(default_factory=dict)      # layer -> DeltaNet heads
    order: list[str] = field(default_factory=list)           # values in allocation order
    start: dict[str, int] = field(default_factory=dict)      # value -> its first residual dim
    erase_at: dict[str, int] = field(default_factory=dict)   # value -> MLP sublayer erasing it
    dims: int = 0                                            # residual dims used, ONE included

    def ops_at(self, sublayer: int) -> list[Op]:
        return [op for op in self.plan.ops if op.sublayer == sublayer]

    def erased_at(self, sublayer: int) -> list[str]:
        """Values whose dims the MLP `sublayer` erases (one linear unit per dim)."""
        return [v for v in self.order if self.erase_at.get(v) == sublayer]

    def erase_units(self, layer: int) -> int:
        return sum(self.plan.values[v].size for v in self.erased_at(2 * layer + 1))

    def layer_units(self, layer: int) -> int:
        """MLP units layer `layer` uses: its ops and its erasures."""
        return self.units.get(layer, 0) + self.erase_units(layer)

    def live_values(self, sublayer: int) -> list[str]:
        """Values held in the residual at the input of `sublayer`."""
        return [v for v in self.order if self.ready[v] <= sublayer
                and self.erase_at.get(v, sublayer) >= sublayer]

    def hot_entries(self, sublayer: int) -> int:
        """The norm ledger: ONE plus the hot entries of the live values, the same on every
        token (analog values count as 0)."""
        return 1 + sum(self.plan.values[v].hot_entries for v in self.live_values(sublayer))

    def last_use(self) -> dict[str, int]:
        return last_uses(self.plan, self.ready, 2 * self.target.num_layers)

    @property
    def peak_live_dims(self) -> int:
        """The most dims live at once (values from their writer to their last reader)."""
        last = self.last_use()
        peak = 0
        for s in range(2 * self.target.num_layers + 1):
            live = sum(self.plan.values[v].size for v in self.order
                       if self.ready[v] <= s <= last[v])
            peak = max(peak, live)
        return 1 + peak


def last_uses(plan: Plan, ready: dict[str, int], end: int) -> dict[str, int]:
    """Each value's last reading sublayer; `end` for what the lm_head reads and for the
    constant group every step reads."""
    last = dict(ready)
    for op in plan.ops:
        for v in op.inputs:
            last[v] = max(last[v], op.sublayer)
    for v in list(plan.emission.values()) + [CONSTANT_GROUP, NORM_ANCHOR]:
        if v in last:
            last[v] = end
    return last


# A file target's per-layer unit caps, as multiples of the smallest that fits its layers
# (`_file_target_schedule`); a splice's target tries more of them for the narrowest residual.
CAP_FACTORS = (1.0, 1.25, 1.5, 2.0, 3.0)
NARROWEST_CAP_FACTORS = (1.0, 1.1, 1.2, 1.25, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.2,
                         2.5, 3.0)


def reuse_layout(plan: Plan, target: Target, ready: dict[str, int], units: dict[int, int],
                 unit_cap: int | None) -> tuple[dict[str, int], int, dict[str, int]]:
    """Residual dims with reuse: (value -> first dim, dims used including ONE, value ->
    the MLP sublayer that erases it).

    A value holds its dims from the sublayer that writes it until the MLP sublayer at or
    after its last reader, which erases it (one linear unit per dim writing minus it) when
    that layer has `unit_cap` room left (always when `unit_cap` is None); an erased value's
    dims go to values written later (first fit in order of writing, ties by plan order; an
    analog value takes dims no value held before), a value not erased keeps its dims to the
    end of the pass."""
    end = 2 * target.num_layers
    last = last_uses(plan, ready, end)
    position = {name: i for i, name in enumerate(plan.values)}
    sizes = {v: plan.values[v].size for v in ready}
    spent = defaultdict(int, units)
    runs: list[tuple[int, int]] = []            # free (start, size), sorted
    top, start_of, erase_at = 1, {}, {}
    held: list[tuple[int, int, str]] = []       # (erase sublayer, position, value)
    for v in sorted(ready, key=lambda v: (ready[v], position[v])):
        now = ready[v]
        keep = []
        for at, pos, dead in sorted(held):
            layer = at // 2
            if at >= now or (unit_cap is not None and spent[layer] + sizes[dead] > unit_cap):
                keep.append((at, pos, dead))
                continue
            spent[layer] += sizes[dead]
            erase_at[dead] = at
            runs.append((start_of[dead], sizes[dead]))
        held = keep
        runs = merge_runs(runs)
        # An analog dim reads its number at 2^16 times its scale, so it takes a dim no
        # other value held: an erasure leaves a residue of about 1e-6 of the value erased.
        fresh = plan.values[v].analog_scale is not None
        for index, (start, size) in enumerate([] if fresh else runs):
            if size >= sizes[v]:
                start_of[v] = start
                runs[index] = (start + sizes[v], size - sizes[v])
                break
        else:
            start_of[v] = top
            top += sizes[v]
        runs = [r for r in runs if r[1]]
        if last[v] < end:
            held.append((last[v] | 1, position[v], v))
    return start_of, top, erase_at


def schedule_plan(plan: Plan, target: Target) -> Schedule:
    """Place every op (see the module doc); `CapacityError` when the plan does not fit.

    A file target caps each layer at its units and heads.  For `min` the caps are chosen
    (`_min_caps`): the per-layer MLP unit cap and DeltaNet head cap with which the list
    scheduler still fits the 45 layers at the fewest weights, so the layers are used evenly
    and min's intermediate size is what one layer really needs."""
    for op in plan.ops:
        if op.kind == "mlp":
            op.recording = record_units(op, plan)
            op.units = op.recording.units
    if target.is_min:
        ready, units, heads = _list_schedule(plan, target, *_min_caps(plan, target))
    else:
        ready, units, heads = _file_target_schedule(plan, target)
    layers_used = 1 + max(op.layer for op in plan.ops)
    position = {name: i for i, name in enumerate(plan.values)}
    order = sorted(ready, key=lambda v: (ready[v], position[v]))
    widest = max(units.values(), default=1)
    if target.is_min:
        start, dims, erase_at, widest = _smallest_min_layout(plan, target, ready, units)
    else:
        start, dims, erase_at = reuse_layout(plan, target, ready, units,
                                             target.units_per_layer)
    built = fit_min_target(target, dims, widest, max(heads.values(), default=1))
    schedule = Schedule(plan, built, ready, layers_used, dict(units), dict(heads), order,
                        start, erase_at, dims)
    if dims > built.hidden_size:
        culprit = max(plan.ops, key=lambda op: op.sublayer)
        raise CapacityError(f"residual dims: the plan needs {dims} (peak live "
                            f"{schedule.peak_live_dims}), target {built.name} has "
                            f"{built.hidden_size} ({dims - built.hidden_size} short)",
                            culprit.loc)
    return schedule


def _smallest_min_layout(plan: Plan, target: Target, ready, units):
    """min: the erasure cap (a multiple of the widest layer's units, or none) that gives the
    fewest MLP weights, `hidden * intermediate`; erasures below the widest layer's units are
    free, above it they widen every layer.  Returns the layout and the intermediate size."""
    widest = max(units.values(), default=1)
    best = None
    for factor in (1.0, 1.25, 1.5, 2.0, 3.0, None):
        cap = None if factor is None else int(widest * factor)
        start, dims, erase_at = reuse_layout(plan, target, ready, units, cap)
        spent = defaultdict(int, units)
        for v, at in erase_at.items():
            spent[at // 2] += plan.values[v].size
        width = max(spent.values(), default=1)
        if best is None or (dims * width, dims) < (best[1] * best[3], best[1]):
            best = (start, dims, erase_at, width)
    return best


def _list_schedule(plan: Plan, target: Target, unit_cap: int, head_cap: int):
    """List scheduling under the per-layer caps: sublayer by sublayer, the ready ops of its
    kind in order of their latest possible sublayer (ALAP, ties by plan order) while the
    layer has room.  Returns (ready, units, heads); `CapacityError` when 45 layers do not
    hold the plan."""
    layer_types = target.layer_types
    sublayers = 2 * target.num_layers
    for op in plan.ops:
        _check_fits_one_layer(op, target)
        op.sublayer = -1
    latest = _latest_sublayers(plan, target)
    producer = {v: i for i, op in enumerate(plan.ops) for v in op.outputs}
    waiting = [sum(1 for v in set(op.inputs) if v in producer) for op in plan.ops]
    readers: dict[int, list[int]] = defaultdict(list)
    for i, op in enumerate(plan.ops):
        for v in set(op.inputs):
            if v in producer:
                readers[producer[v]].append(i)
    ready = {name: 0 for name in plan.embedding}
    released = {i: 0 for i, count in enumerate(waiting) if count == 0}
    units: dict[int, int] = defaultdict(int)
    heads: dict[int, int] = defaultdict(int)
    placed = 0
    for sublayer in range(sublayers):
        layer, mixer = sublayer // 2, sublayer % 2 == 0
        if mixer and layer_types[layer] == FULL:
            continue
        candidates = sorted((latest[i], i) for i, at in released.items()
                            if at <= sublayer and (plan.ops[i].kind != "mlp") == mixer)
        done = []
        for _, i in candidates:
            op = plan.ops[i]
            if mixer and heads[layer] + op.heads > head_cap:
                continue
            if not mixer and units[layer] + op.units > unit_cap:
                continue
            op.sublayer = sublayer
            if mixer:
                heads[layer] += op.heads
            else:
                units[layer] += op.units
            done.append(i)
        for i in done:
            del released[i]
            placed += 1
            for v in plan.ops[i].outputs:
                ready[v] = sublayer + 1
            for reader in readers[i]:
                waiting[reader] -= 1
                if waiting[reader] == 0:
                    released[reader] = sublayer + 1
    if placed < len(plan.ops):
        op = next(op for op in plan.ops if op.sublayer < 0)
        raise CapacityError(
            f"layers: {op_name(op).name} ({op.region}) needs layer {target.num_layers + 1} of "
            f"{target.num_layers}: the logic is too deep for the target", op.loc)
    return ready, units, heads


def _check_fits_one_layer(op: Op, target: Target) -> None:
    if op.kind == "mlp" and op.units > target.units_per_layer:
        raise CapacityError(f"MLP units: {op_name(op).name} needs {op.units} units, a layer "
                            f"has {target.units_per_layer}", op.loc)
    if op.kind != "mlp" and op.heads > target.heads_per_layer:
        raise CapacityError(f"DeltaNet heads: {op_name(op).name} needs {op.heads} heads in one "
                            f"layer, the target has {target.heads_per_layer}", op.loc)


def _latest_sublayers(plan: Plan, target: Target) -> list[int]:
    """Each op's latest sublayer (ALAP) if every reader were as late as it can be."""
    types = target.layer_types
    last = 2 * target.num_layers - 1
    latest = [last] * len(plan.ops)
    producer = {v: i for i, op in enumerate(plan.ops) for v in op.outputs}
    for i in range(len(plan.ops) - 1, -1, -1):
        op = plan.ops[i]
        sublayer = latest[i]
        mixer = op.kind != "mlp"
        while sublayer >= 0 and ((sublayer % 2 == 0) != mixer or
                                 (mixer and types[sublayer // 2] == FULL)):
            sublayer -= 1
        latest[i] = sublayer
        for v in set(op.inputs):
            if v in producer:
                p = producer[v]
                latest[p] = min(latest[p], sublayer - 1)
    return latest


def _file_target_schedule(plan: Plan, target: Target):
    """A file target's list schedule (`_list_schedule`'s result) at the smallest per-layer cap
    on the ops' units that lets the residual fit.  Ops packed as tightly as the layers allow
    keep values live longer and leave no units for erasures, so the cap starts at the
    smallest that fits the layers (as for `min`) and rises by steps (1.25, 1.5, 2, 3 times,
    then the whole layer) while the residual does not fit; erasures may use the layer's
    remaining units.  When no cap fits, the one with the fewest dims (`schedule_plan` then
    names the overflow).  A splice's target (`Target.narrowest`) tries the caps of
    NARROWEST_CAP_FACTORS and takes the one with the fewest dims, the first of equals: the
    dims it leaves are the text gate's."""
    full = target.units_per_layer
    try:
        _, units, _ = _list_schedule(plan, target, full, target.heads_per_layer)
    except CapacityError as error:
        raise _narrow_layers(plan, target, error) from None
    smallest = _smallest_unit_cap(plan, target, target.heads_per_layer,
                                  max(units.values(), default=1))
    factors = NARROWEST_CAP_FACTORS if target.narrowest else CAP_FACTORS
    caps = sorted({min(full, int(smallest * f)) for f in factors} | {full})
    best = None
    for cap in caps:
        scheduled = _list_schedule(plan, target, cap, target.heads_per_layer)
        dims = reuse_layout(plan, target, scheduled[0], scheduled[1], full)[1]
        if dims <= target.hidden_size and not target.narrowest:
            return scheduled
        if best is None or dims < best[0]:
            best = (dims, cap)
    # again at the chosen cap: each run places the plan's ops (`op.sublayer`) anew
    return _list_schedule(plan, target, best[1], target.heads_per_layer)


def _narrow_layers(plan: Plan, target: Target, error: CapacityError) -> CapacityError:
    """The error of a file target whose layers do not hold the plan: which per-layer resource
    is short and by how much, when wider layers would hold it; else `error` (too deep)."""
    all_units = max(sum(op.units for op in plan.ops if op.kind == "mlp"), 1)
    all_heads = max(sum(op.heads for op in plan.ops if op.kind != "mlp"), 1)
    units, heads = target.units_per_layer, target.heads_per_layer
    layers = f"{target.num_layers} layers"
    if _fits(plan, target, all_units, heads):
        need = _smallest_unit_cap(plan, target, heads, all_units)
        return CapacityError(f"MLP units: the plan needs {need} a layer to fit {layers}, "
                             f"target {target.name} has {units} ({need - units} short)",
                             error.loc)
    if _fits(plan, target, units, all_heads):
        need = next((cap for cap in range(heads + 1, all_heads)
                     if _fits(plan, target, units, cap)), all_heads)
        return CapacityError(f"DeltaNet heads: the plan needs {need} a layer to fit {layers}, "
                             f"target {target.name} has {heads} ({need - heads} short)",
                             error.loc)
    if _fits(plan, target, all_units, all_heads):
        need_units = _smallest_unit_cap(plan, target, all_heads, all_units)
        need_heads = next((cap for cap in range(heads + 1, all_heads)
                           if _fits(plan, target, all_units, cap)), all_heads)
        return CapacityError(f"MLP units and DeltaNet heads: the plan needs more of both a "
                             f"layer to fit {layers} (at least {need_units} units and "
                             f"{need_heads} heads), target {target.name} has {units} units "
                             f"and {heads} heads", error.loc)
    return error


def _min_caps(plan: Plan, target: Target) -> tuple[int, int]:
    """`min`'s per-layer caps: of the (unit cap, head cap) pairs with which the layers still
    hold the plan, the one with the fewest weights.  Every layer has the same shape, so a layer
    costs `3 * units + per_head * heads` weights a residual dim (`_weights_per_dim`: a DeltaNet
    head is ~200 MLP units).  For each head cap from the widest mixer op up, the smallest unit
    cap that fits (binary search); the search stops at the head cap whose heads, with the unit
    cap the most heads need, cost more than the best pair so far (more heads rarely save
    units: on specs/qwengpu.hdl 28 heads need 2,540 units a layer and 13 heads 2,583)."""
    free = target.units_per_layer
    _, units, heads = _list_schedule(plan, target, free, target.heads_per_layer)
    # the scratch sits in layer 0's mixer (docs/schedule.md): its heads share that layer
    widest_mixer = max([op.heads for op in plan.ops if op.kind != "mlp"] +
                       [sum(op.heads for op in plan.ops if op.region == "scratch")])
    most_heads = max(max(heads.values(), default=1), widest_mixer, 1)
    most_units = max(units.values(), default=1)
    fewest_units = _smallest_unit_cap(plan, target, most_heads, most_units)
    per_unit, per_head = _weights_per_dim(target)
    best = None
    for head_cap in range(max(widest_mixer, 1), most_heads + 1):
        if best is not None and per_unit * fewest_units + per_head * head_cap >= best[0]:
            break
        if _fits(plan, target, most_units, head_cap):
            unit_cap = _smallest_unit_cap(plan, target, head_cap, most_units)
        elif _fits(plan, target, free, head_cap):
            unit_cap = _smallest_unit_cap(plan, target, head_cap, free)
        else:
            continue
        cost = per_unit * unit_cap + per_head * head_cap
        if best is None or cost < best[0]:
            best = (cost, unit_cap, head_cap)
    return best[1], best[2]


def _smallest_unit_cap(plan: Plan, target: Target, head_cap: int, high: int) -> int:
    """The smallest per-layer unit cap (at most `high`, which fits) with which the layers
    hold the plan at `head_cap` heads a layer (binary search)."""
    widest_op = max((op.units for op in plan.ops if op.kind == "mlp"), default=1)
    low = max(widest_op, 1)
    while low < high:
        middle = (low + high) // 2
        if _fits(plan, target, middle, head_cap):
            high = middle
        else:
            low = middle + 1
    return low


def _fits(plan: Plan, target: Target, unit_cap: int, head_cap: int) -> bool:
    try:
        _list_schedule(plan, target, unit_cap, head_cap)
    except CapacityError:
        return False
    return True


def _weights_per_dim(target: Target) -> tuple[int, int]:
    """Weights a residual dim costs per MLP unit (gate, up, down) and per DeltaNet head
    (q, k, v, z, out, a, b), in a layer of `target`'s head dims."""
    return 3, 2 * target.key_head_dim + 3 * target.value_head_dim + 2


# -- text -------------------------------------------------------------------------------------
def format_schedule(schedule: Schedule) -> str:
    """Layer by layer: ops, residual values read and written, heads, utilisation; ops and
    values by their HDL names (`names.plan_names`), as on the page."""
    plan, target = schedule.plan, schedule.target
    names = plan_names(plan)
    erased = [v for v in schedule.order if v in schedule.erase_at]
    lines = [f"schedule of {plan.graph.name} for target {target.name}: "
             f"{target.num_layers} layers, {schedule.layers_used} used; hidden "
             f"{target.hidden_size}, intermediate {target.intermediate_size}, DeltaNet heads "
             f"{target.linear_heads} per layer",
             f"residual: {schedule.dims} dims used (peak live {schedule.peak_live_dims}; "
             f"{sum(plan.values[v].size for v in schedule.order) + 1} without reuse), "
             f"{len(erased)} values erased by "
             f"{sum(plan.values[v].size for v in erased)} units; {len(plan.ops)} ops, "
             f"{sum(op.units for op in plan.ops)} MLP units, "
             f"{sum(op.heads for op in plan.ops)} DeltaNet heads"]
    binary = [v for v in plan.values.values() if v.encoding == "binary"]
    if binary:
        lines.append(f"encoding: {len(binary)} binary values in "
                     f"{sum(v.size for v in binary)} dims (one-hot they would take "
                     f"{sum(v.values for v in binary)}); {len(plan.values) - len(binary)} "
                     "one-hot or analog")
    types = target.layer_types
    for layer in range(schedule.layers_used):
        mixer, mlp = schedule.ops_at(2 * layer), schedule.ops_at(2 * layer + 1)
        used_heads = schedule.heads.get(layer, 0)
        used_units = schedule.layer_units(layer)
        lines.append(f"layer {layer} ({types[layer]}): heads {used_heads}/{target.linear_heads}"
                     f" {_bar(used_heads, target.linear_heads)}  units {used_units}/"
                     f"{target.intermediate_size} {_bar(used_units, target.intermediate_size)}"
                     f"  hot entries {ledger_text(schedule, 2 * layer)}")
        for label, ops in (("mixer", mixer), ("mlp", mlp)):
            for op in ops:
                cost = f"{op.heads} heads" if op.kind != "mlp" else f"{op.units} units"
                named = names.op(op)
                part = f"{named.role}, " if named.role else ""
                where = f" @{op.loc}" if op.loc else ""
                lines.append(f"  {label:5} {named.name} = {op.label}("
                             f"{', '.join(map(names.value, op.inputs))}) -> "
                             f"{', '.join(map(names.value, op.outputs))} "
                             f"[{op.region}, {part}{cost}]{where}")
        gone = schedule.erased_at(2 * layer + 1)
        if gone:
            lines.append(f"  erase {', '.join(map(names.value, gone))} "
                         f"[{schedule.erase_units(layer)} units]")
    lines.append(f"layers {schedule.layers_used}..{target.num_layers - 1}: empty (exact no-ops)")
    lines += format_breakdown(schedule)
    return "\n".join(lines) + "\n"


def ledger_parts(schedule: Schedule, sublayer: int) -> tuple[int, int]:
    """The norm ledger at the input of `sublayer` as whole numbers: (hot entries of the
    values, the norm anchor's share: the square of its scale, 0 without one)."""
    anchor = schedule.plan.values.get(NORM_ANCHOR)
    share = round(anchor.hot_entries) if anchor is not None and \
        NORM_ANCHOR in schedule.live_values(sublayer) else 0
    return round(schedule.hot_entries(sublayer)) - share, share


def ledger_text(schedule: Schedule, sublayer: int) -> str:
    hot, anchor = ledger_parts(schedule, sublayer)
    return f"{hot} (+{anchor} the norm anchor's)" if anchor else f"{hot}"


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
