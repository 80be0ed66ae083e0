"""A checkpoint's own tensors, kept as the engine multiplies them.

    weights = read_weights("out/qwengpu")        # config.json + model.safetensors (or shards)
    weights.layers[3].mixer, weights.layers[3].mlp, weights.figures()

`read_weights` reads a Qwen3.5 text checkpoint (`Qwen3_5ForCausalLM`, `qwen3_5_text`, or the
multimodal form with a `text_config`), tensor by tensor, and keeps only what can change a
result: every nonzero weight, in CSR form where a matrix is mostly zero and dense where it
is not.  What it leaves out is provably zero work, decided from the weights alone:

- an MLP unit whose gate row, up row or down column is all zero adds exactly 0
  (silu(0) * up = 0, silu(gate) * 0 = 0, 0 * anything = 0);
- a Gated DeltaNet value head whose q, k, v or z rows, or out_proj columns, are all zero
  adds exactly 0 (a zero k never writes the state, which starts at zero; a zero q or v
  reads zero; silu(0) = 0 gates the output to zero);
- an attention head whose o_proj columns or value rows are all zero adds exactly 0;
- a mixer or MLP with no live head or unit is skipped whole (h + 0 = h).

Nothing here reads the HDL, the plan or the protocol: only config.json and the tensors.
Everything is computed in float32: a bfloat16 tensor is widened exactly, once where it is
sparse and in every product where it is dense (`Matrix.bf16`: half the bytes to read).
Problems with the directory, the files or the tensors are `CheckpointError`s naming the
file and the problem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from qwengpu.engine.gate_families import GateFamilies
from qwengpu.engine.kernels import twin_rows
from qwengpu.engine.matrix import Matrix
from qwengpu.errors import UserError

CONV_KERNEL = 4              # the causal conv's taps (Qwen3.5: the token and 3 before it)
SUPPORTED_DTYPES = {"float32", "bfloat16"}


class CheckpointError(UserError):
    """A directory that is not a Qwen3.5 checkpoint the engine can run, and why."""


@dataclass
class DeltaNetMixer:
    """The live value heads of a Gated DeltaNet layer (see `mixer_kernels.deltanet_columns`)."""

    value_heads: list[int]             # live value heads (checkpoint numbering)
    key_heads: list[int]               # the key heads they read
    key_of_value_head: np.ndarray      # per live value head: index into key_heads
    conv_channel: np.ndarray           # the q, k (key heads), v (value heads) channels read
    projection: Matrix                 # rows: those channels, z (value heads), b, a
    conv_weight: np.ndarray            # [4 taps (oldest first), conv_channel]
    neg_a: np.ndarray                  # -exp(A_log), per live value head
    dt_bias: np.ndarray
    norm_weight: np.ndarray
    key_head_dim: int
    value_head_dim: int
    out_proj: Matrix                   # [hidden, live value heads * value_head_dim]
    # The part of each value head's state that can ever be nonzero (`live_state`): its
    # rows are the key dims whose k channel is read, its columns the value dims whose v
    # channel is read; per head, padded to the layer's widest.
    state_rows: np.ndarray = field(init=False)          # [heads, rows]: key dims, ascending
    state_row_count: np.ndarray = field(init=False)     # [heads]
    state_columns: np.ndarray = field(init=False)       # [heads, columns]: value dims
    state_column_count: np.ndarray = field(init=False)  # [heads]

    def __post_init__(self):
        (self.state_rows, self.state_row_count, self.state_columns,
         self.state_column_count) = live_state(self)

    @property
    def conv_inputs(self) -> int:
        return self.conv_weight.shape[1]

    @property
    def state_shape(self) -> tuple[int, int, int]:
        """A row's DeltaNet memory in this layer: [heads, live key dims, live value dims]."""
        return (len(self.value_heads), self.state_rows.shape[1], self.state_columns.shape[1])


def live_state(mixer: DeltaNetMixer) -> tuple[np.ndarray, ...]:
    """Per live value head, the rows and columns of its state that can ever be nonzero.

    The state starts at zero and changes only by `decay * S` and `S + k (delta)^T`, where
    delta = (v - S^T k) * beta.  A key dim whose k channel is never read (its projection
    row is all zero) has k = 0 on every token, so its row is never written and stays 0; a
    value dim whose v channel is never read has v = 0 and, its column being 0, S^T k = 0
    there, so delta = 0 and the column stays 0.  Reading such a row or column with q adds
    terms that are exactly 0 to sums that start at +0 (which can never become -0), so
    leaving those rows and columns out of the state changes no bit of any result
    (`mixer_kernels.deltanet_columns`)."""
    heads, dk, dv = len(mixer.value_heads), mixer.key_head_dim, mixer.value_head_dim
    key_channels = len(mixer.key_heads) * dk
    read = set(mixer.conv_channel.tolist())
    rows, columns = [], []
    for head in range(heads):
        key_base = key_channels + int(mixer.key_of_value_head[head]) * dk
        value_base = 2 * key_channels + head * dv
        rows.append([i for i in range(dk) if key_base + i in read])
        columns.append([j for j in range(dv) if value_base + j in read])

    def padded(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        width = max(1, max(len(entries) for entries in lists))
        table = np.zeros((heads, width), dtype=np.int64)
        for head, entries in enumerate(lists):
            table[head, :len(entries)] = entries
        return table, np.array([len(entries) for entries in lists], dtype=np.int64)

    return padded(rows) + padded(columns)


@dataclass
class AttentionMixer:
    """The live query heads of a full-attention layer (see `mixer_kernels.attention_columns`)."""

    query_heads: list[int]
    kv_heads: list[int]
    kv_of_head: np.ndarray             # per live query head: index into kv_heads
    projection: Matrix                 # query+gate per live head, then keys, then values
    q_scale: np.ndarray                # 1 + q_norm.weight
    k_scale: np.ndarray
    head_dim: int
    out_proj: Matrix                   # [hidden, live query heads * head_dim]


@dataclass
class Mlp:
    units: list[int]                   # live units (checkpoint numbering)
    gate: Matrix                       # [live units, hidden]
    up: Matrix                         # [live units, hidden]
    down_by_unit: Matrix               # down_proj's live columns, transposed: [units, hidden]
    # gate_twins[u]: unit u + 1's gate row has unit u's columns (kernels.twin_rows; none
    # where gate is dense)
    gate_twins: np.ndarray = field(init=False)
    # the units whose gate rows read the same inputs, taken as small dense products (none
    # where gate is dense)
    families: GateFamilies = field(init=False)
    # a CSR gate whose every weight is finite: a gate term on an input that is 0 adds ±0,
    # and `kernels.mlp_add` leaves such terms out (False where gate is dense: no mlp_add)
    gate_finite: bool = field(init=False)

    def __post_init__(self):
        self.gate_finite = bool(self.gate.stored is None
                                and np.isfinite(self.gate.data).all())
        if self.gate.stored is None:
            self.gate_twins = twin_rows(self.gate.indptr, self.gate.indices)
            self.families = GateFamilies.of(self.gate.indptr, self.gate.indices,
                                            self.gate.data)
        else:
            self.gate_twins = np.zeros(self.gate.rows, dtype=np.bool_)
            self.families = GateFamilies.none(self.gate.rows)


@dataclass
class Layer:
    kind: str                          # "linear_attention" or "full_attention"
    input_scale: np.ndarray            # 1 + input_layernorm.weight
    post_scale: np.ndarray             # 1 + post_attention_layernorm.weight
    mixer: DeltaNetMixer | AttentionMixer | None
    mlp: Mlp | None


@dataclass
class Weights:
    directory: Path
    hidden_size: int
    vocab_size: int
    eps: float
    embed: Matrix                      # [vocab, hidden]
    layers: list[Layer]
    final_scale: np.ndarray
    lm_head: Matrix                    # [vocab, hidden]
    rope_theta: float
    rotary_dims: int
    eos_token_id: int | list[int] | None
    dtype: str
    parameters: int = 0
    kept: dict = field(default_factory=dict)

    def figures(self) -> dict:
        """What was read and what is kept: parameters, nonzeros, live heads and units, and
        the gate families (their panels are kept beside the CSR rows, which one column
        reads)."""
        matrices = [self.embed, self.lm_head]
        mlps = [layer.mlp for layer in self.layers if layer.mlp is not None]
        for layer in self.layers:
            if layer.mixer is not None:
                matrices += [layer.mixer.projection, layer.mixer.out_proj]
            if layer.mlp is not None:
                matrices += [layer.mlp.gate, layer.mlp.up, layer.mlp.down_by_unit]
        return {"parameters": self.parameters,
                "kept_nonzeros": sum(m.nonzeros for m in matrices),
                "kept_bytes": sum(m.nbytes for m in matrices),
                "deltanet_heads": sum(len(layer.mixer.value_heads) for layer in self.layers
                                      if isinstance(layer.mixer, DeltaNetMixer)),
                "attention_heads": sum(len(layer.mixer.query_heads) for layer in self.layers
                                       if isinstance(layer.mixer, AttentionMixer)),
                "mlp_units": sum(len(layer.mlp.units) for layer in self.layers if layer.mlp),
                "gate_families": sum(mlp.families.table.shape[0] for mlp in mlps),
                "family_units": int(sum(mlp.families.in_family.sum() for mlp in mlps)),
                "family_bytes": sum(mlp.families.weights.nbytes for mlp in mlps)}


class _Tensors:
    """The checkpoint's tensors by name, over one file or an index of shards."""

    def __init__(self, directory: Path, prefix: str):
        self.directory, self.prefix = directory, prefix
        index = directory / "model.safetensors.index.json"
        if index.is_file():
            weight_map = _read_json(index).get("weight_map")
            if not isinstance(weight_map, dict):
                raise CheckpointError(f"{index}: no weight_map")
            self.where = dict(weight_map)
        elif (directory / "model.safetensors").is_file():
            self.where = None
        else:
            raise CheckpointError(f"{directory}: no model.safetensors (or "
                                  "model.safetensors.index.json)")
        self.names: dict[str, str] = {}           # tensor name -> its file
        for name in sorted(set(self.where.values())) if self.where else ["model.safetensors"]:
            with self._open(name) as handle:
                self.names.update(dict.fromkeys(handle.keys(), name))
        self.parameters = 0

    def _open(self, file: str):
        """A shard, opened anew for each read: its memory map (and the pages it touched)
        goes when the read is done, so the peak is one tensor, not the checkpoint."""
        from safetensors import safe_open

        path = self.directory / file
        if not path.is_file():
            raise CheckpointError(f"{path}: missing (the shard index names it)")
        try:
            return safe_open(str(path), framework="pt")
        except Exception as error:                # safetensors' own error types vary
            raise CheckpointError(f"{path}: not a readable safetensors file ({error}); "
                                  "truncated or damaged?") from None

    def get(self, name: str, shape: tuple[int, ...], prefixed: bool = True) -> torch.Tensor:
        """The tensor `name` (after the decoder's prefix unless not `prefixed`), widened
        to float32, once its shape and dtype are checked."""
        full = self.prefix + name if prefixed else name
        if full not in self.names:
            raise CheckpointError(f"{self.directory}: the tensor {full} is missing")
        file = self.names[full]
        try:
            with self._open(file) as handle:
                tensor = handle.get_tensor(full)
        except CheckpointError:
            raise
        except Exception as error:
            raise CheckpointError(f"{self.directory / file}: cannot read {full} ({error}); "
                                  "truncated or damaged?") from None
        if tuple(tensor.shape) != tuple(shape):
            raise CheckpointError(f"{self.directory / file}: {full} has shape "
                                  f"{tuple(tensor.shape)}, config.json implies {tuple(shape)}")
        if tensor.dtype not in (torch.float32, torch.bfloat16):
            raise CheckpointError(f"{self.directory / file}: {full} is {tensor.dtype}; the "
                                  "engine reads float32 and bfloat16 checkpoints")
        self.parameters += tensor.numel()
        return tensor.to(torch.float32)


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: not readable JSON ({error})") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: not a JSON object")
    return data


def read_config(directory: str | Path) -> tuple[dict, str]:
    """The text config of a checkpoint directory and the prefix of its decoder's tensors;
    a `CheckpointError` for anything the engine does not run."""
    path = Path(directory)
    if not path.is_dir():
        raise CheckpointError(f"{directory}: no such checkpoint directory")
    config_path = path / "config.json"
    if not config_path.is_file():
        raise CheckpointError(f"{directory}: no config.json, not a checkpoint (hdlc compile "
                              "writes one)")
    config = _read_json(config_path)
    prefix = "model."
    if config.get("model_type") == "qwen3_5" and isinstance(config.get("text_config"), dict):
        config, prefix = config["text_config"], "model.language_model."
    if config.get("model_type") != "qwen3_5_text":
        raise CheckpointError(f"{config_path}: model_type {config.get('model_type')!r}; the "
                              "engine runs Qwen3.5 checkpoints (qwen3_5_text, or qwen3_5 with "
                              "a text_config)")
    _check_supported(config, config_path)
    return config, prefix


def _check_supported(config: dict, where: Path) -> None:
    def refuse(what: str) -> None:
        raise CheckpointError(f"{where}: {what} is not implemented by the engine (run it with "
                              "--engine transformers)")

    needed = ["hidden_size", "intermediate_size", "num_hidden_layers", "vocab_size",
              "layer_types"]
    missing = [key for key in needed if key not in config]
    if missing:
        raise CheckpointError(f"{where}: {', '.join(missing)} missing")
    for key in needed[:4]:
        if not isinstance(config[key], int) or isinstance(config[key], bool) \
                or config[key] < 1:
            raise CheckpointError(f"{where}: {key} is {config[key]!r}, not a positive integer")
    if not isinstance(config["layer_types"], list):
        raise CheckpointError(f"{where}: layer_types is not a list")
    if config.get("hidden_act", "silu") != "silu":
        refuse(f"hidden_act {config['hidden_act']!r}")
    if config.get("attention_bias", False):
        refuse("attention_bias")
    if config.get("linear_conv_kernel_dim", CONV_KERNEL) != CONV_KERNEL:
        refuse(f"linear_conv_kernel_dim {config['linear_conv_kernel_dim']}")
    rope = config.get("rope_parameters") or {}
    if rope.get("rope_type", "default") != "default":
        refuse(f"rope_type {rope['rope_type']!r}")
    if config.get("dtype", "float32") not in SUPPORTED_DTYPES:
        refuse(f"dtype {config['dtype']!r}")
    types = config["layer_types"]
    if len(types) != config["num_hidden_layers"]:
        raise CheckpointError(f"{where}: {len(types)} layer_types for "
                              f"{config['num_hidden_layers']} layers")
    unknown = sorted(set(types) - {"linear_attention", "full_attention"})
    if unknown:
        refuse(f"layer type {unknown[0]!r}")


def read_weights(directory: str | Path) -> Weights:
    """The checkpoint at `directory` as the engine multiplies it (see the module doc)."""
    config, prefix = read_config(directory)
    path = Path(directory)
    tensors = _Tensors(path, prefix)
    hidden, vocab = config["hidden_size"], config["vocab_size"]
    eps = float(config.get("rms_norm_eps", 1e-6))
    embed = tensors.get("embed_tokens.weight", (vocab, hidden))
    embed_matrix = Matrix.table(embed)
    if config.get("tie_word_embeddings", False) and "lm_head.weight" not in tensors.names:
        lm_head = embed_matrix
    else:
        lm_head = Matrix.table(tensors.get("lm_head.weight", (vocab, hidden), prefixed=False))
    del embed
    layers = [_read_layer(tensors, config, index, hidden, eps)
              for index in range(config["num_hidden_layers"])]
    final_scale = _scale(tensors.get("norm.weight", (hidden,)))
    rope = config.get("rope_parameters") or {}
    head_dim = config.get("head_dim") or hidden // config.get("num_attention_heads", 1)
    rotary = int(head_dim * rope.get("partial_rotary_factor", 1.0))
    return Weights(path, hidden, vocab, eps, embed_matrix, layers, final_scale, lm_head,
                   float(rope.get("rope_theta", 10000.0)), rotary, config.get("eos_token_id"),
                   config.get("dtype", "float32"), tensors.parameters)


def _scale(weight: torch.Tensor) -> np.ndarray:
    """A zero-centred RMSNorm weight as the factor it multiplies by (1.0 + w, in float32)."""
    return (1.0 + weight.float()).numpy().copy()


def _any_rows(tensor: torch.Tensor, groups: int) -> list[bool]:
    """Per group of consecutive rows: whether any weight in it is nonzero."""
    return tensor.reshape(groups, -1).ne(0).any(dim=1).tolist()


def _read_layer(tensors: _Tensors, config: dict, index: int, hidden: int, eps: float) -> Layer:
    name = f"layers.{index}."
    kind = config["layer_types"][index]
    input_scale = _scale(tensors.get(name + "input_layernorm.weight", (hidden,)))
    post_scale = _scale(tensors.get(name + "post_attention_layernorm.weight", (hidden,)))
    if kind == "linear_attention":
        mixer = _read_deltanet(tensors, config, name + "linear_attn.", hidden)
    else:
        mixer = _read_attention(tensors, config, name + "self_attn.", hidden)
    mlp = _read_mlp(tensors, config, name + "mlp.", hidden)
    return Layer(kind, input_scale, post_scale, mixer, mlp)


def _read_mlp(tensors: _Tensors, config: dict, name: str, hidden: int) -> Mlp | None:
    inner = config["intermediate_size"]
    gate = tensors.get(name + "gate_proj.weight", (inner, hidden))
    up = tensors.get(name + "up_proj.weight", (inner, hidden))
    down = tensors.get(name + "down_proj.weight", (hidden, inner))
    live = (gate.ne(0).any(dim=1) & up.ne(0).any(dim=1) & down.ne(0).any(dim=0))
    units = live.nonzero().flatten()
    if units.numel() == 0:
        return None
    return Mlp(units.tolist(), Matrix.of(gate[units]), Matrix.of(up[units]),
               Matrix.of(down[:, units].t(), transposed_products=True))


def _read_deltanet(tensors: _Tensors, config: dict, name: str, hidden: int
                   ) -> DeltaNetMixer | None:
    key_heads = config.get("linear_num_key_heads", 16)
    value_heads = config.get("linear_num_value_heads", 16)
    dk = config.get("linear_key_head_dim", 128)
    dv = config.get("linear_value_head_dim", 128)
    if value_heads % key_heads:
        raise CheckpointError(f"{tensors.directory}: linear_num_value_heads {value_heads} is "
                              f"not a multiple of linear_num_key_heads {key_heads}")
    key_dim, value_dim = key_heads * dk, value_heads * dv
    conv_dim = 2 * key_dim + value_dim
    qkv = tensors.get(name + "in_proj_qkv.weight", (conv_dim, hidden))
    z = tensors.get(name + "in_proj_z.weight", (value_dim, hidden))
    b = tensors.get(name + "in_proj_b.weight", (value_heads, hidden))
    a = tensors.get(name + "in_proj_a.weight", (value_heads, hidden))
    conv = tensors.get(name + "conv1d.weight", (conv_dim, 1, CONV_KERNEL)).reshape(conv_dim,
                                                                                   CONV_KERNEL)
    a_log = tensors.get(name + "A_log", (value_heads,))
    dt_bias = tensors.get(name + "dt_bias", (value_heads,))
    norm = tensors.get(name + "norm.weight", (dv,))
    out = tensors.get(name + "out_proj.weight", (hidden, value_dim))
    q_live = _any_rows(qkv[:key_dim], key_heads)
    k_live = _any_rows(qkv[key_dim:2 * key_dim], key_heads)
    v_live = _any_rows(qkv[2 * key_dim:], value_heads)
    z_live = _any_rows(z, value_heads)
    out_live = _any_rows(out.t(), value_heads)
    per_key = value_heads // key_heads
    live = [h for h in range(value_heads)
            if q_live[h // per_key] and k_live[h // per_key] and v_live[h] and z_live[h]
            and out_live[h] and bool(norm.ne(0).any())]
    if not live:
        return None
    keys = sorted({h // per_key for h in live})
    rows = ([k * dk + i for k in keys for i in range(dk)]
            + [key_dim + k * dk + i for k in keys for i in range(dk)]
            + [2 * key_dim + h * dv + i for h in live for i in range(dv)])
    value_rows = [h * dv + i for h in live for i in range(dv)]
    # a channel whose projection row is all zero reads 0 on every token: conv and SiLU of
    # zeros are exactly 0, so only the others are computed
    read = qkv[rows].ne(0).any(dim=1).nonzero().flatten()
    channels = [rows[i] for i in read.tolist()]
    projection = torch.cat([qkv[channels], z[value_rows], b[live], a[live]])
    neg_a = (-a_log.float().exp())[live]           # as transformers: -A_log.float().exp()
    return DeltaNetMixer(live, keys, np.array([keys.index(h // per_key) for h in live],
                                               dtype=np.int64), read.numpy().astype(np.int64),
                         Matrix.of(projection), conv[channels].t().contiguous().numpy(),
                         neg_a.numpy().copy(), dt_bias[live].numpy().copy(),
                         norm.numpy().copy(), dk, dv, Matrix.of(out[:, value_rows]))


def _read_attention(tensors: _Tensors, config: dict, name: str, hidden: int
                    ) -> AttentionMixer | None:
    heads = config.get("num_attention_heads", 8)
    kv_heads = config.get("num_key_value_heads", 2)
    head_dim = config.get("head_dim") or hidden // heads
    if heads % kv_heads:
        raise CheckpointError(f"{tensors.directory}: num_attention_heads {heads} is not a "
                              f"multiple of num_key_value_heads {kv_heads}")
    q = tensors.get(name + "q_proj.weight", (2 * heads * head_dim, hidden))
    k = tensors.get(name + "k_proj.weight", (kv_heads * head_dim, hidden))
    v = tensors.get(name + "v_proj.weight", (kv_heads * head_dim, hidden))
    o = tensors.get(name + "o_proj.weight", (hidden, heads * head_dim))
    q_norm = tensors.get(name + "q_norm.weight", (head_dim,))
    k_norm = tensors.get(name + "k_norm.weight", (head_dim,))
    group = heads // kv_heads
    v_live = _any_rows(v, kv_heads)
    o_live = _any_rows(o.t(), heads)
    live = [h for h in range(heads) if o_live[h] and v_live[h // group]]
    if not live:
        return None
    kvs = sorted({h // group for h in live})
    rows = ([h * 2 * head_dim + i for h in live for i in range(2 * head_dim)])
    key_rows = [kv * head_dim + i for kv in kvs for i in range(head_dim)]
    projection = torch.cat([q[rows], k[key_rows], v[key_rows]])
    out_columns = [h * head_dim + i for h in live for i in range(head_dim)]
    return AttentionMixer(live, kvs, np.array([kvs.index(h // group) for h in live],
                                               dtype=np.int64),
                          Matrix.of(projection), _scale(q_norm), _scale(k_norm), head_dim,
                          Matrix.of(o[:, out_columns]))


def rotary_tables(theta: float, rotary_dims: int, positions: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [positions, rotary_dims] as Qwen3_5TextRotaryEmbedding computes them."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dims, 2, dtype=torch.float)
                                / rotary_dims))
    freqs = torch.arange(positions, dtype=torch.float)[:, None] * inv_freq
    angles = torch.cat((freqs, freqs), dim=-1)
    return angles.cos().numpy().copy(), angles.sin().numpy().copy()

