"""Full attention: a gadget that copies fields from the most recent token of a given kind.

Stock transformers needs at least one `full_attention` layer to use a cache; in the blank
model such a layer adds exactly 0 (zero `o_proj`).  This module makes one of its heads useful:
`CopyFromKind` writes into output groups the value groups of the most recent earlier (or
current) token on which a condition holds (e.g. "the token is of kind `w`").  The same job is
done exactly in any dtype by a one-slot DeltaNet memory (`memory.latch`); the attention
version costs no DeltaNet head, but its recency needs fp32 (see below).

How a head is driven (`Qwen3_5Attention`: q/k RMS-normalised per head with zero-centred
weights shared by all heads, rotary on the first quarter of the head dims, output times
`sigmoid(gate)`):

- **target score.**  A key is `e_T` on target tokens and `e_N` elsewhere (never zero, so its
  RMSNorm is defined); the query is `e_T`.  After the norms, the score of a target is `S` and
  of any other token exactly 0.  The q/k norm weights at these dims set `S`.
- **recency.**  The key of a target also has `(b, 0)` in one rotary pair of frequency `w`,
  the query `(0, a)` there; after rotary the pair adds `-P sin(w * distance)`, which falls
  with the distance for `w * distance < pi / 2`.  The pair (the frequency) is the fastest
  whose `w * max_distance <= 1`; `P` makes neighbouring targets `RECENCY_GAP` apart in score,
  `S` keeps every target `TARGET_GAP` above the others.  Scores reach ~1e5, so this needs an
  fp32 checkpoint; `recency=False` (a single target in context, e.g. a launch header field)
  works in bf16 too.
- **value.**  `v` holds the value groups (exact one-hot entries); the gate is driven to
  `sigmoid(gate) == 1`; `o_proj` writes the output groups.

Tokens before the first target attend to nothing in particular, so the `<launch>` tokens
should be targets too (they then give the default value).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

from qwengpu.backend_torch.gadgets.core import Form, const
from qwengpu.backend_torch.gadgets.memory import MixerCost, When, flatten_groups
from qwengpu.backend_torch.residual import Live

FULL_ATTENTION = "full_attention"
RECENCY_GAP = 20.0      # score between a target and the next older target
TARGET_GAP = 30.0       # score between the farthest target and any non-target
GATE_DRIVE = 40.0       # sigmoid(40) == 1 in fp32 and bf16
INPUT_DRIVE = 64.0      # size of q/k before their RMSNorm (makes its eps negligible)


@dataclass(frozen=True)
class AttentionPlan:
    """Where a copy head puts its parts inside the head, and its norm weights."""

    target_dim: int
    other_dim: int
    pair: tuple[int, int] | None        # (key dim, query dim) of the rotary pair
    frequency: float                    # radians per token of that pair
    target_scale: float                 # (1 + w) at target_dim, q and k
    pair_scale: float                   # (1 + w) at the pair dims, q and k
    score: float                        # S
    recency: float                      # P


def plan(config, max_distance: int, recency: bool) -> AttentionPlan:
    """Dims, frequency and scales of a copy head for `config` (see the module doc)."""
    head_dim = config.head_dim
    rotary = int(head_dim * config.rope_parameters.get("partial_rotary_factor", 1.0))
    theta = config.rope_parameters["rope_theta"]
    target_dim, other_dim = head_dim - 1, head_dim - 2
    if not recency:
        score = 2 * TARGET_GAP      # a lone query dim against a lone key dim: sqrt(hd) w^2
        scale = math.sqrt(score / math.sqrt(head_dim))
        return AttentionPlan(target_dim, other_dim, None, 0.0, scale, 0.0, score, 0.0)
    frequencies = [theta ** (-2 * m / rotary) for m in range(rotary // 2)]
    usable = [(f, m) for m, f in enumerate(frequencies) if f * max_distance <= 1.0]
    if not usable:
        raise ValueError(f"no rotary frequency is slow enough for {max_distance} tokens")
    frequency, index = max(usable)
    angle = frequency * max_distance
    recency_amp = RECENCY_GAP / (frequency * math.cos(angle))
    score = recency_amp * math.sin(angle) + TARGET_GAP
    # A target key is (c, c) at (target_dim, pair) before its norm: each half of the head's
    # square norm; the query likewise.  score = q.k / sqrt(head_dim).
    half = head_dim / 2
    target_scale = math.sqrt(score * math.sqrt(head_dim) / half)
    pair_scale = math.sqrt(recency_amp * math.sqrt(head_dim) / half)
    return AttentionPlan(target_dim, other_dim, (index, index + rotary // 2), frequency,
                         target_scale, pair_scale, score, recency_amp)


class CopyFromKind:
    """Copy `value` groups from the most recent token where `target` holds (module doc)."""

    def __init__(self, name: str, target: When, value: Sequence[Live], *,
                 recency: bool = True, max_distance: int = 4096):
        self.name, self.target, self.recency = name, target, recency
        self.max_distance = max_distance
        self.parts = flatten_groups(value)

    def cost(self) -> MixerCost:
        return MixerCost(self.name, FULL_ATTENTION, 1, sum(g.size for g, _ in self.parts))

    def install(self, model, layer: int, head: int, rms: float, outputs: Sequence[Live]
                ) -> MixerCost:
        """Add the copy into query head `head` (and its KV head) of full-attention `layer`."""
        decoder = model.model.layers[layer]
        if not hasattr(decoder, "self_attn"):
            raise ValueError(f"layer {layer} is not a full_attention layer")
        attn, config = decoder.self_attn, model.config
        if self.recency and attn.q_proj.weight.dtype != torch.float32:
            raise ValueError("recency needs fp32 scores; use recency=False in bf16")
        out_groups = [g for g, _ in flatten_groups(outputs)]
        if [g.size for g in out_groups] != [g.size for g, _ in self.parts]:
            raise ValueError(f"{self.name}: outputs do not match the value groups")
        p = plan(config, self.max_distance, self.recency)
        head_dim = attn.head_dim
        value_dims = sum(g.size for g, _ in self.parts)
        if value_dims > head_dim:
            raise ValueError(f"{self.name}: {value_dims} value dims > head_dim {head_dim}")
        kv_head = head // attn.num_key_value_groups
        q_rows = slice(head * 2 * head_dim, head * 2 * head_dim + head_dim)
        gate_rows = slice(q_rows.stop, q_rows.stop + head_dim)
        kv_rows = slice(kv_head * head_dim, (kv_head + 1) * head_dim)
        for weight, rows in ((attn.q_proj.weight, q_rows), (attn.q_proj.weight, gate_rows),
                             (attn.k_proj.weight, kv_rows), (attn.v_proj.weight, kv_rows)):
            if weight[rows].any():
                raise ValueError(f"{self.name}: head {head} (KV head {kv_head}) is in use")

        target = self.target.form()
        rows = {  # (weight, row) -> form on h
            (attn.q_proj.weight, q_rows.start + p.target_dim): const(INPUT_DRIVE),
            (attn.k_proj.weight, kv_rows.start + p.target_dim): target * INPUT_DRIVE,
            (attn.k_proj.weight, kv_rows.start + p.other_dim):
                const(INPUT_DRIVE) - target * INPUT_DRIVE,
        }
        if p.pair is not None:
            key_dim, query_dim = p.pair
            rows[(attn.q_proj.weight, q_rows.start + query_dim)] = const(INPUT_DRIVE)
            rows[(attn.k_proj.weight, kv_rows.start + key_dim)] = target * INPUT_DRIVE
        offset = 0
        for (group, _), out in zip(self.parts, out_groups):
            for entry in range(group.size):
                rows[(attn.v_proj.weight, kv_rows.start + offset + entry)] = \
                    Form({group.dim(entry): 1.0 / group.scale})
                rows[(attn.q_proj.weight, gate_rows.start + offset + entry)] = \
                    const(GATE_DRIVE)
            offset += group.size
        with torch.no_grad():
            for (weight, row), form in rows.items():
                for dim, coef in form.items():
                    weight[row, dim] = coef * rms
            offset = 0
            for (group, _), out in zip(self.parts, out_groups):
                for entry in range(group.size):
                    attn.o_proj.weight[out.dim(entry), head * head_dim + offset + entry] = \
                        out.scale
                offset += group.size
            scales = {p.target_dim: p.target_scale, p.other_dim: 1.0}
            if p.pair is not None:
                scales.update({p.pair[0]: p.pair_scale, p.pair[1]: p.pair_scale})
            for norm in (attn.q_norm, attn.k_norm):
                for dim, scale in scales.items():
                    current = float(norm.weight[dim])
                    if current not in (0.0, scale - 1.0):
                        raise ValueError(f"{self.name}: q/k norm weight {dim} already set")
                    norm.weight[dim] = scale - 1.0
        return self.cost()


def attention_is_noop(model, layer: int) -> bool:
    """Whether full-attention `layer` adds exactly 0 (its `o_proj` is zero)."""
    return not model.model.layers[layer].self_attn.o_proj.weight.any()

