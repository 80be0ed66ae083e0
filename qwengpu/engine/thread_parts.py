"""A decode step's work shared over threads inside one compiled call (numba's parallel loops).

With threads, `SparseEngine.forward` cuts each piece of a step's work into as many parts as
there are threads (`Workers.bounds`) and runs the parts at once: a dense product's panels of
rows, or the rows of the batch through the machine's sparse layers and through a mixer.
Each part is the kernel a single thread runs on it (`dense_kernels.dense_panels`,
`fused.run_layers`, `mixer_kernels`), so every sum is taken by one thread as it would be
alone and the results do not depend on the threads: only the time does.

The parts start in one `prange` loop, not in a Python thread pool: numba's OpenMP threads
take a part in about 2 microseconds where a pool's futures took about 60, and a step of
Qwen3.5-2B starts some 150 such pieces (docs/engine.md, "Threads").  Where no OpenMP or TBB
is found numba falls back to its own work queue, which is as slow as the pool and runs one
parallel call at a time in a process: the engine starts them from the thread that steps a
session only.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from numba import njit, prange

from qwengpu.engine.dense_kernels import dense_panels
from qwengpu.engine.fused import run_layers
from qwengpu.engine.mixer_kernels import attention_columns, deltanet_columns


def start_threads() -> None:
    """Start numba's threads (once a process), leaving torch's thread count as it was.

    numba's OpenMP layer, as it starts, sets the calling thread's OpenMP thread count to all
    of numba's threads (`omp_set_num_threads` in its `launch_threads`), and torch runs its
    operations on that same GNU OpenMP: a model run beside the engine (stock transformers
    checking it, the tests' next model) would then take every core.  How long an idle
    thread spins is set where the package is imported (`qwengpu/__init__.py`)."""
    torch_threads = torch.get_num_threads()
    numba.get_num_threads()                    # starts the threading layer, once
    torch.set_num_threads(torch_threads)


@njit(parallel=True, nogil=True, cache=True)
def dense_in_parts(panels, x, out, bounds):
    """`dense_kernels.dense_product`, panels bounds[p] to bounds[p + 1] - 1 a part."""
    for part in prange(bounds.shape[0] - 1):
        dense_panels(panels, x, out, bounds[part], bounds[part + 1])


@njit(parallel=True, nogil=True, cache=True)
def layers_in_parts(bounds, x, slots, eps, has_mixer, has_mlp, input_scales, post_scales,
                    p_indptr, p_indices, p_data, projected_rows, conv_channel, conv_weight,
                    key_of_value_head, neg_a, dt_bias, norm_weight, head_shape, state_rows,
                    state_row_count, state_columns, state_column_count, o_indptr, o_indices,
                    o_data, g_indptr, g_indices, g_data, u_indptr, u_indices, u_data,
                    d_indptr, d_indices, d_data, gate_twins, gate_finite, family_table,
                    family_inputs, family_units, family_weights, in_family, conv_states,
                    memories):
    """`fused.run_layers` on x's columns bounds[p] to bounds[p + 1] - 1 a part (each column
    a row of its own, so the parts touch separate state)."""
    for part in prange(bounds.shape[0] - 1):
        first, last = bounds[part], bounds[part + 1]
        share = np.ascontiguousarray(x[:, first:last])
        run_layers(share, slots[first:last], eps, has_mixer, has_mlp, input_scales,
                   post_scales, p_indptr, p_indices, p_data, projected_rows, conv_channel,
                   conv_weight, key_of_value_head, neg_a, dt_bias, norm_weight, head_shape,
                   state_rows, state_row_count, state_columns, state_column_count, o_indptr,
                   o_indices, o_data, g_indptr, g_indices, g_data, u_indptr, u_indices,
                   u_data, d_indptr, d_indices, d_data, gate_twins, gate_finite,
                   family_table, family_inputs, family_units, family_weights, in_family, conv_states,
                   memories)
        x[:, first:last] = share


@njit(parallel=True, nogil=True, cache=True)
def deltanet_in_parts(bounds, projected, slots, conv_channel, conv_weight, conv_state,
                      key_channels, value_heads, key_of_value_head, key_head_dim,
                      value_head_dim, neg_a, dt_bias, norm_weight, eps, state_rows,
                      state_row_count, state_columns, state_column_count, state, out):
    """`mixer_kernels.deltanet_columns`, columns bounds[p] to bounds[p + 1] - 1 a part."""
    for part in prange(bounds.shape[0] - 1):
        first, last = bounds[part], bounds[part + 1]
        share = np.empty((out.shape[0], last - first), dtype=np.float32)
        deltanet_columns(np.ascontiguousarray(projected[:, first:last]), slots[first:last],
                         conv_channel, conv_weight, conv_state, key_channels, value_heads,
                         key_of_value_head, key_head_dim, value_head_dim, neg_a, dt_bias,
                         norm_weight, eps, state_rows, state_row_count, state_columns,
                         state_column_count, state, share)
        out[:, first:last] = share


@njit(parallel=True, nogil=True, cache=True)
def attention_in_parts(bounds, projected, slots, positions, kv_of_head, kv_heads, head_dim,
                       q_scale, k_scale, eps, cos_table, sin_table, keys, values, lengths,
                       out):
    """`mixer_kernels.attention_columns`, columns bounds[p] to bounds[p + 1] - 1 a part."""
    for part in prange(bounds.shape[0] - 1):
        first, last = bounds[part], bounds[part + 1]
        share = np.empty((out.shape[0], last - first), dtype=np.float32)
        attention_columns(np.ascontiguousarray(projected[:, first:last]), slots[first:last],
                          positions[first:last], kv_of_head, kv_heads, head_dim, q_scale,
                          k_scale, eps, cos_table, sin_table, keys, values, lengths, share)
        out[:, first:last] = share
