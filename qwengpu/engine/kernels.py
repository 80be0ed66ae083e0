"""The engine's arithmetic: Qwen3.5's decoder pieces as compiled loops (numba), in float32.

Every function here does what the named piece of transformers' `modeling_qwen3_5.py` does,
in the same order of operations, on activations laid out as `[dim, columns]` (a column is
one token of one row; the last axis is contiguous, so a weight is loaded once and applied to
every column).  Sparse matrices are CSR (`indptr`, `indices`, `data`) holding only nonzero
weights: a term whose weight is exactly zero adds exactly zero, so leaving it out changes
nothing.  The mixers (the delta rule and the attention) are in
`qwengpu.engine.mixer_kernels`, the products of dense matrices in
`qwengpu.engine.dense_kernels`, on the same rules.  Sums are taken left to right
(no reassociation, no fused multiply-add), so results are the same on every machine; they
may differ from stock transformers' blocked sums in the last bit, which the compiled
gadgets' margins absorb (tests hold the chosen ids identical).

Positions in the sparse loops are unsigned: a CSR row's span as `np.uint64`, its column or
row indices read through `indices.view(np.uint32)` (the delta rule's int64 tables of
channels and state rows through `.view(np.uint64)`).  numba wraps a negative signed index
around (Python's `a[-1]`), a sign test and two more instructions on every access it cannot
prove non-negative; in the short loops over a row's nonzeros that was a third of the time.
A one-column vector (`x[:, column]`, strided) is copied to a contiguous one first.

The functions compile on first use and are cached on disk (`cache=True`); they release the
GIL, so separate rows can run on separate threads.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from qwengpu.engine.gate_families import family_gates

# Up to this many columns, a kernel runs column by column with scalar sums: for one or two
# columns that beats the loops over columns, which pay off from about four.
FEW_COLUMNS = 2
# Long sums of squares (norms) run in this many interleaved partial sums (`sum_of_squares`).
LANES = 16


@njit(cache=True, nogil=True)
def csr_matmul(indptr, indices, data, x, out):
    """out[r, :] = sum_k data[k] * x[indices[k], :] over row r's nonzeros."""
    columns = x.shape[1]
    if columns <= FEW_COLUMNS:
        for column in range(columns):
            _csr_matvec(indptr, indices, data, x[:, column], out[:, column])
        return
    inputs = indices.view(np.uint32)
    for row in range(out.shape[0]):
        target = out[row]
        target[:] = 0.0
        _add_row_terms(inputs, data, np.uint64(indptr[row]), np.uint64(indptr[row + 1]), x, target)


@njit(cache=True, nogil=True)
def _add_row_terms(inputs, data, start, stop, x, sums):
    """sums[:] += data[k] * x[inputs[k], :] for k from start to stop, one term after the
    other: a CSR row's sum in every column (`inputs`: its indices read unsigned).  Eight
    columns at a time, then four, then one, each column's running sum held in a register
    over the whole row (a sum kept in memory would wait on its own store at every term)."""
    columns = x.shape[1]
    c = 0
    while c + 8 <= columns:
        t0, t1, t2, t3 = sums[c], sums[c + 1], sums[c + 2], sums[c + 3]
        t4, t5, t6, t7 = sums[c + 4], sums[c + 5], sums[c + 6], sums[c + 7]
        for k in range(start, stop):
            weight = data[k]
            source = x[inputs[k]]
            t0 += weight * source[c]
            t1 += weight * source[c + 1]
            t2 += weight * source[c + 2]
            t3 += weight * source[c + 3]
            t4 += weight * source[c + 4]
            t5 += weight * source[c + 5]
            t6 += weight * source[c + 6]
            t7 += weight * source[c + 7]
        sums[c], sums[c + 1], sums[c + 2], sums[c + 3] = t0, t1, t2, t3
        sums[c + 4], sums[c + 5], sums[c + 6], sums[c + 7] = t4, t5, t6, t7
        c += 8
    if c + 4 <= columns:
        t0, t1, t2, t3 = sums[c], sums[c + 1], sums[c + 2], sums[c + 3]
        for k in range(start, stop):
            weight = data[k]
            source = x[inputs[k]]
            t0 += weight * source[c]
            t1 += weight * source[c + 1]
            t2 += weight * source[c + 2]
            t3 += weight * source[c + 3]
        sums[c], sums[c + 1], sums[c + 2], sums[c + 3] = t0, t1, t2, t3
        c += 4
    while c < columns:
        t0 = sums[c]
        for k in range(start, stop):
            t0 += data[k] * x[inputs[k], c]
        sums[c] = t0
        c += 1


@njit(cache=True, nogil=True)
def _csr_matvec(indptr, indices, data, x, out):
    values = np.empty(x.shape[0], dtype=np.float32)
    values[:] = x
    inputs = indices.view(np.uint32)
    for row in range(out.shape[0]):
        total = np.float32(0.0)
        for k in range(np.uint64(indptr[row]), np.uint64(indptr[row + 1])):
            total += data[k] * values[inputs[k]]
        out[row] = total


@njit(cache=True, nogil=True)
def csr_matmul_add(indptr, indices, data, x, residual):
    """residual[r, :] += (sum_k data[k] * x[indices[k], :]): a sublayer's output added to
    the residual stream (`h + mlp(...)`), the sum taken first."""
    columns = x.shape[1]
    total = np.zeros(columns, dtype=np.float32)
    inputs = indices.view(np.uint32)
    for row in range(residual.shape[0]):
        start, stop = np.uint64(indptr[row]), np.uint64(indptr[row + 1])
        if start == stop:
            continue                       # h + 0 == h
        total[:] = 0.0
        _add_row_terms(inputs, data, start, stop, x, total)
        for column in range(columns):
            residual[row, column] += total[column]


@njit(cache=True, nogil=True)
def rms_norm(x, scale, eps, out):
    """Qwen3_5RMSNorm: out = x * rsqrt(mean(x^2) + eps) * scale, scale = 1 + weight; the sum
    of squares as `sum_of_squares` takes it, in every column."""
    dims, columns = x.shape
    if columns <= FEW_COLUMNS:
        lanes = np.empty(LANES, dtype=np.float32)
        for column in range(columns):
            _rms_norm_column(x[:, column], scale, eps, out[:, column], lanes)
        return
    squares = np.zeros((LANES, columns), dtype=np.float32)
    for d in range(dims):
        lane = squares[d % LANES]
        for column in range(columns):
            lane[column] += x[d, column] * x[d, column]
    inverse = np.empty(columns, dtype=np.float32)
    for column in range(columns):
        total = squares[0, column]
        for lane in range(1, LANES):
            total += squares[lane, column]
        inverse[column] = np.float32(1.0) / math.sqrt(total / np.float32(dims) + eps)
    for d in range(dims):
        weight = scale[d]
        for column in range(columns):
            out[d, column] = (x[d, column] * inverse[column]) * weight


@njit(cache=True, nogil=True)
def _rms_norm_column(x, scale, eps, out, lanes):
    squares = sum_of_squares(x, 0, x.shape[0], lanes)
    inverse = np.float32(1.0) / math.sqrt(squares / np.float32(x.shape[0]) + eps)
    for d in range(x.shape[0]):
        out[d] = (x[d] * inverse) * scale[d]


@njit(cache=True, nogil=True)
def sum_of_squares(values, start, length, lanes):
    """sum(values[start:start + length] ** 2), taken in LANES running sums (element i goes
    to sum i % LANES), then those sums in order: a fixed order on every machine, and one
    the compiler can keep in vector registers."""
    lanes[:] = 0.0
    whole = length - length % LANES
    for i in range(0, whole, LANES):
        for lane in range(LANES):
            value = values[start + i + lane]
            lanes[lane] += value * value
    for i in range(whole, length):
        value = values[start + i]
        lanes[i - whole] += value * value
    total = lanes[0]
    for lane in range(1, LANES):
        total += lanes[lane]
    return total


@njit(cache=True, nogil=True)
def silu(value):
    """x / (1 + exp(-x)) in float32.  Three cases need no exp, and give the formula's own
    float32 result: x >= 17 (exp(-x) < 4.2e-8 is below half an ulp of 1, so the divisor
    rounds to exactly 1 and the result is x), x == 0 (0 / 2), and x <= -89 (exp(89)
    overflows float32, and x / inf is -0)."""
    if value >= np.float32(17.0) or value == np.float32(0.0):
        return value
    if value <= np.float32(-89.0):
        return np.float32(-0.0)
    return value / (np.float32(1.0) + math.exp(-value))


@njit(cache=True, nogil=True)
def sigmoid(value):
    return np.float32(1.0) / (np.float32(1.0) + math.exp(-value))


@njit(cache=True, nogil=True)
def softplus(value):
    """torch's F.softplus (beta 1, threshold 20)."""
    if value > np.float32(20.0):
        return value
    return math.log1p(math.exp(value))


@njit(cache=True, nogil=True)
def silu_rows(x):
    """x = silu(x), elementwise, in place."""
    rows, columns = x.shape
    for row in range(rows):
        for column in range(columns):
            x[row, column] = silu(x[row, column])


@njit(cache=True, nogil=True)
def csr_scatter_add(indptr, indices, data, x, out):
    """out[indices[k], :] += data[k] * x[r, :] over row r's nonzeros: a transposed CSR
    matrix times x."""
    columns = x.shape[1]
    outputs = indices.view(np.uint32)
    for row in range(indptr.shape[0] - 1):
        source = x[row]
        for k in range(np.uint64(indptr[row]), np.uint64(indptr[row + 1])):
            weight = data[k]
            target = out[outputs[k]]
            for column in range(columns):
                target[column] += weight * source[column]


@njit(cache=True, nogil=True)
def mlp_add(gate_indptr, gate_indices, gate_data, gate_twins, gate_finite, family_table,
            family_inputs, family_units, family_weights, in_family, up_indptr, up_indices,
            up_data, down_indptr, down_indices, down_data, x, residual):
    """Qwen3_5MLP added to the residual: residual += down(silu(gate(x)) * up(x)).

    Unit by unit: its gate row, silu; where silu is exactly 0 in every column the unit adds
    exactly 0 (0 * up, then 0 * down), so its up row and down column are not read.  Otherwise
    its up row, the product, and its down column (`down_*`: CSR of down_proj's transpose, a
    row per unit) scattered into the sum, which is added to the residual at the end.
    `gate_twins` (`twin_rows`) marks the units whose next unit's gate row has the same
    columns: the two rows' sums are taken in one pass over the inputs (each input row read
    once for both), each row's terms in its own order, so the sums are the same as one row
    at a time.  Whether a unit is live is a count over the columns, not a search that stops
    at the first live one: the count runs in vector registers, and most units are dead.
    With few columns `_mlp_add_column` takes each column with scalar sums, row by row.  With
    more, the gate sums of the units in a family (`family_*`, `in_family`:
    `gate_families`) are taken first, as small dense products that load each input once
    for 16 units and every column: the same sums.  (On one column a family's panels, padded
    to 16 units, read more bytes than its CSR rows: the compiled machine alone ran 12%
    slower a token with them.)

    With more columns, too, a gate term whose input is exactly 0 in every column
    (`nonzero_rows`) is left out: in a family (`family_gates`), and in the other rows
    (`_kept_terms`) where every gate weight is finite (`gate_finite`) and at most half the
    families' inputs are nonzero (`mostly_zero`, the sign that the rows' copies pay: a
    spliced machine's gate rows read the text gate's dims, about 52 of their 60 terms, 0
    on the machine's own tokens; in the min build, where most are live, copying made four
    columns 8% slower).  Each such term is `w * 0`, ±0, and a sum that starts at +0 never
    becomes -0 (in round-to-nearest `a + b` is -0 only when both are), so adding ±0 to it
    changes no bit.  (On one column, leaving them out costs what it saves: the row's
    indices and weights are read either way, and finding the zero inputs costs a small
    machine's step 5%.)"""
    dims, columns = x.shape
    if columns <= FEW_COLUMNS:
        for column in range(columns):
            _mlp_add_column(gate_indptr, gate_indices, gate_data, gate_twins, up_indptr,
                            up_indices, up_data, down_indptr, down_indices, down_data,
                            x[:, column], residual[:, column])
        return
    nonzero = np.empty(dims, dtype=np.bool_)
    nonzero_rows(x, nonzero)
    gates = np.empty((in_family.shape[0] if family_table.shape[0] else 0, columns),
                     dtype=np.float32)
    family_gates(family_table, family_inputs, family_units, family_weights, x, nonzero,
                 gates)
    compact = gate_finite and mostly_zero(family_inputs, nonzero)
    kept_inputs = np.empty(dims, dtype=np.uint32)
    kept_data = np.empty(2 * dims, dtype=np.float32)
    gate_inputs, up_inputs = gate_indices.view(np.uint32), up_indices.view(np.uint32)
    down_outputs = down_indices.view(np.uint32)
    total = np.zeros((residual.shape[0], columns), dtype=np.float32)
    sums = np.empty((2, columns), dtype=np.float32)      # a unit's gate row, and its twin's
    first, second = sums[0], sums[1]
    up = np.empty(columns, dtype=np.float32)
    units = gate_indptr.shape[0] - 1
    unit = 0
    while unit < units:
        start, stop = np.uint64(gate_indptr[unit]), np.uint64(gate_indptr[unit + 1])
        count = 2 if gate_twins[unit] else 1           # twins are in a family together or not
        if in_family[unit]:
            for twin in range(count):
                for column in range(columns):
                    sums[twin, column] = gates[unit + twin, column]
        elif compact:
            sums[:, :] = 0.0
            kept = _kept_terms(gate_inputs, gate_data, start, stop, count, nonzero,
                               kept_inputs, kept_data)
            if count == 2:
                _add_twin_row_terms(kept_inputs, kept_data, 0, kept, x, first, second)
            else:
                _add_row_terms(kept_inputs, kept_data, 0, kept, x, first)
        elif count == 2:
            sums[:, :] = 0.0
            _add_twin_row_terms(gate_inputs, gate_data, start, stop, x, first, second)
        else:
            first[:] = 0.0
            _add_row_terms(gate_inputs, gate_data, start, stop, x, first)
        for twin in range(count):
            this = unit + twin
            gate = sums[twin]
            live = 0                                  # silu(x <= -89) is exactly -0
            for column in range(columns):             # (a NaN gate is live: NaN * up)
                live += not gate[column] <= np.float32(-89.0)
            if live == 0:
                continue
            for column in range(columns):
                gate[column] = silu(gate[column])
            up[:] = 0.0
            _add_row_terms(up_inputs, up_data, np.uint64(up_indptr[this]),
                           np.uint64(up_indptr[this + 1]), x, up)
            for column in range(columns):
                gate[column] = gate[column] * up[column]
            for k in range(np.uint64(down_indptr[this]), np.uint64(down_indptr[this + 1])):
                weight = down_data[k]
                target = total[down_outputs[k]]
                for column in range(columns):
                    target[column] += weight * gate[column]
        unit += count
    for row in range(residual.shape[0]):
        for column in range(columns):
            residual[row, column] += total[row, column]


@njit(cache=True, nogil=True)
def _add_twin_row_terms(inputs, data, start, stop, x, first, second):
    """`_add_row_terms` for a row (its terms start to stop) and its twin (the same inputs,
    the next stop - start weights) at once, each input row read once for both: eight
    columns at a time, then four, then one, the sums in registers."""
    columns = x.shape[1]
    offset = stop - start
    c = 0
    while c + 8 <= columns:
        t0, t1, t2, t3 = first[c], first[c + 1], first[c + 2], first[c + 3]
        t4, t5, t6, t7 = first[c + 4], first[c + 5], first[c + 6], first[c + 7]
        u0, u1, u2, u3 = second[c], second[c + 1], second[c + 2], second[c + 3]
        u4, u5, u6, u7 = second[c + 4], second[c + 5], second[c + 6], second[c + 7]
        for k in range(start, stop):
            weight, twin = data[k], data[k + offset]
            source = x[inputs[k]]
            v0, v1, v2, v3 = source[c], source[c + 1], source[c + 2], source[c + 3]
            v4, v5, v6, v7 = source[c + 4], source[c + 5], source[c + 6], source[c + 7]
            t0 += weight * v0
            t1 += weight * v1
            t2 += weight * v2
            t3 += weight * v3
            t4 += weight * v4
            t5 += weight * v5
            t6 += weight * v6
            t7 += weight * v7
            u0 += twin * v0
            u1 += twin * v1
            u2 += twin * v2
            u3 += twin * v3
            u4 += twin * v4
            u5 += twin * v5
            u6 += twin * v6
            u7 += twin * v7
        first[c], first[c + 1], first[c + 2], first[c + 3] = t0, t1, t2, t3
        first[c + 4], first[c + 5], first[c + 6], first[c + 7] = t4, t5, t6, t7
        second[c], second[c + 1], second[c + 2], second[c + 3] = u0, u1, u2, u3
        second[c + 4], second[c + 5], second[c + 6], second[c + 7] = u4, u5, u6, u7
        c += 8
    if c + 4 <= columns:
        t0, t1, t2, t3 = first[c], first[c + 1], first[c + 2], first[c + 3]
        u0, u1, u2, u3 = second[c], second[c + 1], second[c + 2], second[c + 3]
        for k in range(start, stop):
            weight, twin = data[k], data[k + offset]
            source = x[inputs[k]]
            v0, v1, v2, v3 = source[c], source[c + 1], source[c + 2], source[c + 3]
            t0 += weight * v0
            t1 += weight * v1
            t2 += weight * v2
            t3 += weight * v3
            u0 += twin * v0
            u1 += twin * v1
            u2 += twin * v2
            u3 += twin * v3
        first[c], first[c + 1], first[c + 2], first[c + 3] = t0, t1, t2, t3
        second[c], second[c + 1], second[c + 2], second[c + 3] = u0, u1, u2, u3
        c += 4
    while c < columns:
        t0, u0 = first[c], second[c]
        for k in range(start, stop):
            value = x[inputs[k], c]
            t0 += data[k] * value
            u0 += data[k + offset] * value
        first[c], second[c] = t0, u0
        c += 1


@njit(cache=True, nogil=True)
def nonzero_rows(x, nonzero):
    """nonzero[r] = x[r, c] is not 0 in some column c (a NaN counts as nonzero)."""
    for row in range(x.shape[0]):
        seen = False                                   # no early exit: the loop vectorises
        for column in range(x.shape[1]):
            seen |= x[row, column] != np.float32(0.0)
        nonzero[row] = seen


@njit(cache=True, nogil=True)
def mostly_zero(inputs, nonzero):
    """`inputs` is not empty and at most half of it (with repeats) is `nonzero`."""
    live = 0
    for k in range(inputs.shape[0]):
        live += nonzero[inputs[k]]
    return inputs.shape[0] > 0 and 2 * live <= inputs.shape[0]


@njit(cache=True, nogil=True)
def _kept_terms(inputs, data, start, stop, rows, nonzero, kept_inputs, kept_data):
    """The terms start to stop - 1 of a CSR row (and, where `rows` is 2, of its twin, whose
    weights follow at stop - start) whose inputs are `nonzero`, in order: their count n,
    their inputs in kept_inputs[:n], their weights in kept_data[:n] (the twin's in
    kept_data[n:2n]), for `_add_row_terms` and `_add_twin_row_terms` from 0 to n.  Every
    term is written and the count moves on only for a kept one: no branch to mispredict."""
    kept = 0
    for k in range(start, stop):
        source = inputs[k]
        kept_inputs[kept] = source
        kept_data[kept] = data[k]
        kept += nonzero[source]
    if rows == 2:
        offset, twin = stop - start, 0
        for k in range(start, stop):
            kept_data[kept + twin] = data[k + offset]
            twin += nonzero[inputs[k]]
    return kept


@njit(cache=True, nogil=True)
def _mlp_add_column(gate_indptr, gate_indices, gate_data, gate_twins, up_indptr, up_indices,
                    up_data, down_indptr, down_indices, down_data, x, residual):
    """`mlp_add` for a single column (vectors), with scalar sums.  A unit and its twin (the
    next unit, whose gate row has the same columns: the two units of a step) gather each
    input once and keep two running sums, each row's terms still added in its own order,
    so the sums are those of one row at a time; the units then go on one after the other."""
    values = np.empty(x.shape[0], dtype=np.float32)      # the column, contiguous
    values[:] = x
    gate_inputs, up_inputs = gate_indices.view(np.uint32), up_indices.view(np.uint32)
    down_outputs = down_indices.view(np.uint32)
    total = np.zeros(residual.shape[0], dtype=np.float32)
    units = gate_indptr.shape[0] - 1
    unit = 0
    while unit < units:
        start, stop = np.uint64(gate_indptr[unit]), np.uint64(gate_indptr[unit + 1])
        first = np.float32(0.0)
        second = np.float32(0.0)
        count = 1
        if gate_twins[unit]:
            offset = stop - start
            for k in range(start, stop):
                value = values[gate_inputs[k]]
                first += gate_data[k] * value
                second += gate_data[k + offset] * value
            count = 2
        else:
            for k in range(start, stop):
                first += gate_data[k] * values[gate_inputs[k]]
        for twin in range(count):
            gate = silu(first if twin == 0 else second)
            if gate == np.float32(0.0):
                continue
            this = unit + twin
            up = np.float32(0.0)
            for k in range(np.uint64(up_indptr[this]), np.uint64(up_indptr[this + 1])):
                up += up_data[k] * values[up_inputs[k]]
            product = gate * up
            for k in range(np.uint64(down_indptr[this]), np.uint64(down_indptr[this + 1])):
                total[down_outputs[k]] += down_data[k] * product
        unit += count
    for row in range(residual.shape[0]):
        residual[row] += total[row]


@njit(cache=True, nogil=True)
def argmax_columns(logits, out):
    """The first index of each column's largest value (torch.argmax's tie rule)."""
    rows, columns = logits.shape
    for column in range(columns):
        best, best_row = logits[0, column], 0
        for row in range(1, rows):
            if logits[row, column] > best:
                best, best_row = logits[row, column], row
        out[column] = best_row


@njit(cache=True, nogil=True)
def twin_rows(indptr, indices):
    """twins[r]: row r + 1 has the same columns as row r (and r is not itself the second of
    a pair), read in order from the first row: the pairs `mlp_add` sums in one pass."""
    rows = indptr.shape[0] - 1
    twins = np.zeros(rows, dtype=np.bool_)
    row = 0
    while row + 1 < rows:
        start, middle, stop = indptr[row], indptr[row + 1], indptr[row + 2]
        same = middle - start == stop - middle
        k = 0
        while same and k < middle - start:
            same = indices[start + k] == indices[middle + k]
            k += 1
        if same:
            twins[row] = True
            row += 2
        else:
            row += 1
    return twins
