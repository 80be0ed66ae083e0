"""A weight matrix as the engine keeps it: CSR where it is mostly zero, dense panels where
it is not (`Matrix`), bfloat16 weights held in 16 bits, and rows that do not fit the panels
kept apart.

    Matrix.of(tensor)        # dense or CSR by DENSE_ABOVE; bf16 panels where it can
    Matrix.table(tensor)     # a token table: its dense rows in panels, the others apart
    matrix.dense, matrix.rows_of(ids), matrix.columns_of(ids), matrix.nbytes

`engine.matmul` multiplies one; `weights.read_weights` makes them from a checkpoint's
tensors.  Every stored form gives the same float32 values, and every product the same sums.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from qwengpu.engine.dense_kernels import pack_panels, panel_columns, unpack_panels

DENSE_ABOVE = 0.25           # a matrix (a table's row) with more nonzeros than this fraction
                             # is kept dense
# dense rows are kept as bfloat16 panels, and beside them those that are not bfloat16s
# (apart), while those are at most this fraction of them: no more bytes than float32
# panels of every dense row
WIDE_ROWS_AT_MOST = 0.5


def widen_bf16(bits: np.ndarray) -> np.ndarray:
    """float32 values of bfloat16 bits (uint16): the bits moved up 16 places, exactly."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


_ROWS_A_BLOCK = 4096          # `_bf16_halves` reads a matrix this many rows at a time


def _bf16_halves(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The high 16 bits of float32 values [rows, columns] (uint16: their bfloat16 bits where
    the low 16 are zero), and per row whether any value's low 16 bits are not zero; a block
    of rows at a time, so that no temporary is the size of the matrix (an `lm_head` of
    248,320 rows is 2 GB of float32)."""
    bits = values.view(np.uint32)
    halves = np.empty(values.shape, dtype=np.uint16)
    wide = np.empty(values.shape[0], dtype=np.bool_)
    for start in range(0, values.shape[0], _ROWS_A_BLOCK):
        block = bits[start:start + _ROWS_A_BLOCK]
        halves[start:start + _ROWS_A_BLOCK] = block >> np.uint32(16)
        wide[start:start + _ROWS_A_BLOCK] = (block & np.uint32(0xFFFF)).any(axis=1)
    return halves, wide


@dataclass
class Matrix:
    """A weight matrix [rows, columns]: CSR arrays, or dense when it is mostly nonzero.
    CSR `indptr` is int64, `indices` int32 (the kernels read them as uint32: no index is
    negative), `data` float32.

    A dense matrix is `stored` in the panels its products read (`dense_kernels.pack_panels`:
    [panels, inner, PANEL_ROWS], a panel's weights one contiguous run the sums of its rows
    advance along, bfloat16 bits with the terms in pairs): of its transpose, [columns,
    rows], for `matrix @ x`; of itself, [rows, columns], where `transposed_products` says
    the engine multiplies by the matrix's transpose (`Mlp.down_by_unit`).  `dense` is the
    [rows, columns] values either way.

    Rows that do not fit the panels are kept apart: `panel_rows` (ascending) are the rows
    the panels hold, in that order, and `apart` ([len(apart_rows), columns], a `Matrix` of
    its own: CSR, or dense) holds the others, `apart_rows`.  Apart go the rows that are not
    bfloat16s beside bfloat16 panels (a spliced checkpoint's embedding and `lm_head`: the
    base's rows bf16, the machine tokens' float32), and in a token table (`table`) the rows
    that are mostly zero (the machine's tokens beside a base's dense rows).  A product takes
    each row's sum from where the row is kept: the same sums, with the panels' bytes read
    only for the rows they hold."""

    rows: int
    columns: int
    indptr: np.ndarray | None = None
    indices: np.ndarray | None = None
    data: np.ndarray | None = None
    stored: np.ndarray | None = None
    transposed_products: bool = False
    panel_rows: np.ndarray | None = None         # int64, ascending; None: every row
    apart_rows: np.ndarray | None = None         # int64, ascending: the other rows
    apart: "Matrix | None" = None                # [len(apart_rows), columns]

    @classmethod
    def of(cls, tensor: torch.Tensor, transposed_products: bool = False) -> "Matrix":
        """Dense when more than DENSE_ABOVE of the weights are nonzero, else CSR.  A dense
        matrix whose every weight is a bfloat16 (a bfloat16 tensor, or float32 values whose
        low 16 bits are zero) is stored as those 16 bits (`bf16`), widened in the product;
        one whose rows are bfloat16s but for a few keeps those few apart."""
        tensor = tensor.to(torch.float32).contiguous()
        rows, columns = tensor.shape
        if int(torch.count_nonzero(tensor)) <= DENSE_ABOVE * rows * columns:
            return cls.csr(tensor)
        if transposed_products:
            values = tensor.numpy()
            halves, wide = _bf16_halves(values)
            return cls(rows, columns, stored=pack_panels(values if wide.any() else halves),
                       transposed_products=True)
        return cls._panels_and_apart(tensor, np.ones(rows, dtype=np.bool_), cls.of)

    @classmethod
    def table(cls, tensor: torch.Tensor) -> "Matrix":
        """A token table (an embedding, `lm_head`), kept for `matrix @ x` and row lookups:
        its rows with more than DENSE_ABOVE of their weights nonzero in panels (`of`'s
        rule for them), the others apart as a table of their own.  A spliced table is a
        base's dense rows and the machine's tokens, a few weights each: as one CSR matrix
        the base's rows were summed by one thread from float32 values and indices, as
        panels of every row the machine's rows were read as zeros."""
        tensor = tensor.to(torch.float32).contiguous()
        dense_rows = (torch.count_nonzero(tensor, dim=1)
                      > DENSE_ABOVE * tensor.shape[1]).numpy()
        if not dense_rows.any():
            return cls.csr(tensor)
        return cls._panels_and_apart(tensor, dense_rows, cls.table)

    @classmethod
    def _panels_and_apart(cls, tensor: torch.Tensor, dense_rows: np.ndarray,
                          keep_apart: Callable[[torch.Tensor], "Matrix"]) -> "Matrix":
        """Panels of the `dense_rows`: bfloat16 bits where at most WIDE_ROWS_AT_MOST of
        them are not bfloat16s (those then apart), else float32; every other row apart,
        kept by `keep_apart`."""
        rows, columns = tensor.shape
        values = tensor.numpy()
        halves, wide = _bf16_halves(values)
        held = dense_rows & ~wide
        if held.sum() >= (1 - WIDE_ROWS_AT_MOST) * dense_rows.sum():
            operand = halves
        else:
            held, operand = dense_rows, values
        if held.all():
            return cls(rows, columns, stored=pack_panels(operand.T))
        panel_rows = np.flatnonzero(held).astype(np.int64)
        apart_rows = np.flatnonzero(~held).astype(np.int64)
        return cls(rows, columns, stored=pack_panels(operand.T, columns=panel_rows),
                   panel_rows=panel_rows, apart_rows=apart_rows,
                   apart=keep_apart(tensor[torch.from_numpy(apart_rows)]))

    @classmethod
    def csr(cls, tensor: torch.Tensor) -> "Matrix":
        tensor = tensor.to(torch.float32).contiguous()
        rows, columns = tensor.shape
        where = tensor.nonzero()                  # row-major order: CSR's
        counts = torch.bincount(where[:, 0], minlength=rows)
        indptr = torch.zeros(rows + 1, dtype=torch.int64)
        indptr[1:] = counts.cumsum(0)
        return cls(rows, columns, indptr=indptr.numpy(),
                   indices=where[:, 1].to(torch.int32).numpy().copy(),
                   data=tensor[where[:, 0], where[:, 1]].numpy().copy())

    @property
    def bf16(self) -> bool:
        """Dense, its panels bfloat16 bits (uint16)."""
        return self.stored is not None and self.stored.dtype == np.uint16

    @property
    def product_rows(self) -> int:
        """The rows of the products `stored` gives (the rows its panels hold, unpadded)."""
        if self.panel_rows is not None:
            return self.panel_rows.shape[0]
        return self.columns if self.transposed_products else self.rows

    @property
    def inner(self) -> int:
        """The terms of each of the products' sums (the rows of x)."""
        return self.rows if self.transposed_products else self.columns

    @property
    def panels_first(self) -> bool:
        """Whether the panels hold the first `product_rows` rows (so that their product
        lands in the top of the output, where the rest are apart)."""
        held = self.panel_rows
        return held is None or held.shape[0] == 0 or held[-1] == held.shape[0] - 1

    @property
    def dense(self) -> np.ndarray | None:
        """The dense values as float32 [rows, columns] (a copy; widened where `stored` holds
        bfloat16 bits), or None for CSR."""
        if self.stored is None:
            return None
        operand = unpack_panels(self.stored, self.product_rows, self.inner)
        values = widen_bf16(operand) if self.bf16 else operand
        if self.transposed_products:
            return values
        if self.panel_rows is None:
            return np.ascontiguousarray(values.T)
        whole = np.empty((self.rows, self.columns), dtype=np.float32)
        whole[self.panel_rows] = values.T
        whole[self.apart_rows] = self.apart.rows_of(np.arange(self.apart.rows))
        return whole

    def rows_of(self, ids: np.ndarray) -> np.ndarray:
        """float32 rows `ids` of a matrix kept for `matrix @ x`, [len(ids), columns]."""
        if self.stored is not None:
            return np.ascontiguousarray(self.columns_of(ids).T)
        picked = np.zeros((ids.shape[0], self.columns), dtype=np.float32)
        for row, source in enumerate(ids.tolist()):
            start, stop = self.indptr[source], self.indptr[source + 1]
            picked[row, self.indices[start:stop]] = self.data[start:stop]
        return picked

    def columns_of(self, ids: np.ndarray) -> np.ndarray:
        """float32 columns `ids` of the stored operand, [inner, len(ids)] (the embedding's
        columns for some tokens)."""
        if self.panel_rows is None:
            return self._panel_columns(ids)
        where = np.searchsorted(self.panel_rows, ids)
        held = where < self.panel_rows.shape[0]
        held[held] = self.panel_rows[where[held]] == ids[held]
        picked = np.empty((self.columns, ids.shape[0]), dtype=np.float32)
        picked[:, held] = self._panel_columns(where[held])
        if not held.all():
            picked[:, ~held] = self.apart.rows_of(
                np.searchsorted(self.apart_rows, ids[~held])).T
        return picked

    def _panel_columns(self, positions: np.ndarray) -> np.ndarray:
        """float32 columns of the panels' operand at `positions` (among the rows they
        hold), [inner, len(positions)]."""
        picked = panel_columns(self.stored, positions, self.inner)
        return widen_bf16(picked) if self.bf16 else picked

    @property
    def nonzeros(self) -> int:
        apart = self.apart.nonzeros if self.apart is not None else 0
        if self.bf16:                         # a weight is zero when its bits but the sign are
            return int(np.count_nonzero(self.stored & np.uint16(0x7FFF))) + apart
        return int(np.count_nonzero(self.stored)) + apart if self.stored is not None \
            else int(self.data.shape[0])

    @property
    def nbytes(self) -> int:
        if self.stored is not None:
            apart = 0 if self.apart is None else \
                self.apart.nbytes + self.apart_rows.nbytes + self.panel_rows.nbytes
            return self.stored.nbytes + apart
        return self.indptr.nbytes + self.indices.nbytes + self.data.nbytes
