"""The sparse engine on any torch device (CUDA above all): the same weights, torch kernels.

    engine = TorchSparseEngine.load("out/qwengpu", "cuda")
    engine.generate([prompt], 5000, eos_id=4)          # as SparseEngine (same Session)

`SparseEngine` runs its kernels on the CPU; this class runs the same decoder on the same
`Weights` (what is kept and what is skipped is decided once, in `weights.py`) with torch
operations, so a GPU can run it: CSR matrices as `torch.sparse_csr_tensor` products, the
rest as batched tensor arithmetic in the order transformers' recurrent path takes it.  A
step's columns go through the matrices together; the conv, the delta rule and attention run
in waves, a wave holding at most one column of each row (a decode step is one wave, a
prompt chunk of one row is a wave per token).  Float32 throughout; on CUDA, TF32 is switched
off (it would round the gadgets' drive constants).  Tests hold it to stock transformers and
to `SparseEngine` on the CPU (tests/engine/test_torch_engine.py).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from qwengpu.engine.engine import SparseEngine
from qwengpu.engine.weights import AttentionMixer, DeltaNetMixer, Matrix, Weights, \
    read_weights


def _tensor(array: np.ndarray, device) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array)).to(device)


class _Product:
    """A `Matrix` on the device: `product(x)` = matrix @ x for x [columns, n]."""

    def __init__(self, matrix: Matrix, device, transpose: bool = False):
        if matrix.dense is not None:
            dense = torch.from_numpy(matrix.dense)
            self.weight = (dense.t() if transpose else dense).contiguous().to(device)
            self.sparse = False
            return
        with warnings.catch_warnings():      # "sparse CSR support is in beta": known
            warnings.simplefilter("ignore", UserWarning)
            csr = torch.sparse_csr_tensor(torch.from_numpy(matrix.indptr),
                                          torch.from_numpy(matrix.indices.astype(np.int64)),
                                          torch.from_numpy(matrix.data),
                                          (matrix.rows, matrix.columns))
        if transpose:
            csr = csr.to_sparse_coo().t().coalesce().to_sparse_csr()
        self.weight, self.sparse = csr.to(device), True

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sparse.mm(self.weight, x) if self.sparse else self.weight @ x


class TorchState:
    """A batch's state on the device (as `engine.State`): conv windows, DeltaNet memories,
    attention caches; positions on the host."""

    def __init__(self, engine: "TorchSparseEngine", rows: int):
        device, weights = engine.device, engine.weights
        self.rows = rows
        self.positions = np.zeros(rows, dtype=np.int64)
        self.conv, self.memory, self.keys, self.values, self.lengths = {}, {}, {}, {}, {}
        for index, layer in enumerate(weights.layers):
            mixer = layer.mixer
            if isinstance(mixer, DeltaNetMixer):
                self.conv[index] = torch.zeros(rows, 3, mixer.conv_inputs, device=device)
                self.memory[index] = torch.zeros(rows, len(mixer.value_heads),
                                                 mixer.key_head_dim, mixer.value_head_dim,
                                                 device=device)
            elif isinstance(mixer, AttentionMixer):
                shape = (rows, len(mixer.kv_heads), 64, mixer.head_dim)
                self.keys[index] = torch.zeros(shape, device=device)
                self.values[index] = torch.zeros(shape, device=device)
                self.lengths[index] = torch.zeros(rows, dtype=torch.long, device=device)

    def reserve(self, length: int) -> None:
        for index, keys in list(self.keys.items()):
            if keys.shape[2] >= length:
                continue
            capacity = max(length, 2 * keys.shape[2])
            for cache in (self.keys, self.values):
                grown = cache[index].new_zeros(keys.shape[:2] + (capacity, keys.shape[3]))
                grown[:, :, :keys.shape[2]] = cache[index]
                cache[index] = grown


def _rms_norm(x: torch.Tensor, scale: torch.Tensor, eps: float, dim: int = -1
              ) -> torch.Tensor:
    return (x * torch.rsqrt(x.pow(2).mean(dim, keepdim=True) + eps)) * scale


def _l2norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def _waves(slots: np.ndarray) -> list[np.ndarray]:
    """Column indices in waves: wave k holds the k-th column of each row, so a wave never
    holds two columns of one row and each row's columns come in time order."""
    seen: dict[int, int] = {}
    order = []
    for column, slot in enumerate(slots.tolist()):
        order.append(seen.get(slot, 0))
        seen[slot] = order[-1] + 1
    order = np.array(order)
    return [np.nonzero(order == wave)[0] for wave in range(order.max() + 1)]


class TorchSparseEngine(SparseEngine):
    """`SparseEngine`'s decoder as torch operations on `device` (see the module doc)."""

    def __init__(self, weights: Weights, device: str | torch.device = "cpu"):
        super().__init__(weights)
        self.device = torch.device(device)
        if self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        put = self.device
        self.lm_head = _Product(weights.lm_head, put)
        self.final_scale = _tensor(weights.final_scale, put)
        self.layers = []
        for layer in weights.layers:
            mixer, mlp = layer.mixer, layer.mlp
            entry = {"input_scale": _tensor(layer.input_scale, put)[:, None],
                     "post_scale": _tensor(layer.post_scale, put)[:, None]}
            if mixer is not None:
                entry["projection"] = _Product(mixer.projection, put)
                entry["out_proj"] = _Product(mixer.out_proj, put)
            if isinstance(mixer, DeltaNetMixer):
                entry.update(conv_weight=_tensor(mixer.conv_weight, put),
                             conv_channel=_tensor(mixer.conv_channel, put),
                             key_of_value_head=_tensor(mixer.key_of_value_head, put),
                             neg_a=_tensor(mixer.neg_a, put),
                             dt_bias=_tensor(mixer.dt_bias, put),
                             norm_weight=_tensor(mixer.norm_weight, put))
            elif isinstance(mixer, AttentionMixer):
                entry.update(kv_of_head=_tensor(mixer.kv_of_head, put),
                             q_scale=_tensor(mixer.q_scale, put),
                             k_scale=_tensor(mixer.k_scale, put))
            if mlp is not None:
                entry.update(gate=_Product(mlp.gate, put), up=_Product(mlp.up, put),
                             down=_Product(mlp.down_by_unit, put, transpose=True))
            self.layers.append(entry)
        self._torch_cos = self._torch_sin = None

    @classmethod
    def load(cls, directory: str | Path, device: str | torch.device = "cpu"
             ) -> "TorchSparseEngine":
        return cls(read_weights(directory), device)

    def new_state(self, rows: int) -> TorchState:
        return TorchState(self, rows)

    def session(self, prompts, eos_id=None, prefill_chunk=256, on_prefill=None, threads=1):
        """As `SparseEngine.session`, on one thread (the device queues the work itself)."""
        return super().session(prompts, eos_id, prefill_chunk, on_prefill, threads=1)

    def reserve(self, state: TorchState, positions: int) -> None:
        state.reserve(positions)
        cos, sin = self._rotary(positions)
        if self._torch_cos is None or self._torch_cos.shape[0] < cos.shape[0]:
            self._torch_cos, self._torch_sin = _tensor(cos, self.device), \
                _tensor(sin, self.device)

    @torch.inference_mode()
    def forward(self, state: TorchState, tokens: Sequence[int], slots: Sequence[int],
                wanted: Sequence[int], logits: bool = False, workers=None) -> np.ndarray:
        """As `SparseEngine.forward`; `workers` is never given (its sessions run one
        thread: torch shares out its own work)."""
        weights, device = self.weights, self.device
        slots = np.asarray(slots, dtype=np.int64)
        columns = len(slots)
        positions = np.empty(columns, dtype=np.int64)
        for column, slot in enumerate(slots.tolist()):
            positions[column] = state.positions[slot]
            state.positions[slot] += 1
        self.reserve(state, int(state.positions.max()) + 1)
        waves = [(torch.from_numpy(wave).to(device), torch.from_numpy(slots[wave]).to(device),
                  torch.from_numpy(positions[wave]).to(device)) for wave in _waves(slots)]
        x = torch.from_numpy(self._embed(np.asarray(tokens, dtype=np.int64))).to(device)
        eps = weights.eps
        for index, (layer, entry) in enumerate(zip(weights.layers, self.layers)):
            if layer.mixer is not None:
                normed = _rms_norm(x, entry["input_scale"], eps, dim=0)
                projected = entry["projection"](normed)
                if isinstance(layer.mixer, DeltaNetMixer):
                    out = self._deltanet(layer.mixer, entry, projected, waves, state, index)
                else:
                    out = self._attention(layer.mixer, entry, projected, waves, state, index)
                x = x + entry["out_proj"](out)
            if layer.mlp is not None:
                normed = _rms_norm(x, entry["post_scale"], eps, dim=0)
                hidden = torch.nn.functional.silu(entry["gate"](normed)) * entry["up"](normed)
                x = x + entry["down"](hidden)
        chosen = x[:, torch.as_tensor(list(wanted), dtype=torch.long, device=device)]
        final = _rms_norm(chosen, self.final_scale[:, None], eps, dim=0)
        scores = self.lm_head(final)
        if logits:
            return scores.cpu().numpy()
        return scores.argmax(0).cpu().numpy()

    def _deltanet(self, mixer: DeltaNetMixer, entry: dict, projected: torch.Tensor,
                  waves, state: TorchState, index: int) -> torch.Tensor:
        dk, dv = mixer.key_head_dim, mixer.value_head_dim
        key_heads, value_heads = len(mixer.key_heads), len(mixer.value_heads)
        key_channels, inputs = key_heads * dk, mixer.conv_inputs
        z_rows = slice(inputs, inputs + value_heads * dv)
        b_row, a_row = inputs + value_heads * dv, inputs + value_heads * dv + value_heads
        weight, conv, memory = entry["conv_weight"], state.conv[index], state.memory[index]
        out = projected.new_empty(value_heads * dv, projected.shape[1])
        for columns, slots, _ in waves:
            current = projected[:inputs, columns].t()                   # [m, inputs]
            window = conv[slots]                                        # [m, 3, inputs]
            total = (weight[0] * window[:, 0] + weight[1] * window[:, 1]
                     + weight[2] * window[:, 2] + weight[3] * current)
            conv[slots] = torch.cat([window[:, 1:], current[:, None]], dim=1)
            mixed = total.new_zeros(len(columns), 2 * key_channels + value_heads * dv)
            mixed[:, entry["conv_channel"]] = torch.nn.functional.silu(total)
            query = _l2norm(mixed[:, :key_channels].reshape(-1, key_heads, dk))
            query = query / math.sqrt(dk)
            key = _l2norm(mixed[:, key_channels:2 * key_channels].reshape(-1, key_heads, dk))
            value = mixed[:, 2 * key_channels:].reshape(-1, value_heads, dv)
            query = query[:, entry["key_of_value_head"]]
            key = key[:, entry["key_of_value_head"]]
            beta = torch.sigmoid(projected[b_row:b_row + value_heads, columns].t())
            decay = torch.exp(entry["neg_a"] * torch.nn.functional.softplus(
                projected[a_row:a_row + value_heads, columns].t() + entry["dt_bias"]))
            held = memory[slots] * decay[..., None, None]
            kv_memory = (held * key[..., None]).sum(dim=-2)
            delta = (value - kv_memory) * beta[..., None]
            held = held + key[..., None] * delta[..., None, :]
            output = (held * query[..., None]).sum(dim=-2)
            memory[slots] = held
            z = projected[z_rows, columns].t().reshape(-1, value_heads, dv)
            normed = entry["norm_weight"] * (output * torch.rsqrt(
                output.pow(2).mean(-1, keepdim=True) + self.weights.eps))
            out[:, columns] = (normed * torch.nn.functional.silu(z)).reshape(
                len(columns), -1).t()
        return out

    def _attention(self, mixer: AttentionMixer, entry: dict, projected: torch.Tensor,
                   waves, state: TorchState, index: int) -> torch.Tensor:
        hd, heads, kv_heads = mixer.head_dim, len(mixer.query_heads), len(mixer.kv_heads)
        rotary, eps = self.weights.rotary_dims, self.weights.eps
        keys, values, lengths = state.keys[index], state.values[index], state.lengths[index]
        out = projected.new_empty(heads * hd, projected.shape[1])
        for columns, slots, positions in waves:
            m = len(columns)
            both = projected[:2 * heads * hd, columns].t().reshape(m, heads, 2 * hd)
            query, gate = both[..., :hd], both[..., hd:]
            kv = projected[2 * heads * hd:, columns].t()
            key = kv[:, :kv_heads * hd].reshape(m, kv_heads, hd)
            value = kv[:, kv_heads * hd:].reshape(m, kv_heads, hd)
            cos = self._torch_cos[positions][:, None]
            sin = self._torch_sin[positions][:, None]
            query = _rotate(_rms_norm(query, entry["q_scale"], eps), cos, sin, rotary)
            key = _rotate(_rms_norm(key, entry["k_scale"], eps), cos, sin, rotary)
            at = lengths[slots]
            keys[slots, :, at] = key
            values[slots, :, at] = value
            lengths[slots] = at + 1
            count = int(at.max()) + 1
            cached_keys = keys[slots][:, entry["kv_of_head"], :count]      # [m, h, t, hd]
            cached_values = values[slots][:, entry["kv_of_head"], :count]
            scores = (cached_keys @ query[..., None])[..., 0] * hd ** -0.5   # [m, h, t]
            hidden = torch.arange(count, device=scores.device) > at[:, None, None]
            scores = scores.masked_fill(hidden, float("-inf"))
            weights = torch.softmax(scores, dim=-1, dtype=torch.float32)
            attended = (weights[..., None, :] @ cached_values)[..., 0, :]    # [m, h, hd]
            out[:, columns] = (attended * torch.sigmoid(gate)).reshape(m, -1).t()
        return out


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, rotary: int
            ) -> torch.Tensor:
    """transformers' apply_rotary_pos_emb on the first `rotary` dims of each head."""
    turned, passed = x[..., :rotary], x[..., rotary:]
    half = rotary // 2
    rotated = torch.cat((-turned[..., half:], turned[..., :half]), dim=-1)
    return torch.cat([turned * cos + rotated * sin, passed], dim=-1)
