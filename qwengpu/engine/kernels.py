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
    csr_matmul_rows(indptr, indices, data, x, out, 0, out.shape[0])


@njit(cache=True, nogil=True)
def csr_matmul_rows(indptr, indices, data, x, out, first, last):
    """`csr_matmul`'s rows `first` to `last` - 1 (separate threads can take separate rows:
    each row's sum is its own)."""
    columns = x.shape[1]
    if columns <= FEW_COLUMNS:
        for column in range(columns):
            _csr_matvec(indptr, indices, data, x[:, column], out[:, column], first, last)
        return
    inputs = indices.view(np.uint32)
    for row in range(first, last):
        target = out[row]
        target[:] = 0.0
        _add_row_terms(inputs, data, np.uint64(indptr[row]), np.uint64(indptr[row + 1]), x, target)


@njit(cache=True, nogil=True)
def row_bounds(indptr, parts):
    """A CSR matrix's rows cut into `parts` runs of about as many nonzeros each (int64
    bounds: part p is rows bounds[p] to bounds[p + 1] - 1, perhaps none)."""
    rows = indptr.shape[0] - 1
    bounds = np.empty(parts + 1, dtype=np.int64)
    bounds[0], bounds[parts] = 0, rows
    for part in range(1, parts):
        cut = np.searchsorted(indptr, indptr[rows] * part // parts)
        bounds[part] = min(max(cut, bounds[part - 1]), rows)
    return bounds


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
def _csr_matvec(indptr, indices, data, x, out, first, last):
    values = np.empty(x.shape[0], dtype=np.float32)
    values[:] = x
    inputs = indices.view(np.uint32)
    for row in range(first, last):
        total = np.float32(0.0)
        for k in range(np.uint64(indptr[row]), np.uint64(indptr[row + 1])):
            total += data[k] * values[inputs[k]]
        out[row] = total


@njit(cache=True, nogil=True)
def csr_matmul_add(indptr, indices, data, x, residual):
    """residual[r, :] += (sum_k data[k] * x[indices[k], :]): a sublayer's output added to
    the residual stream (`h + mlp(...)`), the sum taken first."""
    csr_matmul_add_rows(indptr, indices, data, x, residual, 0, residual.shape[0])


@njit(cache=True, nogil=True)
def csr_matmul_add_rows(indptr, indices, data, x, residual, first, last):
    """`csr_matmul_add`'s rows `first` to `last` - 1."""
    columns = x.shape[1]
    total = np.zeros(columns, dtype=np.float32)
    inputs = indices.view(np.uint32)
    for row in range(first, last):
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
def mlp_add(gate_indptr, gate_indices, gate_data, gate_twins, family_table, family_inputs,
            family_units, family_weights, in_family, up_indptr, up_indices, up_data,
            down_indptr, down_indices, down_data, x, residual):
    """Qwen3_5MLP added to the residual: residual += down(silu(gate(x)) * up(x)).

    In three steps, each of which separate threads can share (`shared_layers`): the gate
    sums of the units in a family (`family_*`, `in_family`: `gate_families`), taken first
    as small dense products that load each input once for 16 units and every column, from
    three columns on; then unit by unit (`mlp_units`) its gate row, silu, and where silu
    is exactly 0 in every column the unit adds exactly 0 (0 * up, then 0 * down), so its up
    row and down column are not read, else its up row and the product; then the live
    units' down columns (`down_*`: CSR of down_proj's transpose, a row per unit) scattered
    into a sum per output row, units in order (`mlp_down_rows`), which is added to the
    residual at the end.  (On one column a family's panels, padded to 16 units, read more
    bytes than its CSR rows: the compiled machine alone ran 12% slower a token with
    them.)"""
    columns = x.shape[1]
    units = gate_indptr.shape[0] - 1
    gates, hidden, live, alive = mlp_buffers(units, family_table, columns)
    if columns > FEW_COLUMNS:
        family_gates(family_table, family_inputs, family_units, family_weights, x, gates)
    mlp_units(gate_indptr, gate_indices, gate_data, gate_twins, gates, in_family, up_indptr,
              up_indices, up_data, x, hidden, live, alive, 0, units)
    total = np.zeros((residual.shape[0], columns), dtype=np.float32)
    mlp_down_rows(down_indptr, down_indices, down_data, hidden, live, alive, total, residual,
                  0, residual.shape[0])


@njit(cache=True, nogil=True)
def mlp_buffers(units, family_table, columns):
    """`mlp_units`' arrays: the family gate sums (none on few columns or without families),
    each unit's silu(gate) * up per column, whether it is live, and, on few columns,
    whether it is live in each column."""
    families = columns > FEW_COLUMNS and family_table.shape[0] > 0
    gates = np.empty((units if families else 0, columns), dtype=np.float32)
    hidden = np.empty((units, columns), dtype=np.float32)
    live = np.zeros(units, dtype=np.bool_)
    alive = np.zeros((units if columns <= FEW_COLUMNS else 0, columns), dtype=np.bool_)
    return gates, hidden, live, alive


@njit(cache=True, nogil=True)
def mlp_units(gate_indptr, gate_indices, gate_data, gate_twins, gates, in_family, up_indptr,
              up_indices, up_data, x, hidden, live, alive, first, last):
    """Units `first` to `last` - 1 of `mlp_add`: hidden[u, c] = silu(gate) * up where unit u
    is live, `live[u]` whether it is (else hidden[u] is not written).  `gate_twins`
    (`twin_rows`) marks the units whose next unit's gate row has the same columns: the two
    rows' sums are taken in one pass over the inputs (each input read once for both), each
    row's terms in its own order, so the sums are the same as one row at a time.

    On few columns (`alive` has a row per unit) each column is taken with scalar sums, and
    a unit is live in a column where silu is not exactly 0 (`alive[u, c]`).  On more,
    whether a unit is live is a count over the columns, not a search that stops at the
    first live one: the count runs in vector registers, and most units are dead; a unit in
    a family takes its gate sums from `gates`."""
    columns = x.shape[1]
    few = alive.shape[0] > 0
    gate_inputs, up_inputs = gate_indices.view(np.uint32), up_indices.view(np.uint32)
    values = np.ascontiguousarray(x.T) if few else np.empty((0, 0), dtype=np.float32)
    sums = np.empty((2, columns), dtype=np.float32)      # a unit's gate row, and its twin's
    up = np.empty(columns, dtype=np.float32)
    unit = first
    while unit < last:
        start, stop = np.uint64(gate_indptr[unit]), np.uint64(gate_indptr[unit + 1])
        count = 2 if gate_twins[unit] and unit + 1 < last else 1  # twins share a family
        if few:
            _few_column_gates(gate_inputs, gate_data, start, stop, count, values, sums)
        elif in_family[unit]:
            for twin in range(count):
                for column in range(columns):
                    sums[twin, column] = gates[unit + twin, column]
        elif count == 2:
            sums[:, :] = 0.0
            _add_twin_row_terms(gate_inputs, gate_data, start, stop, x, sums[0], sums[1])
        else:
            sums[0, :] = 0.0
            _add_row_terms(gate_inputs, gate_data, start, stop, x, sums[0])
        for twin in range(count):
            this = unit + twin
            gate = sums[twin]
            up_start, up_stop = np.uint64(up_indptr[this]), np.uint64(up_indptr[this + 1])
            if few:
                for column in range(columns):
                    value = silu(gate[column])
                    if value == np.float32(0.0):
                        continue
                    total = np.float32(0.0)
                    source = values[column]
                    for k in range(up_start, up_stop):
                        total += up_data[k] * source[up_inputs[k]]
                    hidden[this, column] = value * total
                    alive[this, column] = True
                    live[this] = True
                continue
            count_live = 0                            # silu(x <= -89) is exactly -0
            for column in range(columns):
                count_live += gate[column] > np.float32(-89.0)
            if count_live == 0:
                continue
            up[:] = 0.0
            _add_row_terms(up_inputs, up_data, up_start, up_stop, x, up)
            for column in range(columns):
                hidden[this, column] = silu(gate[column]) * up[column]
            live[this] = True
        unit += count


@njit(cache=True, nogil=True)
def _few_column_gates(inputs, data, start, stop, count, values, sums):
    """A unit's gate row (and its twin's, the next stop - start weights, when `count` is 2)
    on each column of `values` ([columns, dims]), with scalar sums."""
    offset = stop - start
    for column in range(values.shape[0]):
        source = values[column]
        first = np.float32(0.0)
        second = np.float32(0.0)
        if count == 2:
            for k in range(start, stop):
                value = source[inputs[k]]
                first += data[k] * value
                second += data[k + offset] * value
        else:
            for k in range(start, stop):
                first += data[k] * source[inputs[k]]
        sums[0, column] = first
        sums[1, column] = second


@njit(cache=True, nogil=True)
def mlp_down_rows(down_indptr, down_indices, down_data, hidden, live, alive, total, residual,
                  first, last):
    """Output rows `first` to `last` - 1 of `mlp_add`'s down projection: every live unit's
    down column (its entries in those rows) scattered into `total` (zero there), units in
    order, so each row's sum is the same whichever rows are taken together; then added to
    the residual.  On few columns a unit adds only to the columns it is live in."""
    columns = hidden.shape[1]
    few = alive.shape[0] > 0
    outputs = down_indices.view(np.uint32)
    every_row = first == 0 and last == total.shape[0]
    low, high = np.uint32(first), np.uint32(last)
    for unit in range(live.shape[0]):
        if not live[unit]:
            continue
        start, stop = np.uint64(down_indptr[unit]), np.uint64(down_indptr[unit + 1])
        if not every_row:                       # its entries' rows ascend
            column_rows = outputs[start:stop]
            start, stop = (start + np.uint64(np.searchsorted(column_rows, low)),
                           start + np.uint64(np.searchsorted(column_rows, high)))
        for k in range(start, stop):
            weight = down_data[k]
            target = total[outputs[k]]
            for column in range(columns):
                if few and not alive[unit, column]:
                    continue
                target[column] += weight * hidden[unit, column]
    for row in range(first, last):
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
