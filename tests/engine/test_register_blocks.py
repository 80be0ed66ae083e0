"""The register blocks (`qwengpu.engine.register_blocks`) against a float32 model written
here: each term a multiply then an add, each rounded to float32, k ascending."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from qwengpu.engine.dense_kernels import pack_panels
from qwengpu.engine.register_blocks import LANES, PAIRED, block_product


NO_ROWS = np.zeros(0, dtype=np.int64)


def model_sums(panel: np.ndarray, x: np.ndarray, sums: np.ndarray, start: int, stop: int,
               column: int, columns: int, panel_rows: np.ndarray | None = None,
               x_rows: np.ndarray | None = None) -> np.ndarray:
    """The block's sums, one float32 operation at a time (term k: panel row
    `panel_rows[k]` times x's row `x_rows[k]`, or row k of both); `panel` one term a row
    (bfloat16 bits as uint16)."""
    want = sums.copy()
    weights = panel.astype(np.uint32) << 16 if panel.dtype == np.uint16 else panel
    weights = weights.view(np.float32) if panel.dtype == np.uint16 else weights
    for k in range(start, stop):
        weight_row = k if panel_rows is None else int(panel_rows[k])
        row = k if x_rows is None else int(x_rows[k])
        for j in range(columns):
            for r in range(LANES):
                term = np.float32(weights[weight_row, r] * x[row, column + j])
                want[column + j, r] = np.float32(want[column + j, r] + term)
    return want


def runner(columns: int, gathered: bool):
    block = block_product(columns, gathered)

    @njit
    def run(panel, x, sums, start, stop, column, panel_rows, x_rows):
        block(panel, x, sums, start, stop, column, panel_rows, x_rows)

    return run


def paired(terms: np.ndarray) -> np.ndarray:
    """bfloat16 bits one term a row, [terms, LANES], as a block reads them: the terms in
    pairs, [ceil(terms / 2), PAIRED * LANES] (`dense_kernels.pack_panels`)."""
    return pack_panels(terms)[0]


@pytest.mark.parametrize("columns", [1, 2, 4, 8])
@pytest.mark.parametrize("dtype", ["float32", "bf16"])
@pytest.mark.parametrize("start, stop", [(4, 40), (4, 41), (0, 45)])
def test_a_block_takes_each_term_in_order(columns, dtype, start, stop):
    """A run of terms from the middle of the panel or the whole of it (an even and an odd
    count; bfloat16 terms start at an even one, a pair's first) added to sums already
    there, into columns from 1 on of a wider sums array; x strided (every other column of a
    wider array), so the block reads it through its strides."""
    rng = np.random.default_rng(columns)
    values = (rng.standard_normal((45, LANES)) * 4).astype(np.float32)
    if dtype == "bf16":
        terms = (values.view(np.uint32) >> 16).astype(np.uint16)
        panel = paired(terms)
        assert panel.shape == (23, PAIRED * LANES)
    else:
        terms = panel = values
    x = rng.standard_normal((45, 2 * (columns + 2))).astype(np.float32)[:, ::2]
    sums = rng.standard_normal((columns + 2, LANES)).astype(np.float32)
    want = model_sums(terms, x, sums, start, stop, 1, columns)
    runner(columns, False)(panel, x, sums, start, stop, 1, NO_ROWS, NO_ROWS)
    assert np.array_equal(sums.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("columns", [1, 8])
@pytest.mark.parametrize("dtype", ["float32", "bf16"])
def test_a_gathered_block_reads_the_rows_it_is_given(columns, dtype):
    """`gathered`: term k is panel row panel_rows[k] (some left out; of bfloat16 pairs,
    first and second terms) times x's row x_rows[k] (rows repeated and out of order); x in
    Fortran order."""
    rng = np.random.default_rng(50 + columns)
    terms = rng.standard_normal((16, LANES)).astype(np.float32)
    panel = terms
    if dtype == "bf16":
        terms = (terms.view(np.uint32) >> 16).astype(np.uint16)
        panel = paired(terms)
    x = np.asfortranarray(rng.standard_normal((30, columns)).astype(np.float32))
    panel_rows = np.array([0, 2, 3, 4, 5, 7, 8, 9, 12, 13, 14, 15], dtype=np.int64)
    x_rows = np.array([29, 0, 7, 7, 3, 15, 2, 28, 11, 0, 5, 19], dtype=np.int64)
    sums = np.zeros((columns, LANES), dtype=np.float32)
    want = model_sums(terms, x, sums, 0, 12, 0, columns, panel_rows, x_rows)
    runner(columns, True)(panel, x, sums, 0, 12, 0, panel_rows, x_rows)
    assert np.array_equal(sums.view(np.uint32), want.view(np.uint32))


def test_special_values_pass_through_a_block():
    """Infinities, NaN, signed zeros and subnormals in the weights and in x: what float32
    multiplies and adds give (NaN where the model gives NaN)."""
    panel = np.zeros((6, LANES), dtype=np.float32)
    panel[0, :4] = [np.inf, -np.inf, np.nan, -0.0]
    panel[1, 4:8] = [1e-45, -1e-40, 3e38, 3e38]
    panel[2] = 1.0
    x = np.array([[2.0], [1e-3], [-0.0], [5.0], [1e30], [-1.0]], dtype=np.float32)
    sums = np.full((1, LANES), -0.0, dtype=np.float32)
    with np.errstate(all="ignore"):
        want = model_sums(panel, x, sums, 0, 6, 0, 1)
    runner(1, False)(panel, x, sums, 0, 6, 0, NO_ROWS, NO_ROWS)
    assert np.array_equal(np.isnan(sums), np.isnan(want))
    finite = ~np.isnan(want)
    assert np.array_equal(sums[finite].view(np.uint32), want[finite].view(np.uint32))
