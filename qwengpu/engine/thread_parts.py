"""A decode step's work shared over threads inside one compiled call (numba's parallel loops).

With threads, `SparseEngine.forward` cuts each piece of a step's work into as many parts as
there are threads (`Workers.bounds`) and runs the parts at once: a dense product's panels of
rows, the rows of the batch through a mixer, and each of the machine's sparse layers
(`layers_shared`: its rows, units and heads).  Each part is the kernel a single thread runs
on it (`dense_kernels.dense_panels`, `mixer_kernels`, the kernels of `fused.run_layers`),
so every sum is taken by one thread as it would be alone and the results do not depend on
the threads: only the time does.

The parts start in one `prange` loop, not in a Python thread pool: numba's OpenMP threads
take a part in about 2 microseconds where a pool's futures took about 60, and a step of
Qwen3.5-2B starts some 150 such pieces (docs/engine.md, "Threads").  Where no OpenMP or TBB
is found numba falls back to its own work queue, which is as slow as the pool and runs one
parallel call at a time in a process: the engine starts them from the thread that steps a
session only.
"""

from __future__ import annotations

import os

# How long an OpenMP thread spins for the next part before it sleeps (GNU OpenMP reads it
# when numba first loads it, at the first parallel call).  Its default, 300,000 spins, keeps
# an idle thread on a core for a while after each piece: on a machine whose cores other work
# also wants (a second test worker, another program) the step then waits on threads the
# spinning keeps off the cores, and a one-launch step of the 4-layer stand-in took 55 ms
# beside one busy process against 28 with 1,000 spins (41 with the thread pool before); on
# a quiet machine the two are alike (24 ms).  A value the user sets is kept.
os.environ.setdefault("GOMP_SPINCOUNT", "1000")

import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

from qwengpu.engine.dense_kernels import dense_panels  # noqa: E402
from qwengpu.engine.gate_families import family_gates_of  # noqa: E402
from qwengpu.engine.kernels import csr_matmul_add_rows, csr_matmul_rows, mlp_buffers, \
    mlp_down_rows, mlp_units, rms_norm, row_bounds  # noqa: E402
from qwengpu.engine.mixer_kernels import attention_columns, deltanet_columns  # noqa: E402


@njit(parallel=True, nogil=True, cache=True)
def dense_in_parts(panels, x, out, bounds):
    """`dense_kernels.dense_product`, panels bounds[p] to bounds[p + 1] - 1 a part."""
    for part in prange(bounds.shape[0] - 1):
        dense_panels(panels, x, out, bounds[part], bounds[part + 1])


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


@njit(cache=True, nogil=True)
def even_bounds(count, parts):
    """0..count cut into `parts` nearly equal runs (int64 bounds)."""
    bounds = np.empty(parts + 1, dtype=np.int64)
    for part in range(parts + 1):
        bounds[part] = count * part // parts
    return bounds


@njit(parallel=True, nogil=True, cache=True)
def layers_shared(parts, columns_are_rows, down_rows, x, slots, eps, has_mixer, has_mlp, input_scales,
                  post_scales, p_indptr, p_indices, p_data, projected_rows, conv_channel,
                  conv_weight, key_of_value_head, neg_a, dt_bias, norm_weight, head_shape,
                  state_rows, state_row_count, state_columns, state_column_count, o_indptr,
                  o_indices, o_data, g_indptr, g_indices, g_data, u_indptr, u_indices, u_data,
                  d_indptr, d_indices, d_data, gate_twins, family_table, family_inputs,
                  family_units, family_weights, in_family, conv_states, memories):
    """`fused.run_layers` with `parts` threads sharing each layer: its projection and
    out_proj by output rows (cut by nonzeros), the delta rule by columns where each column
    is a row of its own (`columns_are_rows`; else on one thread, a row's tokens in order),
    the MLP's gate families, its units (cut by gate nonzeros) and its down projection by
    output rows (`kernels.mlp_add`'s three steps; `down_rows[layer]`: the down entries in
    rows before each row, so that the rows are cut by entries).  The families are cut by
    count, the units by gate nonzeros: by weights, or by a unit's gate and up weights, the
    shares came out further apart, a family reading only the inputs that are not 0 and
    most units being dead.  Every sum is one thread's, taken as `run_layers` takes it, so
    the results are its results to the bit."""
    dims, columns = x.shape
    normed = np.empty_like(x)
    column_bounds = even_bounds(columns, min(parts, columns) if columns_are_rows else 1)
    for layer in range(has_mixer.shape[0]):
        if has_mixer[layer]:
            rms_norm(x, input_scales[layer], eps, normed)
            projected = np.empty((projected_rows[layer], columns), dtype=np.float32)
            rows = row_bounds(p_indptr[layer], parts)
            for part in prange(parts):
                csr_matmul_rows(p_indptr[layer], p_indices[layer], p_data[layer], normed,
                                projected, rows[part], rows[part + 1])
            key_channels, value_heads = head_shape[layer, 0], head_shape[layer, 1]
            key_head_dim, value_head_dim = head_shape[layer, 2], head_shape[layer, 3]
            out = np.empty((value_heads * value_head_dim, columns), dtype=np.float32)
            for part in prange(column_bounds.shape[0] - 1):
                first, last = column_bounds[part], column_bounds[part + 1]
                share = np.empty((out.shape[0], last - first), dtype=np.float32)
                deltanet_columns(np.ascontiguousarray(projected[:, first:last]),
                                 slots[first:last], conv_channel[layer], conv_weight[layer],
                                 conv_states[layer], key_channels, value_heads,
                                 key_of_value_head[layer], key_head_dim, value_head_dim,
                                 neg_a[layer], dt_bias[layer], norm_weight[layer], eps,
                                 state_rows[layer], state_row_count[layer],
                                 state_columns[layer], state_column_count[layer],
                                 memories[layer], share)
                out[:, first:last] = share
            rows = row_bounds(o_indptr[layer], parts)
            for part in prange(parts):
                csr_matmul_add_rows(o_indptr[layer], o_indices[layer], o_data[layer], out, x,
                                    rows[part], rows[part + 1])
        if has_mlp[layer]:
            rms_norm(x, post_scales[layer], eps, normed)
            units = g_indptr[layer].shape[0] - 1
            gates, hidden, live, alive = mlp_buffers(units, family_table[layer], columns)
            if gates.shape[0] > 0:
                families = even_bounds(family_table[layer].shape[0], parts)
                for part in prange(parts):
                    family_gates_of(family_table[layer], family_inputs[layer],
                                    family_units[layer], family_weights[layer], normed, gates,
                                    families[part], families[part + 1])
            walk = row_bounds(g_indptr[layer], parts)
            for part in prange(parts):
                mlp_units(g_indptr[layer], g_indices[layer], g_data[layer], gate_twins[layer],
                          gates, in_family[layer], u_indptr[layer], u_indices[layer],
                          u_data[layer], normed, hidden, live, alive, walk[part],
                          walk[part + 1])
            total = np.zeros((dims, columns), dtype=np.float32)
            rows = row_bounds(down_rows[layer], parts)
            for part in prange(parts):
                mlp_down_rows(d_indptr[layer], d_indices[layer], d_data[layer], hidden, live,
                              alive, total, x, rows[part], rows[part + 1])
