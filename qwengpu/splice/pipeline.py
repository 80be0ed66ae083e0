"""`splice`: a spec compiled against a base Qwen3.5 checkpoint's shape, put in front of the
base's own layers, as one list of named steps.

    report = splice("specs/qwengpu.hdl", "Qwen3.5-2B", "qwengpu-2b")

| step | what it does |
|---|---|
| check | `check_base.py`: read the base (its shape, form, vocabulary), the machine's schedule for its shape, its tokens after the base's (`vocab.place_machine_tokens`), the text gate on the dims the schedule leaves free (`gate.py`) |
| bound | how much the base's layers can add to a token (`output.base_write_bound`), so SCALE |
| compile | the machine for the base's shape, `rms_norm_eps / SCALE**2` (`qwengpu.compiler`) |
| concentrate | the last compiled MLP leaves only the next token's groups (`output.py`) |
| gate | the text gate's rows added to every used MLP unit and DeltaNet head |
| scale | every compiled write and machine embedding row times SCALE |
| permute | machine dims onto the base dims the gate did not take |
| write | the spliced checkpoint (`assemble.py`), written aside and renamed when whole |

The report (`SpliceReport`, `splice.txt` in the output) carries every figure a user needs to
trust the result: the gate's margin, SCALE and the bound behind it, the machine margin and
the most a base token can score on a machine position.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from qwengpu.backend_torch.target import NUM_LAYERS, Target
from qwengpu.errors import UserError, check_output_location
from qwengpu.splice import output as out
from qwengpu.splice.assemble import permute_hidden, write_spliced
from qwengpu.splice.base import Base
from qwengpu.splice.check_base import check_base
from qwengpu.splice.gate import gate_model_off
from qwengpu.splice.vocab import Placement

# Logits between the machine's right token and any other.  Smaller than `hdlc compile`'s 16:
# a machine row scores about margin * sqrt(12 / hidden) per unit of a text token's final
# state, so the margin is what keeps machine tokens under the base's own on text.
SPLICE_MARGIN = 12.0


@dataclass
class SpliceReport:
    base: str
    placement: Placement
    figures: dict = field(default_factory=dict)

    def text(self) -> str:
        f = self.figures
        p = self.placement
        return "\n".join([
            f"spliced: {NUM_LAYERS} compiled layers in front of {f['base_layers']} layers of "
            f"{self.base} ({'multimodal' if f['multimodal'] else 'text'} form, "
            f"{'tied' if f['tied'] else 'untied'} embeddings)",
            f"vocabulary: {p.count} machine tokens at ids {p.offset}..{p.offset + p.count - 1} "
            f"({p.reuses_rows} in the base's unused rows, {p.new_rows} new rows; "
            f"{p.vocab_size} rows)",
            f"residual: the machine uses {f['machine_dims']} of {f['hidden']} dims; the text "
            f"gate lives on {f['gate_dims']} of the other {f['hidden'] - f['machine_dims']}",
            f"text gate: margin {f['gate_margin']:.4g} (min over {f['text_tokens']} text "
            f"tokens of -u.n(e)); {f['gated_units']} MLP units and {f['gated_heads']} DeltaNet "
            "heads gated to <= -200 on text",
            f"scale: {f['scale']} (the base's layers add at most {f['base_bound']:.4g} to a "
            f"token; rms_norm_eps {f['design_eps']:.3g} in the compiled design)",
            f"machine margin: {f['margin']:.4g} logits between the right machine token and any "
            f"other; a base token scores at most {f['worst_text_logit']:.4g} on a machine "
            f"position, the right machine token {3 * f['margin']:.4g}",
            f"output: {f['erased']} values erased in the last compiled layer",
        ]) + "\n"


def splice(spec: str, base_dir: str | Path, output: str | Path, *,
           params: dict[str, int] | None = None, margin: float = SPLICE_MARGIN,
           progress: Callable[[str], None] | None = None) -> SpliceReport:
    from qwengpu.compiler import resume

    say = progress or (lambda _message: None)
    output = Path(output)
    if output.exists():
        raise UserError(f"{output}: already exists (splice writes a new directory)")
    check_output_location(output, "spliced checkpoint")
    # What does not fit is refused before the base's layers are read (`check_base`): the
    # machine's schedule for the base's shape, its tokens in the base's tokenizer, the gate.
    check = check_base(spec, base_dir, params=params, progress=say)
    if check.error is not None:
        raise check.error
    base, target, planned, gate = check.base, check.target, check.planned, check.gate
    base_tokens, placement = check.base_tokens, check.placement
    eps, hidden = target.rms_norm_eps, target.hidden_size
    say(f"gate: margin {gate.margin:.4g} on {len(gate.dims)} of the "
        f"{hidden - planned.schedule.dims} free dims ({gate.method})")
    final_scale = 1.0 + base.tensor(base.text_prefix + "norm.weight").double()

    bound = out.base_write_bound(base)
    design_rms = (4.0 / hidden) ** 0.5
    # a machine row with the final norm scale folded in is the design's: 33 dims at most
    row_norm = max(margin * design_rms * 33 ** 0.5, _max_row_norm(base, final_scale))
    try:
        scale = out.choose_scale(bound, design_rms, row_norm, margin)
    except UserError:
        say(f"bound: {bound:.4g} from Frobenius norms asks too large a scale; singular values")
        bound = out.base_write_bound(base, exact=True)
        scale = out.choose_scale(bound, design_rms, row_norm, margin)
    say(f"bound: the base's layers add at most {bound:.4g}; scale {scale}")

    # The check's schedule, built for the base's eps, is the design's: the steps up to the
    # schedule read only the target's shape, and the eps enters with the weights (emit).
    design = Target(**{**target.__dict__, "rms_norm_eps": eps / scale ** 2})
    planned.target = design
    planned.schedule = dataclasses.replace(planned.schedule, target=design)
    compiled = resume(planned, "emit", progress=say)
    model, schedule, groups = compiled.model, compiled.schedule, compiled.groups
    used = schedule.dims
    free = list(range(used, hidden))
    erased = out.concentrate_output(model, schedule, groups)
    gate_dims = gate.dims
    counts = gate_model_off(model, gate, free[:len(gate_dims)])
    say(f"gate: {counts['units']} units, {counts['heads']} heads gated")

    # machine dim -> base dim: ONE and the emission groups on the base's quietest dims
    quiet = out.quiet_dims((rows * final_scale for rows in _lm_rows(base, base_tokens)),
                           set(gate_dims))
    first = [0] + [dim for name in protocol_emission(schedule) for dim in groups[name].dims]
    machine_order = first + [d for d in range(used) if d not in set(first)]
    permutation = torch.empty(hidden, dtype=torch.long)
    permutation[machine_order] = torch.tensor(quiet[:used])
    permutation[used:used + len(gate_dims)] = torch.tensor(gate_dims)
    permutation[used + len(gate_dims):] = torch.tensor(quiet[used:])
    rms = out.final_rms(schedule, groups)
    machine_lm = out.machine_rows(schedule, groups, margin)
    machine_lm = machine_lm / final_scale[permutation]
    embedding = model.model.embed_tokens.weight.detach().clone()
    out.scale_writes(model, embedding, scale)
    worst = _worst_text_logit(base, base_tokens, permutation, final_scale, schedule, groups,
                              rms)
    if worst > 2 * margin:
        raise UserError(f"a base token may score up to {worst:.4g} on a machine position, "
                        f"within {margin:g} of the machine's {3 * margin:g}: splice with a "
                        f"--margin of at least {worst / 2:.3g}")
    layers = permute_hidden(model, permutation)
    inverse = torch.empty_like(permutation)
    inverse[permutation] = torch.arange(hidden)
    embedding, machine_lm = embedding[:, inverse], machine_lm[:, inverse].float()

    report = SpliceReport(str(base_dir), placement, {
        "base_layers": base.num_layers, "multimodal": base.multimodal, "tied": base.tied,
        "machine_dims": used, "hidden": hidden, "gate_dims": len(gate_dims),
        "gate_margin": gate.margin, "text_tokens": gate.tokens,
        "gated_units": counts["units"], "gated_heads": counts["heads"],
        "scale": scale, "base_bound": bound, "design_eps": eps / scale ** 2,
        "margin": margin, "worst_text_logit": worst, "erased": len(erased)})
    say("write: the spliced checkpoint")
    write_spliced(base, output, layers, target.layer_types, embedding, machine_lm, placement,
                  compiled, report, say)
    return report


def protocol_emission(schedule) -> list[str]:
    return [schedule.plan.emission[label] for label in ("kind", "lo", "hi")]


def _lm_rows(base: Base, count: int, chunk: int = 16384):
    """The base's lm_head rows (the embedding when tied) below `count`, in chunks."""
    rows = base.tensor(base.lm_head_name)
    for start in range(0, count, chunk):
        yield rows[start:min(count, start + chunk)].double()


def _max_row_norm(base: Base, final_scale: torch.Tensor) -> float:
    return max(float((rows * final_scale).norm(dim=1).max())
               for rows in _lm_rows(base, base.rows))


def _worst_text_logit(base, base_tokens, permutation, final_scale, schedule, groups,
                      rms) -> float:
    worst = float("-inf")
    for rows in _lm_rows(base, base_tokens):
        folded = (rows * final_scale)[:, permutation]
        worst = max(worst, out.worst_text_logit_on_machine(folded, schedule, groups, rms))
    return worst
