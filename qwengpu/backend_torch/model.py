"""Build Qwen3.5 text models whose weights are fully deterministic, and run them both ways.

`make_config` writes a `Qwen3_5TextConfig` of any shape (tiny test models and the real
Qwen3.5-2B target alike).  `blank_model` builds a stock `Qwen3_5ForCausalLM` from it in which
every layer is an exact no-op on the residual stream: gadgets are then *added* into chosen
sublayers (see `qwengpu.backend_torch.gadgets`) and everything else stays inert.

What "blank" means, parameter by parameter (checked against transformers 5.24):

- embedding and `lm_head`: zero;
- every zero-centred `Qwen3_5RMSNorm` weight (layer input/post-attention norms, the final norm,
  attention q/k norms): 0, i.e. a scale of exactly 1;
- MLP `gate/up/down_proj`: zero, so the MLP adds exactly 0;
- full attention `q/k/v/o_proj`: zero (the output is multiplied by the zero `o_proj`);
- Gated DeltaNet: `in_proj_qkv/z/b/a` and `out_proj` zero; `A_log = -1e4`, so
  `exp(A_log) == 0` and the decay `exp(g)` is exactly 1; `dt_bias = 0`; the gated norm weight
  1 (that norm is not zero-centred); the depthwise `conv1d` taps are `[0, 0, 0, 1]`: the *last*
  tap multiplies the current token (`F.conv1d` with left padding `kernel - 1`), the first three
  the three previous tokens;
- the rotary `inv_freq` buffers are recomputed from the config (deterministic) and kept in
  float32 whatever the model dtype, as `from_pretrained` leaves them.

`prefill_logits` runs one forward over the whole sequence (the chunked DeltaNet path);
`decode_logits` feeds the tokens one at a time through a cache (the recurrent DeltaNet path and
`causal_conv1d_update`), after a prefix in one forward where asked.  Both return a
`ForwardResult` that can carry per-layer hidden states, so tests read residual dims directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy
import torch
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
from transformers.models.qwen3_5 import modeling_qwen3_5 as qwen

LINEAR = "linear_attention"
FULL = "full_attention"
DELTANET_A_LOG = -1e4      # exp(-1e4) == 0 in every float dtype: decay exactly 1
ROPE_THETA = 1e7           # Qwen3.5 value
PARTIAL_ROTARY_FACTOR = 0.25


def make_config(num_layers: int, hidden_size: int, intermediate_size: int,
                layer_types: Sequence[str], vocab_size: int, *,
                linear_num_key_heads: int = 16, linear_num_value_heads: int = 16,
                linear_key_head_dim: int = 128, linear_value_head_dim: int = 128,
                num_attention_heads: int = 8, num_key_value_heads: int = 2,
                head_dim: int = 256, rms_norm_eps: float = 1e-6,
                eos_token_id: int | None = None, dtype: str = "float32",
                max_position_embeddings: int = 32768) -> Qwen3_5TextConfig:
    """A Qwen3.5 text config of the given shape (untied embeddings, Qwen3.5 rope settings).

    `layer_types` lists `"linear_attention"` / `"full_attention"` per layer; stock
    transformers needs at least one full-attention layer to use a cache."""
    layer_types = list(layer_types)
    if len(layer_types) != num_layers:
        raise ValueError(f"{len(layer_types)} layer types for {num_layers} layers")
    unknown = sorted(set(layer_types) - {LINEAR, FULL})
    if unknown:
        raise ValueError(f"unknown layer types {unknown}")
    if FULL not in layer_types:
        raise ValueError("at least one full_attention layer is needed (transformers' cache)")
    return Qwen3_5TextConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        layer_types=layer_types,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads,
        head_dim=head_dim,
        linear_num_key_heads=linear_num_key_heads,
        linear_num_value_heads=linear_num_value_heads,
        linear_key_head_dim=linear_key_head_dim,
        linear_value_head_dim=linear_value_head_dim,
        linear_conv_kernel_dim=4,
        hidden_act="silu",
        rms_norm_eps=rms_norm_eps,
        max_position_embeddings=max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA,
                         "partial_rotary_factor": PARTIAL_ROTARY_FACTOR},
        tie_word_embeddings=False,
        eos_token_id=eos_token_id,
        dtype=dtype,
    )


def blank_model(config: Qwen3_5TextConfig, dtype: torch.dtype | str | None = None
                ) -> Qwen3_5ForCausalLM:
    """A `Qwen3_5ForCausalLM` whose every layer adds exactly 0 to the residual (see module doc).

    Built on the meta device and materialised as zeros without random initialisation, so no
    parameter or buffer keeps a random value (checked by `tests/backend_torch/test_model.py`).
    The zeros are pages the operating system maps on first write (`_zeros`): a 45-layer
    machine touches a few of its gigabytes, and neither clearing the rest nor holding it costs
    anything."""
    dtype = _torch_dtype(dtype if dtype is not None else getattr(config, "dtype", None))
    with torch.device("meta"):
        model = Qwen3_5ForCausalLM(config)
    _materialise_as_zeros(model)
    with torch.no_grad():
        for module in model.modules():
            _blank_module(module, config)
    model.to(dtype)
    # Like `from_pretrained`, keep the (non-persistent) rotary buffers in float32.
    _blank_module(model.model.rotary_emb, config)
    model.requires_grad_(False)
    model.eval()
    return model


def _zeros(shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
    """A tensor of zeros in memory from numpy's `calloc`: the operating system maps its pages
    on first write, so a page never written costs no time to clear and no memory, and reads
    as zero (the checkpoint writer and the nonzero count read through such pages fast)."""
    size = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
    return torch.from_numpy(numpy.zeros(size, numpy.uint8)).view(dtype).view(shape)


def _materialise_as_zeros(model: torch.nn.Module) -> None:
    """Every parameter and buffer of a model built on the meta device replaced by `_zeros`
    of its shape and dtype (a parameter shared by two modules stays shared)."""
    made: dict[int, torch.Tensor] = {}
    for module in model.modules():
        for kind in ("_parameters", "_buffers"):
            tensors = getattr(module, kind)
            for name, tensor in tensors.items():
                if tensor is None:
                    continue
                if id(tensor) not in made:
                    zeros = _zeros(tensor.shape, tensor.dtype)
                    if isinstance(tensor, torch.nn.Parameter):
                        zeros = torch.nn.Parameter(zeros, requires_grad=tensor.requires_grad)
                    made[id(tensor)] = zeros
                tensors[name] = made[id(tensor)]


def _blank_module(module: torch.nn.Module, config: Qwen3_5TextConfig) -> None:
    """The nonzero values of a blank module (everything else is `_materialise_as_zeros`'s):
    zero-centred norms, projections, embeddings and `dt_bias` stay 0."""
    if isinstance(module, qwen.Qwen3_5RMSNormGated):
        module.weight.fill_(1.0)
    elif isinstance(module, qwen.Qwen3_5GatedDeltaNet):
        module.A_log.fill_(DELTANET_A_LOG)
        module.conv1d.weight[..., -1] = 1.0          # the current token's tap
    elif isinstance(module, qwen.Qwen3_5TextRotaryEmbedding):
        inv_freq, scaling = module.compute_default_rope_parameters(config, device="cpu")
        module.inv_freq = inv_freq
        module.original_inv_freq = inv_freq.clone()
        module.attention_scaling = scaling


def _torch_dtype(dtype: torch.dtype | str | None) -> torch.dtype:
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    return getattr(torch, str(dtype).removeprefix("torch."))


def layer(model: Qwen3_5ForCausalLM, index: int) -> qwen.Qwen3_5DecoderLayer:
    """Decoder layer `index`; its sublayers are `.mlp`, `.linear_attn` or `.self_attn`."""
    return model.model.layers[index]


@dataclass
class ForwardResult:
    """Logits `[batch, seq, vocab]` and, when asked for, the residual stream.

    `hidden_states[0]` is the embedding output and `hidden_states[i + 1]` the residual after
    decoder layer `i` (before the final norm), each `[batch, seq, hidden]`."""

    logits: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None = None

    @property
    def final_residual(self) -> torch.Tensor:
        """The residual after the last layer (needs `hidden_states=True`)."""
        if self.hidden_states is None:
            raise ValueError("run with hidden_states=True to read the residual")
        return self.hidden_states[-1]


def _as_batch(ids: torch.Tensor | Sequence[int] | Sequence[Sequence[int]]) -> torch.Tensor:
    ids = torch.as_tensor(ids, dtype=torch.long)
    return ids.unsqueeze(0) if ids.dim() == 1 else ids


def _residual_stream(model: Qwen3_5ForCausalLM, ids: torch.Tensor, **kwargs):
    """Forward with hooks that record the residual after every decoder layer."""
    recorded: list[torch.Tensor] = []
    hooks = [model.model.embed_tokens.register_forward_hook(
        lambda _m, _i, out: recorded.append(out.detach()))]
    for decoder_layer in model.model.layers:
        hooks.append(decoder_layer.register_forward_hook(
            lambda _m, _i, out: recorded.append((out[0] if isinstance(out, tuple) else out)
                                                .detach())))
    try:
        out = model(input_ids=ids, **kwargs)
    finally:
        for hook in hooks:
            hook.remove()
    return out, tuple(recorded)


@torch.no_grad()
def prefill_logits(model: Qwen3_5ForCausalLM, ids, *, hidden_states: bool = False,
                   last_logits_only: bool = False) -> ForwardResult:
    """One forward over the whole sequence: the chunked Gated DeltaNet path.

    `last_logits_only` keeps the logits of the last position only (big vocabularies)."""
    ids = _as_batch(ids)
    keep = 1 if last_logits_only else 0
    if not hidden_states:
        return ForwardResult(model(input_ids=ids, use_cache=False, logits_to_keep=keep).logits)
    out, stream = _residual_stream(model, ids, use_cache=False, logits_to_keep=keep)
    return ForwardResult(out.logits, stream)


@torch.no_grad()
def decode_logits(model: Qwen3_5ForCausalLM, ids, *, hidden_states: bool = False,
                  last_logits_only: bool = False, prefix: int = 0) -> ForwardResult:
    """Token by token through a `DynamicCache`: the recurrent Gated DeltaNet path.

    The first token starts the cache, or with `prefix` the first `prefix` tokens in one
    forward (the chunked path, as `generate` prefills a prompt); every later token is a
    one-token forward with it.  `last_logits_only` keeps the logits of the last position
    only (big vocabularies)."""
    from transformers import DynamicCache

    ids = _as_batch(ids)
    cache = DynamicCache(config=model.config)
    logits, streams = [], []
    length = ids.shape[1]
    bounds = [0, *range(min(max(prefix, 1), length), length + 1)]
    for start, end in zip(bounds, bounds[1:]):
        step = ids[:, start:end]
        if hidden_states:
            out, stream = _residual_stream(model, step, cache=cache, use_cache=True)
            streams.append(stream)
        else:
            out = model(input_ids=step, cache=cache, use_cache=True)
        cache = out.cache
        if not last_logits_only:
            logits.append(out.logits)
        elif end == length:
            logits.append(out.logits[:, -1:])
    stream = None
    if hidden_states:
        stream = tuple(torch.cat(parts, dim=1) for parts in zip(*streams))
    return ForwardResult(torch.cat(logits, dim=1), stream)
