"""`mixer_kernels.deltanet_columns` against a float32 model written here, to the bit.

The model takes Qwen3.5's Gated DeltaNet step as its textbook passes, one float32 operation
at a time: the conv and SiLU, the l2 norms, the decay of every live row, the key's read of
every row, the delta, the write of every row, the query's read of every row, the gated
RMSNorm.  The kernel fuses some of these passes (a row's decay with the key's read of it,
a row's write with the query's read of it); this test holds that the fusion changes no bit
of the state or the output.  The transcendental functions are the kernels' own (`silu`,
`sigmoid`, `softplus`, and `exp` and `sqrt` as numba compiles them), so the test is about
the order of the arithmetic, not about libm.

Covered: two rows (slots) taking turns over four tokens; two value heads on one key head;
live rows and columns that are a subset of the head's memory (padded tables); a key dim
whose conv taps are all 0 (so k is exactly 0 there: its row is read by the query only); a
head whose decay rounds to exactly 1 (its memory is not multiplied).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from qwengpu.engine import kernels, mixer_kernels

F = np.float32
KEY_DIM, VALUE_DIM, VALUE_HEADS = 8, 8, 2
KEY_CHANNELS = KEY_DIM                      # one key head
CONV_CHANNELS = 2 * KEY_CHANNELS + VALUE_HEADS * VALUE_DIM
LIVE_ROWS = [[0, 2, 3, 5, 6, 7], [1, 2, 3, 4]]          # per value head: key dims
LIVE_COLUMNS = [[0, 1, 4, 5, 7], [2, 3, 6]]              # per value head: value dims
SILENT_KEY_DIM = 3                          # its conv taps are 0: k is exactly 0 there
EPS = F(1e-6)


@njit
def exp32(value):
    return math.exp(value)


@njit
def sqrt32(value):
    return math.sqrt(value)


def padded(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(entries) for entries in lists)
    table = np.zeros((len(lists), width), dtype=np.int64)
    for head, entries in enumerate(lists):
        table[head, :len(entries)] = entries
    return table, np.array([len(entries) for entries in lists], dtype=np.int64)


def parameters(rng: np.random.Generator) -> dict:
    conv_weight = rng.standard_normal((4, CONV_CHANNELS)).astype(F)
    conv_weight[:, KEY_CHANNELS + SILENT_KEY_DIM] = 0.0
    return {"conv_weight": conv_weight,
            "neg_a": -np.exp(rng.standard_normal(VALUE_HEADS)).astype(F),
            "dt_bias": np.array([0.3, -40.0], dtype=F),     # head 1: decay exactly 1
            "norm_weight": (1.0 + 0.1 * rng.standard_normal(VALUE_DIM)).astype(F)}


def model_step(current: np.ndarray, p: dict, conv: np.ndarray, memory: np.ndarray
               ) -> np.ndarray:
    """One column of one row: `conv` [3, channels] and `memory` [heads, dk, dv] (the whole
    memory, zero outside the live part) updated; returns out [heads * dv]."""
    lanes = np.zeros(kernels.LANES, dtype=F)
    mixed = np.zeros(CONV_CHANNELS, dtype=F)
    w = p["conv_weight"]
    for n in range(CONV_CHANNELS):
        total = F(w[0, n] * conv[0, n])
        total = F(total + F(w[1, n] * conv[1, n]))
        total = F(total + F(w[2, n] * conv[2, n]))
        total = F(total + F(w[3, n] * current[n]))
        mixed[n] = kernels.silu(total)
    conv[0], conv[1], conv[2] = conv[1].copy(), conv[2].copy(), current[:CONV_CHANNELS]
    scale = F(math.sqrt(KEY_DIM))
    inverse = F(1.0) / sqrt32(F(kernels.sum_of_squares(mixed, 0, KEY_DIM, lanes) + EPS))
    query = np.array([F(F(mixed[i] * inverse) / scale) for i in range(KEY_DIM)], dtype=F)
    inverse = F(1.0) / sqrt32(F(kernels.sum_of_squares(mixed, KEY_CHANNELS, KEY_DIM, lanes)
                                + EPS))
    key = np.array([F(mixed[KEY_CHANNELS + i] * inverse) for i in range(KEY_DIM)], dtype=F)
    z_row = CONV_CHANNELS
    b_row, a_row = z_row + VALUE_HEADS * VALUE_DIM, z_row + VALUE_HEADS * VALUE_DIM + 2
    out = np.zeros(VALUE_HEADS * VALUE_DIM, dtype=F)
    for head in range(VALUE_HEADS):
        rows, columns = LIVE_ROWS[head], LIVE_COLUMNS[head]
        state = memory[head]
        beta = kernels.sigmoid(current[b_row + head])
        decay = exp32(F(p["neg_a"][head] * kernels.softplus(
            F(current[a_row + head] + p["dt_bias"][head]))))
        if head == 1:
            assert decay == F(1.0)
        if decay != F(1.0):                              # pass 1: the decay
            for i in rows:
                for c in columns:
                    state[i, c] = F(state[i, c] * decay)
        read = {c: F(0.0) for c in columns}              # pass 2: the key's read
        for i in rows:
            if key[i] != 0.0:
                for c in columns:
                    read[c] = F(read[c] + F(state[i, c] * key[i]))
        value_base = 2 * KEY_CHANNELS + head * VALUE_DIM
        delta = {c: F(F(mixed[value_base + c] - read[c]) * beta) for c in columns}
        for i in rows:                                   # pass 3: the write
            if key[i] != 0.0:
                for c in columns:
                    state[i, c] = F(state[i, c] + F(key[i] * delta[c]))
        output = np.zeros(VALUE_DIM, dtype=F)            # pass 4: the query's read
        for i in rows:
            if query[i] != 0.0:
                for c in columns:
                    output[c] = F(output[c] + F(state[i, c] * query[i]))
        squares = kernels.sum_of_squares(output, 0, VALUE_DIM, lanes)
        inverse = F(1.0) / sqrt32(F(F(squares / F(VALUE_DIM)) + EPS))
        for j in range(VALUE_DIM):
            gate = kernels.silu(current[z_row + head * VALUE_DIM + j])
            out[head * VALUE_DIM + j] = F(F(p["norm_weight"][j] * F(output[j] * inverse))
                                          * gate)
    return out


def test_the_delta_rule_is_the_textbook_passes_to_the_bit():
    rng = np.random.default_rng(46)
    p = parameters(rng)
    projected_rows = CONV_CHANNELS + VALUE_HEADS * VALUE_DIM + 2 * VALUE_HEADS
    state_rows, state_row_count = padded(LIVE_ROWS)
    state_columns, state_column_count = padded(LIVE_COLUMNS)
    slots_total = 2
    conv_state = np.zeros((slots_total, 3, CONV_CHANNELS), dtype=F)
    state = np.zeros((slots_total, VALUE_HEADS, state_rows.shape[1], state_columns.shape[1]),
                     dtype=F)
    model_conv = np.zeros((slots_total, 3, CONV_CHANNELS), dtype=F)
    model_memory = np.zeros((slots_total, VALUE_HEADS, KEY_DIM, VALUE_DIM), dtype=F)
    for step in range(4):
        slots = np.array([1, 0] if step % 2 else [0, 1], dtype=np.int64)
        projected = (2.0 * rng.standard_normal((projected_rows, 2))).astype(F)
        out = np.empty((VALUE_HEADS * VALUE_DIM, 2), dtype=F)
        mixer_kernels.deltanet_columns(
            projected, slots, np.arange(CONV_CHANNELS, dtype=np.int64), p["conv_weight"],
            conv_state, KEY_CHANNELS, VALUE_HEADS, np.zeros(VALUE_HEADS, dtype=np.int64),
            KEY_DIM, VALUE_DIM, p["neg_a"], p["dt_bias"], p["norm_weight"], EPS,
            state_rows, state_row_count, state_columns, state_column_count, state, out)
        for column, slot in enumerate(slots):
            want = model_step(projected[:, column], p, model_conv[slot], model_memory[slot])
            assert np.array_equal(out[:, column].view(np.uint32), want.view(np.uint32)), step
        for slot in range(slots_total):
            for head in range(VALUE_HEADS):
                rows, columns = LIVE_ROWS[head], LIVE_COLUMNS[head]
                got = state[slot, head, :len(rows), :len(columns)]
                want = model_memory[slot, head][np.ix_(rows, columns)]
                assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), step
                assert want.any()
        assert np.array_equal(conv_state.view(np.uint32), model_conv.view(np.uint32))
    # the silent key dim: the key never wrote its row, so the query reads zeros there
    assert not model_memory[:, 0, SILENT_KEY_DIM].any()
