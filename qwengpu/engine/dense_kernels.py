"""The engine's dense products: a weight matrix kept whole, in panels, times a batch of
columns (numba, float32).

A spliced checkpoint's base layers, its embedding and `lm_head` are dense.  They are stored
transposed in panels of `PANEL_ROWS` output rows (`pack_panels`): each panel's weights are
one contiguous run, which the running sums of its rows (held in vector registers:
`register_blocks`) advance along term after term while the weights stream past in the order
they lie in memory.  The sums are those of the CSR kernels in `qwengpu.engine.kernels`, in
the same order (k ascending, no fused multiply-add), so a column's result never depends on
the other columns or on how the panels are shared over threads (`dense_panels`).  A weight
is float32 or bfloat16 bits (uint16), widened exactly as it is loaded.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from qwengpu.engine.register_blocks import LANES, block_product

# A dense matrix is kept in panels of this many rows (`pack_panels`), one register block's:
# a panel's weights are one contiguous run, which the sums of its rows advance along.
PANEL_ROWS = LANES
# The terms (a run of a panel's weights: 16 KB of bfloat16s) every group of eight columns
# takes before the panel moves on, so that a batch of more than eight columns reads the
# panel from memory once and from the first-level cache after.
PANEL_TERMS = 512

_EIGHT, _FOUR, _TWO, _ONE = (block_product(columns) for columns in (8, 4, 2, 1))
_EIGHT_GATHERED, _FOUR_GATHERED, _TWO_GATHERED, _ONE_GATHERED = (
    block_product(columns, gathered=True) for columns in (8, 4, 2, 1))
_NO_ROWS = np.zeros(0, dtype=np.int64)    # `add_panel_terms`' rows: those of the terms


def pack_panels(operand: np.ndarray, width: int = PANEL_ROWS) -> np.ndarray:
    """A dense product's operand [inner, rows] as `dense_product` reads it: [panels, inner,
    width], panel p holding rows p * width onwards, the last padded with zeros."""
    inner, rows = operand.shape
    panels = -(-rows // width)
    packed = np.zeros((panels, inner, width), dtype=operand.dtype)
    whole = rows // width
    packed[:whole] = operand[:, :whole * width].reshape(inner, whole, width).transpose(1, 0, 2)
    if whole < panels:
        packed[whole, :, :rows - whole * width] = operand[:, whole * width:]
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
    separate panels).  A panel's 16 rows and eight columns are one register block
    (`register_blocks`): their sums stay in vector registers while the panel's weights
    stream past, each weight loaded once for the eight; then four, two or one column.  A
    batch of more than eight columns takes the panel `PANEL_TERMS` terms at a time for every
    group of eight, so its weights come from memory once and from the first-level cache
    after.

    `panels` is float32, or uint16 holding bfloat16 bits (`Matrix.bf16`): each weight is
    then widened as it is loaded (exact), so half the bytes are read, which is what bounds
    a product of few columns; the sums are the same."""
    inner, width = panels.shape[1], panels.shape[2]
    sums = np.empty((x.shape[1], width), dtype=np.float32)
    rows, columns = out.shape[0], x.shape[1]
    for p in range(first, last):
        panel = panels[p]
        sums[:, :] = 0.0
        for start in range(0, inner, PANEL_TERMS):
            add_panel_terms(panel, x, sums, start, min(inner, start + PANEL_TERMS),
                            _NO_ROWS, _NO_ROWS)
        base = p * width
        for r in range(min(width, rows - base)):
            for c in range(columns):
                out[base + r, c] = sums[c, r]


@njit(cache=True, nogil=True)
def add_panel_terms(panel, x, sums, start, stop, panel_rows, x_rows):
    """sums[c, r] += terms `start` to `stop` - 1 of one panel ([terms, PANEL_ROWS]) times
    x, for every column c of x, in register blocks of eight columns, then four, two or one.
    Term k is panel row k times x's row k, or, where `x_rows` is not empty, panel row
    `panel_rows[k]` times x's row `x_rows[k]` (`block_product(gathered=True)`: some of the
    panel's rows and some of x's, with no copy of them)."""
    columns = x.shape[1]
    gathered = x_rows.shape[0] > 0
    column = 0
    while column + 8 <= columns:
        if gathered:
            _EIGHT_GATHERED(panel, x, sums, start, stop, column, panel_rows, x_rows)
        else:
            _EIGHT(panel, x, sums, start, stop, column, panel_rows, x_rows)
        column += 8
    if column + 4 <= columns:
        if gathered:
            _FOUR_GATHERED(panel, x, sums, start, stop, column, panel_rows, x_rows)
        else:
            _FOUR(panel, x, sums, start, stop, column, panel_rows, x_rows)
        column += 4
    if column + 2 <= columns:
        if gathered:
            _TWO_GATHERED(panel, x, sums, start, stop, column, panel_rows, x_rows)
        else:
            _TWO(panel, x, sums, start, stop, column, panel_rows, x_rows)
        column += 2
    if column < columns:
        if gathered:
            _ONE_GATHERED(panel, x, sums, start, stop, column, panel_rows, x_rows)
        else:
            _ONE(panel, x, sums, start, stop, column, panel_rows, x_rows)
