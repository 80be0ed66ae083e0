"""The engine's dense products: a weight matrix kept whole, in panels, times a batch of
columns (numba, float32).

A spliced checkpoint's base layers, its embedding and `lm_head` are dense.  They are stored
transposed in panels of `PANEL_ROWS` output rows (`pack_panels`): each panel's weights are
one contiguous run, which the running sums of its rows (in the first-level cache) advance
along term after term while the weights stream past in the order they lie in memory.  The
sums are those of the CSR kernels in `qwengpu.engine.kernels`, in the same order (k
ascending, no fused multiply-add), so a column's result never depends on the other columns
or on how the panels are shared over threads (`dense_panels`).  A weight is float32 or
bfloat16 bits (uint16), widened exactly as it is loaded (`weight_value`).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

# A dense matrix is kept in panels of this many rows (`pack_panels`): a panel's weights are
# one contiguous run, which the sums of its rows advance along, term after term.
PANEL_ROWS = 128
# The terms (a run of a panel's weights: 128 KB of bfloat16s at 2,048 inner) every group of
# columns takes before the panel moves on, so that a batch of more than 8 columns reads the
# panel from memory once and from the second-level cache after.
PANEL_TERMS = 512


@intrinsic
def weight_value(typingctx, weight):
    """A dense weight as float32: itself, or bfloat16 bits (uint16) moved up 16 places and
    read as a float32, exactly (an LLVM zero-extend, shift and bitcast, which vectorise)."""
    if weight == types.float32:
        return types.float32(weight), lambda context, builder, signature, args: args[0]
    if weight != types.uint16:
        return None

    def widen(context, builder, signature, args):
        word = builder.zext(args[0], ir.IntType(32))
        return builder.bitcast(builder.shl(word, ir.Constant(ir.IntType(32), 16)),
                               ir.FloatType())

    return types.float32(weight), widen


def pack_panels(operand: np.ndarray) -> np.ndarray:
    """A dense product's operand [inner, rows] as `dense_product` reads it: [panels, inner,
    PANEL_ROWS], panel p holding rows p * PANEL_ROWS onwards, the last padded with zeros."""
    inner, rows = operand.shape
    panels = -(-rows // PANEL_ROWS)
    packed = np.zeros((panels, inner, PANEL_ROWS), dtype=operand.dtype)
    whole = rows // PANEL_ROWS
    packed[:whole] = operand[:, :whole * PANEL_ROWS].reshape(
        inner, whole, PANEL_ROWS).transpose(1, 0, 2)
    if whole < panels:
        packed[whole, :, :rows - whole * PANEL_ROWS] = operand[:, whole * PANEL_ROWS:]
    return packed


def unpack_panels(packed: np.ndarray, rows: int) -> np.ndarray:
    """`pack_panels`' operand again ([inner, rows], a copy)."""
    panels, inner, width = packed.shape
    return np.ascontiguousarray(packed.transpose(1, 0, 2).reshape(inner, panels * width)[:, :rows])


@njit(cache=True, nogil=True)
def dense_product(panels, x, out):
    """out = operand.T @ x for a dense operand [inner, rows] kept in panels (`Matrix.stored`,
    `pack_panels`: a weight kept transposed, or down_proj's transpose as it is):
    out[r, c] = sum over k of operand[k, r] * x[k, c], k ascending from 0, the sums of
    `csr_matmul` and `csr_scatter_add`, so a column's result never depends on the other
    columns (a BLAS gemm's blocking would).  `dense_panels` does the work."""
    dense_panels(panels, x, out, 0, panels.shape[0])


@njit(cache=True, nogil=True)
def dense_panels(panels, x, out, first, last):
    """`dense_product`'s rows in panels `first` to `last` - 1 (separate threads can take
    separate panels).  A panel's running sums (128 rows a column: 512 bytes) stay in the
    first-level cache while its weights stream past, a contiguous run, read once for all
    the columns: eight columns a pass two terms at a time (`_eight_columns_two_terms`), then
    four, two or one column four terms at a time, each weight loaded once for the columns
    of its pass; the loops over a panel's rows run in vector registers.

    `panels` is float32, or uint16 holding bfloat16 bits (`Matrix.bf16`): each weight is
    then widened as it is loaded (`weight_value`: exact), so half the bytes are read, which
    is what bounds a product of few columns; the sums are the same."""
    inner, width = panels.shape[1], panels.shape[2]
    rows, columns = out.shape[0], x.shape[1]
    sums = np.empty((columns, width), dtype=np.float32)
    whole = inner - inner % 4
    for p in range(first, last):
        panel = panels[p]
        sums[:, :] = 0.0
        for start in range(0, whole, PANEL_TERMS):
            stop = min(whole, start + PANEL_TERMS)
            column = 0
            while column + 8 <= columns:
                _eight_columns_two_terms(sums, panel, x, start, stop, column)
                column += 8
            if column + 4 <= columns:
                _four_columns_four_terms(sums, panel, x, start, stop, column)
                column += 4
            if column + 2 <= columns:
                _two_columns_four_terms(sums, panel, x, start, stop, column)
                column += 2
            if column < columns:
                _one_column_four_terms(sums[column], panel, x[:, column], start, stop)
        for k in range(whole, inner):
            _add_one_term(sums, panel[k], x, k)
        base = p * width
        for r in range(min(width, rows - base)):
            for c in range(columns):
                out[base + r, c] = sums[c, r]


@njit(cache=True, nogil=True)
def _eight_columns_two_terms(sums, panel, x, start, stop, c):
    """sums[c + j, r] += panel[k, r] x[k, c + j], then the term of k + 1, for the eight
    columns from c and k from start to stop (pairs): each weight loaded once for the eight,
    which more terms a pass would not leave registers for."""
    t0, t1, t2, t3 = sums[c], sums[c + 1], sums[c + 2], sums[c + 3]
    t4, t5, t6, t7 = sums[c + 4], sums[c + 5], sums[c + 6], sums[c + 7]
    for k in range(start, stop, 2):
        w0, w1 = panel[k], panel[k + 1]
        a0, a1, b0, b1 = x[k, c], x[k + 1, c], x[k, c + 1], x[k + 1, c + 1]
        d0, d1, e0, e1 = x[k, c + 2], x[k + 1, c + 2], x[k, c + 3], x[k + 1, c + 3]
        f0, f1, g0, g1 = x[k, c + 4], x[k + 1, c + 4], x[k, c + 5], x[k + 1, c + 5]
        h0, h1, i0, i1 = x[k, c + 6], x[k + 1, c + 6], x[k, c + 7], x[k + 1, c + 7]
        for r in range(w0.shape[0]):
            p, q = weight_value(w0[r]), weight_value(w1[r])
            t0[r] = (t0[r] + p * a0) + q * a1
            t1[r] = (t1[r] + p * b0) + q * b1
            t2[r] = (t2[r] + p * d0) + q * d1
            t3[r] = (t3[r] + p * e0) + q * e1
            t4[r] = (t4[r] + p * f0) + q * f1
            t5[r] = (t5[r] + p * g0) + q * g1
            t6[r] = (t6[r] + p * h0) + q * h1
            t7[r] = (t7[r] + p * i0) + q * i1


@njit(cache=True, nogil=True)
def _four_columns_four_terms(sums, panel, x, start, stop, c):
    t0, t1, t2, t3 = sums[c], sums[c + 1], sums[c + 2], sums[c + 3]
    for k in range(start, stop, 4):
        w0, w1, w2, w3 = panel[k], panel[k + 1], panel[k + 2], panel[k + 3]
        a0, a1, a2, a3 = x[k, c], x[k + 1, c], x[k + 2, c], x[k + 3, c]
        b0, b1, b2, b3 = x[k, c + 1], x[k + 1, c + 1], x[k + 2, c + 1], x[k + 3, c + 1]
        d0, d1, d2, d3 = x[k, c + 2], x[k + 1, c + 2], x[k + 2, c + 2], x[k + 3, c + 2]
        e0, e1, e2, e3 = x[k, c + 3], x[k + 1, c + 3], x[k + 2, c + 3], x[k + 3, c + 3]
        for r in range(w0.shape[0]):
            p, q = weight_value(w0[r]), weight_value(w1[r])
            s, u = weight_value(w2[r]), weight_value(w3[r])
            t0[r] = (((t0[r] + p * a0) + q * a1) + s * a2) + u * a3
            t1[r] = (((t1[r] + p * b0) + q * b1) + s * b2) + u * b3
            t2[r] = (((t2[r] + p * d0) + q * d1) + s * d2) + u * d3
            t3[r] = (((t3[r] + p * e0) + q * e1) + s * e2) + u * e3


@njit(cache=True, nogil=True)
def _two_columns_four_terms(sums, panel, x, start, stop, c):
    t0, t1 = sums[c], sums[c + 1]
    for k in range(start, stop, 4):
        w0, w1, w2, w3 = panel[k], panel[k + 1], panel[k + 2], panel[k + 3]
        a0, a1, a2, a3 = x[k, c], x[k + 1, c], x[k + 2, c], x[k + 3, c]
        b0, b1, b2, b3 = x[k, c + 1], x[k + 1, c + 1], x[k + 2, c + 1], x[k + 3, c + 1]
        for r in range(w0.shape[0]):
            p, q = weight_value(w0[r]), weight_value(w1[r])
            s, u = weight_value(w2[r]), weight_value(w3[r])
            t0[r] = (((t0[r] + p * a0) + q * a1) + s * a2) + u * a3
            t1[r] = (((t1[r] + p * b0) + q * b1) + s * b2) + u * b3


@njit(cache=True, nogil=True)
def _one_column_four_terms(target, panel, values, start, stop):
    for k in range(start, stop, 4):
        w0, w1, w2, w3 = panel[k], panel[k + 1], panel[k + 2], panel[k + 3]
        v0, v1, v2, v3 = values[k], values[k + 1], values[k + 2], values[k + 3]
        for r in range(w0.shape[0]):
            target[r] = (((target[r] + weight_value(w0[r]) * v0) + weight_value(w1[r]) * v1)
                         + weight_value(w2[r]) * v2) + weight_value(w3[r]) * v3


@njit(cache=True, nogil=True)
def _add_one_term(sums, weights, x, k):
    """sums[c, r] += weights[r] x[k, c] for every column c."""
    for column in range(x.shape[1]):
        value = x[k, column]
        target = sums[column]
        for r in range(weights.shape[0]):
            target[r] += weight_value(weights[r]) * value
