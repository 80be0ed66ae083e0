"""The engine's mixers: Qwen3.5's Gated DeltaNet and full attention between their input
projections and their output projection, column by column (numba, float32).

They follow `qwengpu.engine.kernels`' rules (the same order of operations as transformers'
`modeling_qwen3_5.py`, sums left to right, no fused multiply-add, unsigned positions where an
index table is read), and read the recurrent state only through the nonzero entries of a key
or query: a zero entry reads and writes exactly nothing.  Each column runs on the state of
its own row, so a column's results never depend on the other columns.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from qwengpu.engine.dense_kernels import PANEL_ROWS, dense_panels
from qwengpu.engine.kernels import LANES, sigmoid, silu, softplus, sum_of_squares

# An attention cache keeps its keys in blocks of this many positions, each a dense panel.
KEY_BLOCK = PANEL_ROWS


@njit(cache=True, nogil=True)
def deltanet_columns(projected, slots, conv_channel, conv_weight, conv_state, key_channels,
                     value_heads, key_of_value_head, key_head_dim, value_head_dim, neg_a,
                     dt_bias, norm_weight, eps, state_rows, state_row_count, state_columns,
                     state_column_count, state, out):
    """Qwen3_5GatedDeltaNet between its input projections and `out_proj`, column by column.

    The conv channels are the q and k channels of the live key heads (`key_channels` each)
    and the v channels of the live value heads; only those whose projection row has a
    nonzero weight are computed (`conv_channel[n]`: the channel of conv input n): the others
    read 0 on every token, and the conv and SiLU of zeros are exactly 0.  `projected` rows:
    those conv inputs, then the z channels of the live value heads, then b and a (one each).
    Each column runs on the state of its row (`slots[column]`): the causal conv (taps
    `conv_weight[4, inputs]`, oldest first; the row's last three inputs in
    `conv_state[slot, 3, inputs]`), SiLU, l2-normalised q and k (q over
    sqrt(key_head_dim)), beta = sigmoid(b), decay = exp(-exp(A_log) * softplus(a +
    dt_bias)), the delta rule on `state` (recurrent form: decay, read, write, then the output
    read; two passes over the state, of which only the second writes it:
    tests/engine/test_deltanet_model.py holds them to the four passes, to the bit), the
    gated RMSNorm.  `out` gets the normed, gated output of each live value head
    ([heads * value_head_dim, columns]).

    `state[slot, head]` holds only the part of a head's memory that can ever be nonzero
    (`weights.live_state`): row n is key dim `state_rows[head, n]`, column c value dim
    `state_columns[head, c]`, for the first `state_row_count[head]` rows and
    `state_column_count[head]` columns.  The rest of the memory is 0 on every token, and the
    terms it would add are exactly 0, so the sums are those of the whole memory.
    """
    rows, columns = projected.shape
    qk_channels = 2 * key_channels
    value_channels = value_heads * value_head_dim
    conv_channels = qk_channels + value_channels
    conv_inputs = conv_channel.shape[0]
    z_row = conv_inputs
    b_row = z_row + value_channels
    a_row = b_row + value_heads
    key_heads = key_channels // key_head_dim
    current = np.empty(rows, dtype=np.float32)
    mixed = np.zeros(conv_channels, dtype=np.float32)
    query = np.empty(key_channels, dtype=np.float32)
    key = np.empty(key_channels, dtype=np.float32)
    kv_memory = np.empty(value_head_dim, dtype=np.float32)
    delta = np.empty(value_head_dim, dtype=np.float32)
    output = np.empty(value_head_dim, dtype=np.float32)
    read = np.empty(value_head_dim, dtype=np.float32)
    touched = np.empty(key_head_dim, dtype=np.uint64)
    conv_targets = conv_channel.view(np.uint64)
    lanes = np.empty(LANES, dtype=np.float32)
    scale = np.float32(math.sqrt(key_head_dim))
    w0, w1, w2, w3 = conv_weight[0], conv_weight[1], conv_weight[2], conv_weight[3]
    for column in range(columns):
        slot = slots[column]
        for row in range(rows):
            current[row] = projected[row, column]
        # the depthwise causal conv over the last three inputs and this one, then SiLU
        older, old, last = conv_state[slot, 0], conv_state[slot, 1], conv_state[slot, 2]
        for n in range(conv_inputs):
            total = w0[n] * older[n]
            total += w1[n] * old[n]
            total += w2[n] * last[n]
            total += w3[n] * current[n]
            older[n] = old[n]
            old[n] = last[n]
            last[n] = current[n]
            mixed[conv_targets[n]] = silu(total)
        # l2norm of q and k per key head (inv = rsqrt(sum x^2 + 1e-6)); q over sqrt(dk)
        for head in range(key_heads):
            base = head * key_head_dim
            squares = sum_of_squares(mixed, base, key_head_dim, lanes)
            inverse = np.float32(1.0) / math.sqrt(squares + np.float32(1e-6))
            for i in range(key_head_dim):
                query[base + i] = (mixed[base + i] * inverse) / scale
            squares = sum_of_squares(mixed, key_channels + base, key_head_dim, lanes)
            inverse = np.float32(1.0) / math.sqrt(squares + np.float32(1e-6))
            for i in range(key_head_dim):
                key[base + i] = mixed[key_channels + base + i] * inverse
        for head in range(value_heads):
            key_base = np.uint64(key_of_value_head[head] * key_head_dim)
            value_base = qk_channels + head * value_head_dim
            beta = sigmoid(current[b_row + head])
            decay = math.exp(neg_a[head] * softplus(current[a_row + head] + dt_bias[head]))
            memory = state[slot, head]
            live_rows, live_columns = state_row_count[head], state_column_count[head]
            rows_of = state_rows[head].view(np.uint64)
            columns_of = state_columns[head].view(np.uint64)
            # The key's read of each decayed row, the decayed value not stored: this pass
            # only reads the state.  It lists the rows the write pass visits: every live row
            # where the state decays, else the rows the key or the query reads (a zero entry
            # reads and writes nothing; a row outside the live ones is 0, so the query reads
            # nothing there either).
            decays = decay != np.float32(1.0)          # S * 1 == S
            count = 0
            kv_memory[:live_columns] = 0.0
            for n in range(live_rows):
                i = rows_of[n]
                weight = key[key_base + i]
                if decays or weight != 0.0 or query[key_base + i] != 0.0:
                    touched[count] = np.uint64(n)
                    count += 1
                if weight != 0.0:
                    if decays:
                        for c in range(live_columns):
                            kv_memory[c] += (memory[n, c] * decay) * weight
                    else:
                        for c in range(live_columns):
                            kv_memory[c] += memory[n, c] * weight
            for c in range(live_columns):
                delta[c] = (mixed[np.uint64(value_base) + columns_of[c]] - kv_memory[c]) * beta
            # The one pass that writes: each row decayed (the same product as the read's),
            # the key's write added, then the output read of the row just written (the read
            # needs only its own row), rows in order, as separate passes would take them.
            # The rows visited are the touched ones: every live row where the state decays,
            # else those the key or the query reads.
            read[:live_columns] = 0.0
            for t in range(count):
                n = touched[t]
                i = rows_of[n]
                weight = key[key_base + i]
                if weight != 0.0 and decays:
                    for c in range(live_columns):
                        memory[n, c] = memory[n, c] * decay + weight * delta[c]
                elif weight != 0.0:
                    for c in range(live_columns):
                        memory[n, c] += weight * delta[c]
                elif decays:
                    for c in range(live_columns):
                        memory[n, c] *= decay
                weight = query[key_base + i]
                if weight != 0.0:
                    for c in range(live_columns):
                        read[c] += memory[n, c] * weight
            output[:] = 0.0
            for c in range(live_columns):
                output[columns_of[c]] = read[c]
            # the gated RMSNorm: (o * rsqrt(mean(o^2) + eps)) * weight * silu(z)
            squares = sum_of_squares(output, 0, value_head_dim, lanes)
            inverse = np.float32(1.0) / math.sqrt(squares / np.float32(value_head_dim) + eps)
            z_base = z_row + head * value_head_dim
            out_base = head * value_head_dim
            for j in range(value_head_dim):
                out[out_base + j, column] = (norm_weight[j] * (output[j] * inverse)) \
                    * silu(current[z_base + j])


@njit(cache=True, nogil=True)
def attention_columns(projected, slots, positions, kv_of_head, kv_heads, head_dim,
                      q_scale, k_scale, eps, cos_table, sin_table, keys, values, lengths,
                      out):
    """Qwen3_5Attention between its projections and `o_proj`, column by column.

    `projected` rows: per query head its query then its gate (`head_dim` each, as q_proj
    lays them out), then the keys and the values of the kv heads (`kv_of_head[h]`: the kv
    head query head h reads).  q and k are RMS-normed
    per head (`q_scale`/`k_scale` = 1 + weight), rotated on the first `cos_table.shape[1]`
    dims at the column's position, appended to the row's cache (`lengths[slot]` entries so
    far); each query head attends (softmax of q.k / sqrt(head_dim)) over its kv head's
    cache, and its output times sigmoid(gate) goes to `out`.

    A row's cache keeps each kv head's keys in blocks of `KEY_BLOCK` positions, each block
    a dense panel (`keys[slot, kv, t // KEY_BLOCK, :, t % KEY_BLOCK]` is position t's key),
    so the query heads that read a kv head take their scores in one dense product over its
    blocks (`attention_scores`: each score the sum over i ascending of query[i] * key[i],
    a multiply then an add, as one at a time would take it, the positions side by side in
    a vector register).  The values are rows (`values[slot, kv, t]`), read once for all
    the query heads of their kv head."""
    columns = projected.shape[1]
    query_heads = kv_of_head.shape[0]
    rotary = cos_table.shape[1]
    half = rotary // 2
    gate_base = head_dim
    kv_base = 2 * head_dim * query_heads
    query = np.empty(head_dim, dtype=np.float32)
    rotated = np.empty(head_dim, dtype=np.float32)
    scaling = np.float32(head_dim ** -0.5)
    # the query heads that read kv head kv: heads[first[kv]:first[kv + 1]], in order
    heads = np.argsort(kv_of_head, kind="mergesort")
    first = np.searchsorted(kv_of_head[heads], np.arange(kv_heads + 1))
    for column in range(columns):
        slot = slots[column]
        position = positions[column]
        length = lengths[slot]
        cos, sin = cos_table[position], sin_table[position]
        block, lane = length // KEY_BLOCK, length % KEY_BLOCK
        for kv in range(kv_heads):
            base = kv_base + kv * head_dim
            _norm_and_rotate(projected[base:base + head_dim, column], k_scale, eps, cos, sin,
                             half, rotary, rotated)
            for i in range(head_dim):
                keys[slot, kv, block, i, lane] = rotated[i]
            values_base = kv_base + kv_heads * head_dim + kv * head_dim
            for i in range(head_dim):
                values[slot, kv, length, i] = projected[values_base + i, column]
        lengths[slot] = length + 1
        count = length + 1
        for kv in range(kv_heads):
            reading = first[kv + 1] - first[kv]
            if reading == 0:
                continue
            readers = heads[first[kv]:first[kv + 1]]
            queries = np.empty((head_dim, reading), dtype=np.float32)
            for j in range(reading):
                base = readers[j] * 2 * head_dim
                _norm_and_rotate(projected[base:base + head_dim, column], q_scale, eps, cos,
                                 sin, half, rotary, query)
                queries[:, j] = query
            scores = np.empty((count, reading), dtype=np.float32)
            attention_scores(keys[slot, kv], queries, scores)
            shares = np.empty((reading, count), dtype=np.float32)   # softmax, head by head
            for j in range(reading):
                largest = -np.inf
                for t in range(count):
                    shares[j, t] = scores[t, j] * scaling
                    largest = max(largest, shares[j, t])
                norm = np.float32(0.0)
                for t in range(count):
                    shares[j, t] = math.exp(shares[j, t] - largest)
                    norm += shares[j, t]
                for t in range(count):
                    shares[j, t] = shares[j, t] / norm
            # the values' sums, t ascending for every head and i (one pass over the values
            # for all the kv head's readers, each sum's terms in the order alone would take)
            reads = np.zeros((reading, head_dim), dtype=np.float32)
            for t in range(count):
                row = values[slot, kv, t]
                for j in range(reading):
                    weight = shares[j, t]
                    for i in range(head_dim):
                        reads[j, i] += weight * row[i]
            for j in range(reading):
                head = readers[j]
                base = head * 2 * head_dim
                totals = out[head * head_dim:(head + 1) * head_dim, column]
                for i in range(head_dim):
                    totals[i] = reads[j, i] * sigmoid(projected[base + gate_base + i, column])


@njit(cache=True, nogil=True)
def attention_scores(key_blocks, queries, scores):
    """scores[t, j] = the sum over i ascending of queries[i, j] * key t's dim i (a multiply
    then an add, each rounded), for t below scores.shape[0]: the keys in blocks of
    KEY_BLOCK positions (`key_blocks[t // KEY_BLOCK, i, t % KEY_BLOCK]`), each a dense
    panel that `dense_kernels.dense_panels` multiplies by the queries, the block's
    positions side by side in a vector register."""
    dense_panels(key_blocks, queries, scores, 0, -(-scores.shape[0] // KEY_BLOCK))


@njit(cache=True, nogil=True)
def _norm_and_rotate(vector, scale, eps, cos, sin, half, rotary, out):
    """RMSNorm of one head (zero-centred weight as scale = 1 + w), then partial rotary."""
    dims = vector.shape[0]
    squares = np.float32(0.0)
    for i in range(dims):
        squares += vector[i] * vector[i]
    inverse = np.float32(1.0) / math.sqrt(squares / np.float32(dims) + eps)
    for i in range(dims):
        out[i] = (vector[i] * inverse) * scale[i]
    for i in range(half):
        first, second = out[i], out[i + half]
        out[i] = first * cos[i] + (-second) * sin[i]
        out[i + half] = second * cos[i + half] + first * sin[i + half]
