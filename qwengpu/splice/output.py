"""What the spliced model writes on machine tokens: the machine's next token, whatever the
base's own layers add after the compiled ones.

Three changes to a machine compiled for the base's shape make its answer survive the base's
layers and the base's vocabulary:

- **Concentration.**  The last compiled MLP also erases every value still live at the end but
  the emission groups (the next token's kind, low and high digit), the norm anchor included,
  so the final residual is `ONE` plus three hot entries: after the final norm each holds
  `sqrt(hidden / 4)`, where a text token's final state spreads over every dim.
- **Scale.**  The machine is compiled with `rms_norm_eps / SCALE**2` and then its embedding and
  every compiled write are multiplied by SCALE (a power of 2, so exactly): every residual of a
  machine token is exactly SCALE times the compiled design, which the norms cannot tell apart
  (`docs/splice.md`, "Scale").  The base's layers read normalised inputs, so what they add
  is bounded whatever SCALE is (`base_write_bound`), and SCALE makes it small next to the
  machine's residual: `choose_scale` picks the smallest SCALE that keeps the shift of any
  logit under a quarter of the margin.
- **Rows.**  The machine tokens' lm_head rows are the compiled design's (`margin` logits per
  matching emission group) divided by the base's final norm scale `1 + w`.
"""

from __future__ import annotations

import math

import torch

from qwengpu.backend_torch.gadgets.core import DRIVES, Form, MlpWriter
from qwengpu.backend_torch.emit import lm_head_table
from qwengpu.backend_torch.residual import ONE_DIM, residual_rms
from qwengpu.backend_torch.schedule import Schedule
from qwengpu.errors import UserError

SCALE_LIMIT = 2 ** 48        # residuals stay far from float32's range (3.4e38)


def concentrate_output(model, schedule: Schedule, groups) -> list[str]:
    """Erase, in the last layer's MLP, every value live at the end except the emission
    groups; returns their names."""
    target, plan = schedule.target, schedule.plan
    end = 2 * target.num_layers
    keep = set(plan.emission.values())
    gone = [name for name in schedule.live_values(end) if name not in keep]
    last = target.num_layers - 1
    late = [name for name in gone if schedule.ready[name] > end - 1]
    if late:
        raise ValueError(f"{late[0]} is written by the last MLP and cannot be erased there")
    dims = [dim for name in gone for dim in groups[name].dims]
    used = schedule.layer_units(last)
    if used + len(dims) > target.intermediate_size:
        raise UserError(f"the last compiled layer has {target.intermediate_size - used} free MLP "
                        f"units, the machine's output needs {len(dims)} to be concentrated "
                        f"({used + len(dims) - target.intermediate_size} too few)")
    rms = residual_rms(schedule.hot_entries(end - 1), target.hidden_size, target.rms_norm_eps)
    writer = MlpWriter(model.model.layers[last].mlp, range(used, used + len(dims)), rms,
                       drive=DRIVES[torch.float32])
    for dim in dims:
        writer.linear(Form({dim: 1.0}), Form({dim: -1.0}))
    assert writer.flush() == len(dims)
    return gone


def final_rms(schedule: Schedule, groups) -> float:
    """The rms of a machine token's final residual once concentrated (design scale)."""
    target = schedule.target
    squares = 1.0 + sum(groups[name].square_norm for name in schedule.plan.emission.values())
    return residual_rms(squares, target.hidden_size, target.rms_norm_eps)


def machine_rows(schedule: Schedule, groups, margin: float) -> torch.Tensor:
    """The machine tokens' lm_head rows (machine coordinates, float64, final norm scale 1):
    the compiled design's (`emit.lm_head_table`) with one change, a wildcard digit read from
    `ONE` instead of from the 16 dims of its group.  Each emission group holds exactly one
    hot entry, so on a machine position the two are equal; on a text position a row reading
    3 dims instead of up to 33 scores far less (docs/splice.md, "Rows")."""
    target, plan = schedule.target, schedule.plan
    rms = final_rms(schedule, groups)
    table = lm_head_table(plan, groups, target.hidden_size, rms, margin)
    unit = margin * rms
    for label in ("lo", "hi"):
        group = groups[plan.emission[label]]
        if group.kind != "onehot" or group.scale != 1.0:
            raise ValueError(f"emission group {label} is not one-hot of scale 1")
        block = table[:, group.start:group.stop]
        wildcard = (block == unit).all(1)
        block[wildcard] = 0.0
        table[wildcard, ONE_DIM] += unit
    return table


def quiet_dims(folded_text_rows, exclude: set[int]) -> list[int]:
    """Base dims ordered from the one where base tokens' lm_head rows (final norm scale
    folded in) reach least to the most, without `exclude`: the machine's ONE and emission
    groups go first, so base tokens score least on machine positions."""
    reach = None
    for rows in folded_text_rows:
        column = rows.abs().amax(0)
        reach = column if reach is None else torch.maximum(reach, column)
    order = torch.argsort(reach, stable=True).tolist()
    return [dim for dim in order if dim not in exclude]


def base_write_bound(base, exact: bool = False) -> float:
    """A bound on the norm of what the base's layers add to any token, summed over its
    layers: products of the projections' spectral norms and `|n(x)| <= sqrt(hidden)
    max|1 + w|` (docs/splice.md).  The spectral norms are bounded by Frobenius norms (one
    pass over the weights), or with `exact` taken from singular values (minutes on a 2B
    base, for when the looser bound asks too large a scale)."""
    text = base.text
    hidden = int(text["hidden_size"])
    total = 0.0
    for layer in range(base.num_layers):
        prefix = f"{base.text_prefix}layers.{layer}."

        def weight(name):
            return base.tensor(prefix + name).double()

        def spectral(name):
            tensor = base.tensor(prefix + name)
            if not exact:   # bounds the spectral norm from above, in one pass
                return float(tensor.double().norm())
            return 1.01 * float(torch.linalg.svdvals(tensor.float())[0])   # 1%: fp32's rounding

        reach_in = math.sqrt(hidden) * float((1 + weight("input_layernorm.weight")).abs().max())
        reach_post = math.sqrt(hidden) * float(
            (1 + weight("post_attention_layernorm.weight")).abs().max())
        if prefix + "linear_attn.out_proj.weight" in base.files:
            values = weight("linear_attn.out_proj.weight").shape[1]
            gate_scale = float(weight("linear_attn.norm.weight").abs().max())
            total += (spectral("linear_attn.out_proj.weight") * math.sqrt(values) * gate_scale
                      * spectral("linear_attn.in_proj_z.weight") * reach_in)
        else:
            heads = int(text["num_attention_heads"])
            kv_heads = int(text["num_key_value_heads"])
            total += (spectral("self_attn.o_proj.weight") * spectral("self_attn.v_proj.weight")
                      * reach_in * math.sqrt(heads / kv_heads))
        total += (spectral("mlp.down_proj.weight") * spectral("mlp.gate_proj.weight")
                  * spectral("mlp.up_proj.weight") * reach_post ** 2)
    return total


def choose_scale(bound: float, design_rms: float, row_norm: float, margin: float) -> int:
    """The smallest power of 2 SCALE for which `bound` moves no logit by more than
    margin / 4: a row of norm `row_norm` (final norm scale folded in) moves by at most
    `row_norm * 2 * bound / (SCALE * design_rms)`."""
    needed = 8.0 * row_norm * bound / (design_rms * margin)
    scale = 1
    while scale < needed:
        scale *= 2
    if scale > SCALE_LIMIT:
        raise UserError(f"the base's layers may add up to {bound:.3g} to a machine token's "
                        f"residual: the machine would need a scale of {needed:.3g}, over the "
                        f"{SCALE_LIMIT:.3g} float32 allows")
    return scale


def scale_writes(model, embedding: torch.Tensor, scale: int) -> None:
    """Multiply every compiled write (MLP down, DeltaNet out, attention o projections) and
    the machine embedding by `scale` (a power of 2: exact)."""
    with torch.no_grad():
        for layer in model.model.layers:
            layer.mlp.down_proj.weight.mul_(scale)
            if hasattr(layer, "linear_attn"):
                layer.linear_attn.out_proj.weight.mul_(scale)
            else:
                layer.self_attn.o_proj.weight.mul_(scale)
        embedding.mul_(scale)


def worst_text_logit_on_machine(text_rows: torch.Tensor, schedule: Schedule, groups,
                                rms: float) -> float:
    """The largest logit a base token can reach on a machine position: its row (final norm
    scale folded in, machine coordinates) against ONE and one hot entry of each emission
    group (or none), over every combination."""
    plan = schedule.plan
    total = text_rows[:, ONE_DIM].double() / rms
    for name in plan.emission.values():
        group = groups[name]
        best = (text_rows[:, group.start:group.stop].double() * group.scale / rms).amax(1)
        total = total + best.clamp(min=0)
    return float(total.max())
