"""The engine's dense products: a weight matrix kept whole, in panels, times a batch of
columns (numba, float32).

A spliced checkpoint's base layers, its embedding and `lm_head` are dense.  They are stored
transposed in panels of `PANEL_ROWS` output rows (`pack_panels`): each panel's weights are
one contiguous run, which the running sums of its rows (held in vector registers:
`register_blocks`) advance along term after term while the weights stream past in the order
they lie in memory.  The sums are those of the CSR kernels in `qwengpu.engine.kernels`, in
the same order (k ascending, no fused multiply-add), so a column's result never depends on
the other columns or on how the panels are shared over threads (`dense_panels`).  A weight
is float32 or bfloat16 bits (uint16), widened exactly as it is loaded; a bfloat16 panel
keeps its terms in pairs (`register_blocks.PAIRED`), two terms' weights of a row in one
32-bit word.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from qwengpu.engine.register_blocks import LANES, PAIRED, block_product

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


_PANELS_A_BLOCK = 256        # `pack_panels` packs this many panels at a time


def pack_panels(operand: np.ndarray, width: int = PANEL_ROWS,
                columns: np.ndarray | None = None) -> np.ndarray:
    """A dense product's operand [inner, rows] as `dense_product` reads it (`columns`,
    ascending: only those of its columns, in that order): float32 as [panels, inner,
    width], panel p holding rows p * width onwards, the last padded with zeros; bfloat16
    bits (uint16) with each panel's terms in pairs, [panels, ceil(inner / 2), 2 * width]
    (entry [p, m, 2 r + t]: row p * width + r's weight of term 2 m + t, an odd inner's last
    pair padded with a zero term, which no product adds).  A block of panels at a time, so
    that no temporary is the size of the operand (a 248,320-row `lm_head`)."""
    inner = operand.shape[0]
    rows = operand.shape[1] if columns is None else columns.shape[0]
    panels = -(-rows // width)
    paired = operand.dtype == np.uint16
    if paired:
        packed = np.zeros((panels, -(-inner // PAIRED), PAIRED * width), dtype=np.uint16)
        by_term = packed.reshape(packed.shape[:2] + (width, PAIRED))
    else:
        packed = np.zeros((panels, inner, width), dtype=operand.dtype)
    for first in range(0, panels, _PANELS_A_BLOCK):
        last = min(panels, first + _PANELS_A_BLOCK)
        low, high = first * width, min(rows, last * width)
        block = np.zeros((inner, (last - first) * width), dtype=operand.dtype)
        block[:, :high - low] = operand[:, low:high] if columns is None \
            else operand[:, columns[low:high]]
        block = block.reshape(inner, last - first, width).transpose(1, 0, 2)
        if not paired:
            packed[first:last] = block
            continue
        for term in range(PAIRED):
            taken = block[:, term::PAIRED]
            by_term[first:last, :taken.shape[1], :, term] = taken
    return packed


def panel_terms(packed: np.ndarray, inner: int) -> np.ndarray:
    """`pack_panels`' panels with one term a row, [panels, inner, width] (a copy where the
    terms are paired)."""
    if packed.dtype != np.uint16:
        return packed
    panels, pairs, _ = packed.shape
    terms = packed.reshape(panels, pairs, -1, PAIRED).transpose(0, 1, 3, 2)
    return terms.reshape(panels, pairs * PAIRED, -1)[:, :inner]


def unpack_panels(packed: np.ndarray, rows: int, inner: int) -> np.ndarray:
    """`pack_panels`' operand again ([inner, rows], a copy)."""
    terms = panel_terms(packed, inner)
    panels, _, width = terms.shape
    return np.ascontiguousarray(terms.transpose(1, 0, 2).reshape(inner, panels * width)
                                [:, :rows])


def panel_columns(packed: np.ndarray, positions: np.ndarray, inner: int) -> np.ndarray:
    """The operand's columns at `positions` (rows of the product), [inner, len(positions)],
    as stored (float32, or bfloat16 bits)."""
    panel, lane = positions // PANEL_ROWS, positions % PANEL_ROWS
    if packed.dtype != np.uint16:
        return np.ascontiguousarray(packed[panel, :, lane].T)
    picked = packed[panel[:, None], :, PAIRED * lane[:, None] + np.arange(PAIRED)]
    terms = picked.transpose(0, 2, 1).reshape(positions.shape[0], packed.shape[1] * PAIRED)
    return np.ascontiguousarray(terms[:, :inner].T)


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

    `panels` is float32, or uint16 holding bfloat16 bits with the terms in pairs
    (`Matrix.bf16`, `pack_panels`): each weight is then widened as it is loaded (exact), so
    half the bytes are read, which is what bounds a product of few columns; the sums are the
    same.  x's rows are the terms (inner)."""
    inner, width = x.shape[0], PANEL_ROWS
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
    """sums[c, r] += terms `start` to `stop` - 1 of one panel ([terms, PANEL_ROWS], or
    paired bfloat16 bits: `start` even) times x, for every column c of x, in register
    blocks of eight columns, then four, two or one.
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
