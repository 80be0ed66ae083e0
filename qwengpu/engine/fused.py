"""The decoder's sparse layers in one compiled call: a run of them, or all of them.

A token of a compiled QwenGPU checkpoint passes 45 layers of half a dozen small kernels
each; called one by one from Python, each call pays numba's dispatch (the type of every
argument checked) and the loop around them pays the interpreter, about a fifth of a
one-row decode step on a 2-core CPU.  `FusedLayers` packs the per-layer weights into
numba typed lists once, and `run_layers` runs the same kernels (`qwengpu.engine.kernels`),
in the same order, on the same arrays as `SparseEngine.forward`'s loop: the results are the
loop's to the bit (tests/engine/test_fused.py holds the logits equal), only the calls are
cheaper.

It applies to a layer whose mixer is a Gated DeltaNet or empty and whose every matrix is
kept sparse (CSR): every layer of the compiled machine.  The engine fuses each run of such
layers (`SparseEngine.spans`): the whole decoder of a compiled checkpoint, the machine's
layers in front of a spliced base; a layer with live attention or dense matrices (a base's
layers) runs in the Python loop, where a layer's arithmetic dwarfs the calls anyway.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.typed import List

from qwengpu.engine.gate_families import GateFamilies
from qwengpu.engine.kernels import csr_matmul, csr_matmul_add, mlp_add, rms_norm
from qwengpu.engine.mixer_kernels import deltanet_columns
from qwengpu.engine.weights import DeltaNetMixer, Layer, Matrix

FLOAT = np.float32


def _sparse(matrix: Matrix) -> bool:
    return matrix.stored is None


def fusable(layer: Layer) -> bool:
    """Whether the layer is a sparse Gated DeltaNet (or no mixer) and a sparse MLP (or
    none): what `run_layers` computes."""
    mixer, mlp = layer.mixer, layer.mlp
    if mixer is not None and not (isinstance(mixer, DeltaNetMixer)
                                  and _sparse(mixer.projection) and _sparse(mixer.out_proj)):
        return False
    return mlp is None or all(_sparse(m) for m in (mlp.gate, mlp.up, mlp.down_by_unit))


@njit(cache=True, nogil=True)
def _list_of(first):
    typed = List()
    typed.append(first)
    return typed


@njit(cache=True, nogil=True)
def _append(typed, item):
    typed.append(item)


def _typed(arrays: list[np.ndarray]) -> List:
    """`arrays` as a numba typed list.  Built by two cached compiled functions: a typed
    list's own `append`, called from Python, is compiled anew in every process (about 0.3 s
    for each kind of array, some 4 s of every engine's load)."""
    if not arrays:
        return List()
    typed = _list_of(np.ascontiguousarray(arrays[0]))
    for array in arrays[1:]:
        _append(typed, np.ascontiguousarray(array))
    return typed


class FusedLayers:
    """A run of a checkpoint's layers (all `fusable`), the decoder's layers `first`
    onwards, their weights as typed lists, one entry per layer (an empty array where a
    layer has no mixer or no MLP), for `run_layers`."""

    def __init__(self, layers: list[Layer], first: int = 0):
        self.first = first
        self.count = len(layers)
        self.has_mixer = np.array([layer.mixer is not None for layer in layers])
        self.has_mlp = np.array([layer.mlp is not None for layer in layers])
        none_f = np.zeros(0, dtype=FLOAT)
        none_i64 = np.zeros(0, dtype=np.int64)
        none_i32 = np.zeros(0, dtype=np.int32)
        none_taps = np.zeros((4, 0), dtype=FLOAT)

        def per_mixer(read, empty):
            return _typed([read(layer.mixer) if layer.mixer is not None else empty
                           for layer in layers])

        def per_mlp(read, empty):
            return _typed([read(layer.mlp) if layer.mlp is not None else empty
                           for layer in layers])

        self.input_scales = _typed([layer.input_scale for layer in layers])
        self.post_scales = _typed([layer.post_scale for layer in layers])
        self.projection = tuple(per_mixer(lambda m, part=part: getattr(m.projection, part),
                                          empty)
                                for part, empty in (("indptr", none_i64),
                                                    ("indices", none_i32),
                                                    ("data", none_f)))
        self.projected_rows = np.array([layer.mixer.projection.rows
                                        if layer.mixer is not None else 0
                                        for layer in layers], dtype=np.int64)
        self.conv_channel = per_mixer(lambda m: m.conv_channel, none_i64)
        self.conv_weight = per_mixer(lambda m: m.conv_weight, none_taps)
        self.key_of_value_head = per_mixer(lambda m: m.key_of_value_head, none_i64)
        self.neg_a = per_mixer(lambda m: m.neg_a, none_f)
        self.dt_bias = per_mixer(lambda m: m.dt_bias, none_f)
        self.norm_weight = per_mixer(lambda m: m.norm_weight, none_f)
        none_table = np.zeros((0, 1), dtype=np.int64)
        self.state_rows = per_mixer(lambda m: m.state_rows, none_table)
        self.state_row_count = per_mixer(lambda m: m.state_row_count, none_i64)
        self.state_columns = per_mixer(lambda m: m.state_columns, none_table)
        self.state_column_count = per_mixer(lambda m: m.state_column_count, none_i64)
        self.head_shape = np.array(
            [(len(layer.mixer.key_heads) * layer.mixer.key_head_dim,
              len(layer.mixer.value_heads), layer.mixer.key_head_dim,
              layer.mixer.value_head_dim) if layer.mixer is not None else (0, 0, 0, 0)
             for layer in layers], dtype=np.int64).reshape(len(layers), 4)
        self.out_proj = tuple(per_mixer(lambda m, part=part: getattr(m.out_proj, part), empty)
                              for part, empty in (("indptr", none_i64),
                                                  ("indices", none_i32),
                                                  ("data", none_f)))
        self.mlp = tuple(per_mlp(lambda m, name=name, part=part:
                                 getattr(getattr(m, name), part), empty)
                         for name in ("gate", "up", "down_by_unit")
                         for part, empty in (("indptr", none_i64), ("indices", none_i32),
                                             ("data", none_f)))
        self.gate_twins = per_mlp(lambda m: m.gate_twins, np.zeros(0, dtype=np.bool_))
        self.gate_finite = np.array([layer.mlp is None or layer.mlp.gate_finite
                                     for layer in layers])
        no_families = GateFamilies.none(0).arrays
        self.families = tuple(per_mlp(lambda m, part=part: m.families.arrays[part],
                                      no_families[part])
                              for part in range(len(no_families)))

    def state_lists(self, conv: dict[int, np.ndarray], memory: dict[int, np.ndarray]
                    ) -> tuple[List, List]:
        """A State's conv windows and DeltaNet memories of these layers as typed lists (the
        same arrays, so `run_layers` updates the state in place)."""
        none_conv = np.zeros((1, 3, 0), dtype=FLOAT)
        none_memory = np.zeros((1, 0, 0, 0), dtype=FLOAT)
        indices = range(self.first, self.first + self.count)
        return (_typed([conv.get(index, none_conv) for index in indices]),
                _typed([memory.get(index, none_memory) for index in indices]))

    @property
    def weight_arguments(self) -> tuple:
        """`run_layers`' arguments between `eps` and the state lists."""
        return (self.has_mixer, self.has_mlp, self.input_scales, self.post_scales,
                *self.projection, self.projected_rows, self.conv_channel, self.conv_weight,
                self.key_of_value_head, self.neg_a, self.dt_bias, self.norm_weight,
                self.head_shape, self.state_rows, self.state_row_count, self.state_columns,
                self.state_column_count, *self.out_proj, *self.mlp, self.gate_twins,
                self.gate_finite, *self.families)

    def run(self, x: np.ndarray, slots: np.ndarray, eps: np.float32,
            state_lists: tuple[List, List]) -> None:
        """Every layer on x ([hidden, columns], updated in place) and the rows' state."""
        run_layers(x, slots, eps, *self.weight_arguments, *state_lists)


@njit(cache=True, nogil=True)
def run_layers(x, slots, eps, has_mixer, has_mlp, input_scales, post_scales,
               p_indptr, p_indices, p_data, projected_rows, conv_channel, conv_weight,
               key_of_value_head, neg_a, dt_bias, norm_weight, head_shape, state_rows,
               state_row_count, state_columns, state_column_count, o_indptr, o_indices,
               o_data, g_indptr, g_indices, g_data, u_indptr, u_indices, u_data, d_indptr,
               d_indices, d_data, gate_twins, gate_finite, family_table, family_inputs,
               family_units, family_weights, in_family, conv_states, memories):
    """`SparseEngine.forward`'s loop over the layers, for sparse DeltaNet and MLP layers:
    per layer the RMSNorm, the mixer's projection, the delta rule, `out_proj` added to x,
    then the RMSNorm and the MLP added to x."""
    columns = x.shape[1]
    normed = np.empty_like(x)
    for layer in range(has_mixer.shape[0]):
        if has_mixer[layer]:
            rms_norm(x, input_scales[layer], eps, normed)
            projected = np.empty((projected_rows[layer], columns), dtype=np.float32)
            csr_matmul(p_indptr[layer], p_indices[layer], p_data[layer], normed, projected)
            key_channels, value_heads = head_shape[layer, 0], head_shape[layer, 1]
            key_head_dim, value_head_dim = head_shape[layer, 2], head_shape[layer, 3]
            out = np.empty((value_heads * value_head_dim, columns), dtype=np.float32)
            deltanet_columns(projected, slots, conv_channel[layer], conv_weight[layer],
                             conv_states[layer], key_channels, value_heads,
                             key_of_value_head[layer], key_head_dim, value_head_dim,
                             neg_a[layer], dt_bias[layer], norm_weight[layer], eps,
                             state_rows[layer], state_row_count[layer], state_columns[layer],
                             state_column_count[layer], memories[layer], out)
            csr_matmul_add(o_indptr[layer], o_indices[layer], o_data[layer], out, x)
        if has_mlp[layer]:
            rms_norm(x, post_scales[layer], eps, normed)
            mlp_add(g_indptr[layer], g_indices[layer], g_data[layer], gate_twins[layer],
                    gate_finite[layer], family_table[layer], family_inputs[layer],
                    family_units[layer], family_weights[layer], in_family[layer],
                    u_indptr[layer], u_indices[layer], u_data[layer], d_indptr[layer],
                    d_indices[layer], d_data[layer], normed, x)
