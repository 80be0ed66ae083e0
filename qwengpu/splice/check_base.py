"""`hdlc splice --check-base BASE`: whether a base can be spliced, without writing weights.

    check = check_base("specs/qwengpu.hdl", "Qwen3.5-2B")
    check.spliceable, check.error, check.text()

These are the first steps of `pipeline.splice` too, which raises the check's `error`: they
decide whether a splice can succeed, and none of them produces weights:

| step | what it decides |
|---|---|
| base | the directory is a Qwen3.5 checkpoint of a shape the machine is compiled for |
| schedule | the machine's residual dims for the base's shape (the compile up to its schedule), so the dims left free for the text gate |
| tokenizer | the machine's tokens go into the base's BPE vocabulary (written to a scratch folder) |
| gate | the text gate on the free dims (`gate.find_text_gate`): its margin and dims, or the reason none exists and how many text tokens stand on the wrong side |

What it leaves to the splice itself is the scale (a bound over the base's layers' weights)
and the machine's rows against the base's `lm_head`, which are fixed by choosing SCALE and
`--margin`; the splice refuses those with a message naming the `--margin` to use.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from qwengpu.backend_torch.target import Target
from qwengpu.errors import UserError
from qwengpu.splice.base import Base, read_base
from qwengpu.splice.gate import TextGate, find_text_gate
from qwengpu.splice.vocab import Placement, extend_tokenizer, place_machine_tokens, \
    read_tokenizer_json, tokenizer_extent


@dataclass
class BaseCheck:
    base: Base
    target: Target | None = None       # the shape the machine is compiled for
    lines: list[str] = field(default_factory=list)
    planned: object = None             # the compile up to its schedule
    base_tokens: int = 0               # ids below this are the base's text tokens
    placement: Placement | None = None
    gate: TextGate | None = None
    error: UserError | None = None     # why the base cannot be spliced; None when it can

    @property
    def spliceable(self) -> bool:
        return self.error is None

    def text(self) -> str:
        verdict = ("result: can be spliced (hdlc splice --base BASE -o OUT_DIR)"
                   if self.spliceable else "result: cannot be spliced")
        return "\n".join(self.lines + [verdict]) + "\n"


def base_target(base: Base) -> Target:
    """The shape the machine is compiled for: the base's, 45 layers, full attention every
    fourth as in Qwen3.5, the narrowest residual the schedule finds (the rest is the text
    gate's)."""
    text = base.text
    where = f"{base.directory / 'config.json'}"

    def size(key: str, default: int | None = None) -> int:
        value = text.get(key, default)
        if value is None:
            raise UserError(f"{where}: the text config has no {key}")
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise UserError(f"{where}: {key} is {value!r}, not a positive integer")
        return value

    key_heads, value_heads = size("linear_num_key_heads"), size("linear_num_value_heads")
    if key_heads != value_heads:
        raise UserError(f"{where}: linear_num_key_heads {key_heads} and linear_num_value_heads "
                        f"{value_heads} differ; the compiled DeltaNet layers need as many key "
                        "heads as value heads")
    if size("linear_conv_kernel_dim", 4) != 4:
        raise UserError(f"{where}: linear_conv_kernel_dim {text['linear_conv_kernel_dim']}; "
                        "the compiled DeltaNet layers need a convolution of 4 taps")
    try:
        eps = float(text.get("rms_norm_eps", 1e-6))
    except (TypeError, ValueError):
        eps = -1.0
    if not eps > 0:
        raise UserError(f"{where}: rms_norm_eps {text.get('rms_norm_eps')!r} is not a positive "
                        "number")
    return Target(name=f"base {base.directory.name}", hidden_size=size("hidden_size"),
                  intermediate_size=size("intermediate_size"), linear_heads=value_heads,
                  key_head_dim=size("linear_key_head_dim"),
                  value_head_dim=size("linear_value_head_dim"),
                  attention_heads=size("num_attention_heads"),
                  kv_heads=size("num_key_value_heads"), head_dim=size("head_dim", 256),
                  rms_norm_eps=eps, full_every=4, narrowest=True)


def check_base(spec: str, base_dir: str | Path, *, params: dict[str, int] | None = None,
               progress: Callable[[str], None] | None = None) -> BaseCheck:
    """The steps of a splice of `spec` into `base_dir` up to the text gate.  A directory that
    is not a Qwen3.5 checkpoint raises its `UserError`; a checkpoint that cannot be spliced
    is a `BaseCheck` whose `error` says why (the splice raises it)."""
    from qwengpu.compiler import compile

    say = progress or (lambda _message: None)
    base = read_base(base_dir)
    check = BaseCheck(base, base_target(base))
    hidden = check.target.hidden_size
    dtype = str(base.dtype).removeprefix("torch.")
    check.lines.append(
        f"base: {base_dir} ({'multimodal' if base.multimodal else 'text'} form, "
        f"{'tied' if base.tied else 'untied'} embeddings, {base.num_layers} layers, hidden "
        f"{hidden}, {dtype})")
    say(check.lines[-1])
    try:
        # the machine's schedule for the base's shape (it does not depend on eps)
        check.planned = compile(spec, check.target, params=params, stop_after="schedule",
                                progress=say)
        used = check.planned.schedule.dims
        free = hidden - used
        check.lines.append(f"residual: the machine uses {used} of {hidden} dims; {free} are "
                           "left for the text gate")
        if free <= 0:
            raise UserError(f"the machine uses all {hidden} residual dims of the base; the "
                            "text gate needs at least one free dim")

        check.base_tokens = tokenizer_extent(read_tokenizer_json(base.directory)[1])
        check.placement = place = place_machine_tokens(base.rows, check.base_tokens,
                                                       check.planned.protocol.vocab_size)
        with tempfile.TemporaryDirectory() as scratch:
            extend_tokenizer(base.directory, check.planned.protocol.texts, place.offset,
                             Path(scratch))
        check.lines.append(f"tokenizer: {place.count} machine tokens at ids {place.offset}.."
                           f"{place.offset + place.count - 1} ({place.vocab_size} rows)")

        say(f"gate: {check.base_tokens} text tokens on {free} free dims")
        text_rows = base.tensor(base.embedding_name)[:check.base_tokens].float()
        try:
            check.gate = gate = find_text_gate(text_rows, free, check.target.rms_norm_eps)
        except UserError as error:
            raise UserError(f"{error}{fewer_lanes_hint(check.planned.design)}") from None
    except UserError as error:
        check.error = error
        return check
    check.lines.append(f"text gate: margin {gate.margin:.4g} on {len(gate.dims)} of the {free} "
                       f"free dims (min over {gate.tokens} text tokens of -u.n(e), found by "
                       f"the {gate.method}); no text token on the wrong side")
    return check


def fewer_lanes_hint(design) -> str:
    """Where the machine has lanes to spare: a machine of fewer lanes leaves the text gate
    more dims (docs/splice.md, "Gate dims from the machine's size")."""
    lanes = getattr(design, "params", {}).get("LANES", 1)
    if lanes <= 1:
        return ""
    return (f". A machine of fewer lanes leaves the gate more dims, which may be enough: "
            f"try -P LANES={lanes // 2} (on Qwen3.5-2B's width 2 lanes leave 175 dims to "
            "4 lanes' 52; docs/splice.md, \"Gate dims from the machine's size\")")
