"""A weight matrix as the engine keeps it: CSR where it is mostly zero, dense panels where
it is not (`Matrix`), bfloat16 weights held in 16 bits.

    Matrix.of(tensor)        # dense or CSR by DENSE_ABOVE; bf16 panels where it can
    matrix.dense, matrix.rows_of(ids), matrix.columns_of(ids), matrix.nbytes

`engine.matmul` multiplies one; `weights.read_weights` makes them from a checkpoint's
tensors.  Every stored form gives the same float32 values, and every product the same sums.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from qwengpu.engine.dense_kernels import PANEL_ROWS, pack_panels, unpack_panels

DENSE_ABOVE = 0.25           # a matrix with more nonzeros than this fraction is kept dense
# a dense matrix keeps bfloat16 panels, and beside them its rows that are not bfloat16s
# (`Matrix.wide`), while those are at most this fraction of its rows: no more bytes than
# float32 panels of every row
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
    advance along): of its transpose, [columns, rows], for `matrix @ x`; of itself, [rows,
    columns], where `transposed_products` says the engine multiplies by the matrix's
    transpose (`Mlp.down_by_unit`).  `dense` is the [rows, columns] values either way.

    A dense matrix whose rows are bfloat16s but for a few (a spliced checkpoint's embedding
    and `lm_head`: the base's rows bf16, the machine tokens' float32) keeps its panels as
    bfloat16 bits, those few rows left 0 there, and the few rows, `wide_rows` (ascending),
    as a matrix of their own, `wide` (float32, dense or CSR): a product takes their sums
    from it, the same sums, and reads half the bytes for the rest."""

    rows: int
    columns: int
    indptr: np.ndarray | None = None
    indices: np.ndarray | None = None
    data: np.ndarray | None = None
    stored: np.ndarray | None = None
    transposed_products: bool = False
    wide_rows: np.ndarray | None = None          # int64, ascending
    wide: "Matrix | None" = None                 # [len(wide_rows), columns]

    @classmethod
    def of(cls, tensor: torch.Tensor, transposed_products: bool = False) -> "Matrix":
        """Dense when more than DENSE_ABOVE of the weights are nonzero, else CSR.  A dense
        matrix whose every weight is a bfloat16 (a bfloat16 tensor, or float32 values whose
        low 16 bits are zero) is stored as those 16 bits (`bf16`), widened in the product."""
        tensor = tensor.to(torch.float32).contiguous()
        rows, columns = tensor.shape
        if int(torch.count_nonzero(tensor)) > DENSE_ABOVE * rows * columns:
            values = tensor.numpy()
            halves, wide = _bf16_halves(values)
            if not wide.any():
                values = halves
            elif not transposed_products and wide.sum() <= WIDE_ROWS_AT_MOST * rows:
                wide_rows = np.flatnonzero(wide).astype(np.int64)
                halves[wide_rows] = 0
                return cls(rows, columns, stored=pack_panels(halves.T), wide_rows=wide_rows,
                           wide=cls.of(tensor[torch.from_numpy(wide_rows)]))
            stored = pack_panels(values if transposed_products else values.T)
            return cls(rows, columns, stored=stored, transposed_products=transposed_products)
        return cls.csr(tensor)

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
        """Dense, its panels bfloat16 bits (uint16): every weight a bfloat16 but those of
        `wide_rows`, if any."""
        return self.stored is not None and self.stored.dtype == np.uint16

    @property
    def product_rows(self) -> int:
        """The rows of the products `stored` gives (the rows its panels hold, unpadded)."""
        return self.columns if self.transposed_products else self.rows

    @property
    def dense(self) -> np.ndarray | None:
        """The dense values as float32 [rows, columns] (a copy; widened where `stored` holds
        bfloat16 bits), or None for CSR."""
        if self.stored is None:
            return None
        operand = unpack_panels(self.stored, self.product_rows)
        values = widen_bf16(operand) if self.bf16 else operand
        values = values if self.transposed_products else np.ascontiguousarray(values.T)
        if self.wide is not None:
            values[self.wide_rows] = self.wide.rows_of(np.arange(self.wide.rows))
        return values

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
        picked = np.ascontiguousarray(self.stored[ids // PANEL_ROWS, :, ids % PANEL_ROWS].T)
        picked = widen_bf16(picked) if self.bf16 else picked
        if self.wide is not None:
            where = np.searchsorted(self.wide_rows, ids)
            found = where < self.wide_rows.shape[0]
            found[found] = self.wide_rows[where[found]] == ids[found]
            if found.any():
                picked[:, found] = self.wide.rows_of(where[found]).T
        return picked

    @property
    def nonzeros(self) -> int:
        wide = self.wide.nonzeros if self.wide is not None else 0
        if self.bf16:                         # a weight is zero when its bits but the sign are
            return int(np.count_nonzero(self.stored & np.uint16(0x7FFF))) + wide
        return int(np.count_nonzero(self.stored)) if self.stored is not None \
            else int(self.data.shape[0])

    @property
    def nbytes(self) -> int:
        if self.stored is not None:
            wide = self.wide.nbytes + self.wide_rows.nbytes if self.wide is not None else 0
            return self.stored.nbytes + wide
        return self.indptr.nbytes + self.indices.nbytes + self.data.nbytes
