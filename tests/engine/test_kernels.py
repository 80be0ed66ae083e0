"""The engine's kernels on their own: the float32 results they promise.

- `silu`'s three shortcuts give the formula's own float32 result, bit for bit (sign of zero
  included), checked on every float32 value around each threshold; elsewhere it is torch's
  silu to within a relative 1e-6 (a few ulp: torch's vectorised exp and libm's differ).
- sparse and dense matrix products take the same sums in the same order whatever the number
  of columns (one, two, many), so a column's result never depends on its neighbours, and a
  dense product is the CSR product to the bit (`matrix @ x`, and `matrix.T @ x` for
  down_proj's transpose, which the CSR side scatters); several row blocks, an inner size
  that is not a multiple of four, column counts that take every pass (four, two and one
  column at a time).
- a dense matrix of bfloat16 weights is held as their 16 bits and widened in the product:
  the same sums to the bit (NaN, infinities, signed zeros and subnormals among the
  weights), its `dense` and embedding columns the widened float32 values; rows that do
  not fit the panels (float32 rows beside bfloat16 ones, a spliced table's machine rows)
  are kept apart, and every product and lookup is the CSR matrix's all the same.
- the fused MLP (gate, silu, up, down, skipping units whose silu is 0) and the RMSNorm
  agree with plain numpy and torch within float32 rounding; argmax breaks ties as torch does.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qwengpu.engine import dense_kernels, kernels, mixer_kernels
from qwengpu.engine.engine import Workers, matmul, mlp_add
from qwengpu.engine.gate_families import GateFamilies
from qwengpu.engine.weights import Matrix, Mlp


def floats_between(low: float, high: float) -> np.ndarray:
    """Every float32 value in [low, high] (low, high of one sign)."""
    bits = np.sort(np.array([low, high], dtype=np.float32).view(np.int32))
    return np.arange(bits[0], bits[1] + 1, dtype=np.int32).view(np.float32)


def silu_of(values: np.ndarray) -> np.ndarray:
    out = values.reshape(1, -1).copy()
    kernels.silu_rows(out)
    return out[0]


def formula(values: np.ndarray) -> np.ndarray:
    """x / (1 + exp(-x)) in float32, step by step."""
    with np.errstate(over="ignore"):
        return values / (np.float32(1.0) + np.exp(-values))


@pytest.mark.parametrize("low, high", [(16.99, 17.01), (17.0, 18.0), (-89.01, -88.99),
                                       (-100.0, -89.0)])
def test_silu_shortcuts_are_the_formula(low, high):
    values = floats_between(low, high)
    got, want = silu_of(values), formula(values)
    assert np.array_equal(got.view(np.int32), want.view(np.int32))


def test_silu_of_zero_and_elsewhere():
    zeros = np.array([0.0, -0.0], dtype=np.float32)
    assert np.array_equal(silu_of(zeros).view(np.int32), zeros.view(np.int32))
    values = (np.random.default_rng(0).standard_normal(200_000) * 20).astype(np.float32)
    got = silu_of(values)
    want = torch.nn.functional.silu(torch.from_numpy(values)).numpy()
    assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()
    assert (np.abs(got - want) <= 1e-6 * np.abs(want)).all()


def random_sparse(rows: int, columns: int, density: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weight = rng.standard_normal((rows, columns)).astype(np.float32)
    weight[rng.random((rows, columns)) > density] = 0.0
    return weight


@pytest.mark.parametrize("density", [0.05, 0.6])
def test_products_do_not_depend_on_the_other_columns(density):
    weight = random_sparse(50, 40, density, 1)
    matrix = Matrix.of(torch.from_numpy(weight))
    assert (matrix.dense is None) == (density < 0.25)
    x = np.random.default_rng(2).standard_normal((40, 9)).astype(np.float32)
    alone = np.stack([matmul(matrix, np.ascontiguousarray(x[:, [c]]))[:, 0]
                      for c in range(9)], axis=1)
    for count in (1, 2, 3, 4, 6, 9):          # one at a time; fours; eights and one
        assert np.array_equal(matmul(matrix, np.ascontiguousarray(x[:, :count])),
                              alone[:, :count]), count
    np.testing.assert_allclose(alone, weight @ x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("columns", [1, 3, 4, 6, 7, 8, 11, 15, 40])
def test_a_dense_product_takes_the_csr_sums(columns):
    """700 rows (44 panels, the last of 12 rows), 43 inner; every register block: eight,
    four, two and one column (15 takes each once)."""
    weight = random_sparse(700, 43, 0.9, 8)
    dense, csr = Matrix.of(torch.from_numpy(weight)), Matrix.csr(torch.from_numpy(weight))
    assert dense.stored is not None and np.array_equal(dense.dense, weight)
    x = np.random.default_rng(9).standard_normal((43, columns)).astype(np.float32)
    assert np.array_equal(matmul(dense, x), matmul(csr, x))


@pytest.mark.parametrize("columns", [1, 9, 15, 16])
def test_a_dense_product_over_long_runs_takes_the_csr_sums(columns):
    """1,029 inner: two runs of `PANEL_TERMS` and a short one (five terms), each run taken
    by every group of eight columns and by what is left after the eights."""
    weight = random_sparse(300, 1029, 0.9, 21)
    dense, csr = Matrix.of(torch.from_numpy(weight)), Matrix.csr(torch.from_numpy(weight))
    x = np.random.default_rng(22).standard_normal((1029, columns)).astype(np.float32)
    assert np.array_equal(matmul(dense, x), matmul(csr, x))


def test_panels_hold_the_operand_and_split_over_threads():
    """`pack_panels` then `unpack_panels` is the operand (float32 one term a row, bfloat16
    bits with the terms in pairs, an odd count's last pair padded with zeros);
    `panel_columns` its columns; `dense_panels` over two ranges of panels (two threads'
    shares) writes what `dense_product` writes."""
    rng = np.random.default_rng(23)
    operand = rng.standard_normal((37, 300)).astype(np.float32)
    packed = dense_kernels.pack_panels(operand)
    assert dense_kernels.PANEL_ROWS == 16 and packed.shape == (19, 37, 16)
    assert not packed[18, :, 300 - 288:].any()
    bits = (operand.view(np.uint32) >> 16).astype(np.uint16)
    paired = dense_kernels.pack_panels(bits)
    assert paired.shape == (19, 19, 32) and not paired[:, 18, 1::2].any()
    assert np.array_equal(paired[3, 5, 2 * 7:2 * 7 + 2], bits[10:12, 3 * 16 + 7])
    ids = np.array([299, 0, 17, 17, 288])
    for stored, values in ((packed, operand), (paired, bits)):
        assert np.array_equal(dense_kernels.unpack_panels(stored, 300, 37), values)
        assert np.array_equal(dense_kernels.panel_columns(stored, ids, 37), values[:, ids])
    x = rng.standard_normal((37, 5)).astype(np.float32)
    whole, halves = np.empty((300, 5), np.float32), np.empty((300, 5), np.float32)
    dense_kernels.dense_product(packed, x, whole)
    dense_kernels.dense_panels(packed, x, halves, 0, 7)
    dense_kernels.dense_panels(packed, x, halves, 7, 19)
    assert np.array_equal(whole, halves)


def bf16_weights(rows: int, columns: int, seed: int) -> torch.Tensor:
    """Random bfloat16 weights, every special value among them."""
    rng = np.random.default_rng(seed)
    weight = torch.from_numpy(rng.standard_normal((rows, columns)).astype(np.float32))
    weight = weight.to(torch.bfloat16)
    specials = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-40,
                             -3e-39, 3.0e38], dtype=torch.bfloat16)
    weight.view(-1)[rng.choice(rows * columns, 16, replace=False)] = specials.repeat(2)
    return weight


@pytest.mark.parametrize("columns", [1, 2, 4, 7, 8])
def test_bf16_weights_are_held_in_16_bits_and_take_the_same_sums(columns):
    """700 rows, 45 inner; the product of the 16-bit matrix is the float32 CSR product's
    to the bit, NaN where an infinity or a NaN meets it as float32 gives NaN."""
    weight = bf16_weights(700, 45, 12)
    halves, csr = Matrix.of(weight), Matrix.csr(weight)
    assert halves.bf16 and halves.stored.dtype == np.uint16 and csr.data.dtype == np.float32
    widened = weight.to(torch.float32).numpy()
    assert np.array_equal(halves.dense.view(np.uint32), widened.view(np.uint32))
    assert halves.nbytes == 704 * 46 * 2 and halves.nonzeros == csr.nonzeros   # 44 panels,
    # 23 pairs of terms (the last padded)
    x = np.random.default_rng(13).standard_normal((45, columns)).astype(np.float32)
    got, want = matmul(halves, x), matmul(csr, x)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    ids = np.array([3, 0, 44, 3])
    assert np.array_equal(halves.columns_of(ids).view(np.uint32),
                          np.ascontiguousarray(widened.T[:, ids]).view(np.uint32))


def test_float32_values_that_are_bf16s_are_held_in_16_bits_and_others_are_not():
    weight = bf16_weights(40, 30, 14).to(torch.float32)
    assert Matrix.of(weight).bf16 and Matrix.of(weight).apart is None
    weight[:21, 7] = 1.0 + 2.0 ** -20                   # more than half the rows: float32
    assert not Matrix.of(weight).bf16 and Matrix.of(weight).stored.dtype == np.float32


@pytest.mark.parametrize("columns, sparse", [(1, False), (3, True), (8, False), (8, True)])
def test_rows_that_are_not_bf16s_are_kept_apart_beside_the_16_bit_panels(columns, sparse):
    """A spliced embedding: 300 rows of bfloat16s, 40 of them (a run and some alone) float32
    values, kept as a dense matrix of their own or, mostly zero (`sparse`), as CSR; the
    panels hold the other 260 only.  Its products, `dense`, `columns_of` (the embedding's
    lookup) and `nonzeros` are the float32 matrix's, to the bit."""
    rng = np.random.default_rng(31)
    weight = bf16_weights(300, 64, 32).to(torch.float32)
    wide_rows = np.concatenate([np.arange(100, 130), rng.choice(100, 10, replace=False)])
    exact = torch.from_numpy(rng.standard_normal((wide_rows.size, 64)).astype(np.float32))
    exact[::1 if sparse else 2, 8:] = 0.0                  # all or half of them mostly 0
    weight[torch.from_numpy(wide_rows)] = exact
    mixed, csr = Matrix.of(weight), Matrix.csr(weight)
    assert mixed.bf16 and np.array_equal(mixed.apart_rows, np.sort(wide_rows))
    assert mixed.apart.rows == 40 and mixed.product_rows == 260
    assert mixed.stored.shape[0] == 17 and not mixed.panels_first   # ceil(260 / 16) panels
    assert (mixed.apart.stored is None) == sparse
    assert_same_table(mixed, csr, weight.numpy(), columns, rng)


def assert_same_table(kept: Matrix, csr: Matrix, weight: np.ndarray, columns: int,
                      rng: np.random.Generator) -> None:
    """`kept`'s values, products (one column at a time and `columns` at once, on one and
    on two threads), lookups and nonzeros are the float32 matrix's, to the bit."""
    assert np.array_equal(kept.dense.view(np.uint32), weight.view(np.uint32))
    assert kept.nonzeros == csr.nonzeros
    x = rng.standard_normal((weight.shape[1], columns)).astype(np.float32)
    want = matmul(csr, x).view(np.uint32)
    assert np.array_equal(matmul(kept, x).view(np.uint32), want)
    workers = Workers(2)
    try:
        assert np.array_equal(matmul(kept, x, workers).view(np.uint32), want)
    finally:
        workers.shutdown()
    ids = np.concatenate([rng.choice(weight.shape[0], 12), [0, weight.shape[0] - 1, 0]])
    assert np.array_equal(kept.columns_of(ids).view(np.uint32),
                          np.ascontiguousarray(weight.T[:, ids]).view(np.uint32))
    assert np.array_equal(kept.rows_of(ids).view(np.uint32), weight[ids].view(np.uint32))


@pytest.mark.parametrize("columns", [1, 8, 11])
def test_a_spliced_table_keeps_its_dense_rows_in_panels_and_the_machine_apart(columns):
    """A spliced `lm_head` whose base is small (`Matrix.table`): 90 dense rows of
    bfloat16s first (three of them float32), then 400 machine rows of a few float32 weights
    each (some all zero): 6% dense as a whole, so `of` keeps it CSR, while `table` keeps the
    87 bfloat16 rows in panels and the rest apart, the three dense float32 rows in panels of
    their own and the machine's rows as CSR.  Every product and lookup is the CSR
    matrix's."""
    rng = np.random.default_rng(41)
    weight = torch.zeros(490, 64)
    weight[:90] = bf16_weights(90, 64, 42).to(torch.float32)
    weight[[5, 50, 89], 3] = 1.0 + 2.0 ** -20
    machine = torch.from_numpy(rng.standard_normal((400, 64)).astype(np.float32))
    machine[torch.from_numpy(rng.random((400, 64)) > 0.03)] = 0.0
    weight[90:] = machine
    assert Matrix.of(weight).stored is None
    table, csr = Matrix.table(weight), Matrix.csr(weight)
    assert table.bf16 and table.product_rows == 87 and not table.panels_first
    assert np.array_equal(table.apart_rows, np.r_[5, 50, 89, 90:490])
    dense_apart = table.apart
    assert dense_apart.stored.dtype == np.float32 and dense_apart.product_rows == 3
    assert dense_apart.apart.stored is None and dense_apart.apart.rows == 400
    assert_same_table(table, csr, weight.numpy(), columns, rng)

    weight[[5, 50, 89], 3] = 1.0                      # every dense row a bf16: panels first
    table = Matrix.table(weight)
    assert table.panels_first and table.product_rows == 90 and table.apart.stored is None
    assert_same_table(table, Matrix.csr(weight), weight.numpy(), columns, rng)


@pytest.mark.parametrize("columns", [1, 5])
def test_a_dense_transposed_product_takes_the_scatter_sums(columns):
    """down_proj's transpose kept dense as it is (`transposed_products`, [units, dims]): its
    transpose times x is `csr_scatter_add`'s to the bit."""
    weight = random_sparse(45, 530, 0.9, 10)
    bf16_values = (weight.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    for values, bf16 in ((weight, False), (bf16_values, True)):
        dense = Matrix.of(torch.from_numpy(values), transposed_products=True)
        assert dense.bf16 == bf16
        csr = Matrix.csr(torch.from_numpy(values))
        assert np.array_equal(dense.dense, values)
        x = np.random.default_rng(11).standard_normal((45, columns)).astype(np.float32)
        want = np.zeros((530, columns), dtype=np.float32)
        kernels.csr_scatter_add(csr.indptr, csr.indices, csr.data, x, want)
        got = np.empty((530, columns), dtype=np.float32)
        dense_kernels.dense_product(dense.stored, x, got)
        assert np.array_equal(got, want)


@pytest.mark.parametrize("columns", [1, 2, 6])
def test_the_mlp_is_down_of_silu_gate_times_up(columns):
    """Gates far below zero (silu exactly 0: the unit is skipped), far above, and near."""
    rng = np.random.default_rng(3)
    hidden, units = 24, 40
    gate = random_sparse(units, hidden, 0.3, 4)
    gate[:, 0] = rng.choice([-200.0, 30.0, 0.5], units)      # x[0] = 1: the unit's offset
    up, down = random_sparse(units, hidden, 0.3, 5), random_sparse(hidden, units, 0.3, 6)
    x = rng.standard_normal((hidden, columns)).astype(np.float32)
    x[0] = 1.0
    residual = rng.standard_normal((hidden, columns)).astype(np.float32)
    want = residual + down @ (torch.nn.functional.silu(torch.from_numpy(gate @ x)).numpy()
                              * (up @ x))
    csr = [Matrix.csr(torch.from_numpy(m)) for m in (gate, up, down.T.copy())]
    arrays = [array for m in csr for array in (m.indptr, m.indices, m.data)]
    twins = kernels.twin_rows(csr[0].indptr, csr[0].indices)
    kernels.mlp_add(*arrays[:3], twins, True, *no_families(units), *arrays[3:], x, residual)
    np.testing.assert_allclose(residual, want, rtol=1e-5, atol=1e-4)


def no_families(units: int) -> tuple[np.ndarray, ...]:
    return GateFamilies.none(units).arrays


def family_gate(rng: np.random.Generator, hidden: int) -> np.ndarray:
    """A gate of 80 units: a family of 20 (twins among them), one of 8 units that are 4 pairs
    of twins, 7 units on one set of inputs (too few for a family), a family of 9 whose rows
    are spread among the others, and the rest on inputs of their own."""
    gate = np.zeros((80, hidden), dtype=np.float32)
    for units in (np.arange(0, 20), np.arange(30, 38), np.arange(40, 47), np.arange(50, 77, 3)):
        reads = rng.choice(np.arange(1, hidden), 12, replace=False)
        for unit in units:
            gate[unit, reads] = rng.standard_normal(12).astype(np.float32) * 3
    for unit in range(80):
        if not gate[unit].any():
            gate[unit, rng.choice(np.arange(1, hidden), 5, replace=False)] = 1.5
    gate[:, 0] = rng.choice([-300.0, -0.5, 2.0], 80)          # x[0] = 1: gates far below 0
    return gate


def test_gate_families_are_units_reading_the_same_inputs():
    rng = np.random.default_rng(41)
    gate = Matrix.csr(torch.from_numpy(family_gate(rng, 50)))
    families = GateFamilies.of(gate.indptr, gate.indices, gate.data)
    members = [families.units[start:stop].tolist() for start, stop in families.table[:, 2:4]]
    assert sorted(map(len, members)) == [8, 9, 20]
    assert members[0] == list(range(20)) and np.flatnonzero(families.in_family).size == 37
    for (first_input, last_input, _, _, start), units in zip(families.table, members):
        reads = families.inputs[first_input:last_input]
        panels = families.weights[start:start + -(-len(units) // 16) * reads.size * 16]
        weights = panels.reshape(-1, reads.size, 16).transpose(1, 0, 2).reshape(reads.size, -1)
        for member, unit in enumerate(units):
            row = gate.indptr[unit], gate.indptr[unit + 1]
            assert np.array_equal(gate.indices[row[0]:row[1]], reads)
            assert np.array_equal(weights[:, member], gate.data[row[0]:row[1]])
    gate.data[gate.indptr[31]] = np.inf          # an infinite weight: 30..37 are no family
    assert GateFamilies.of(gate.indptr, gate.indices, gate.data).table.shape[0] == 2


def mlp_arrays(gate, up, down):
    """`mlp_add`'s CSR arrays (gate, up, down as the engine keeps them), the gate's twin rows
    and its families."""
    csr = [Matrix.csr(torch.from_numpy(m)) for m in (gate, up, down.T.copy())]
    arrays = [array for m in csr for array in (m.indptr, m.indices, m.data)]
    twins = kernels.twin_rows(csr[0].indptr, csr[0].indices)
    return arrays, twins, GateFamilies.of(*arrays[:3])


@pytest.mark.parametrize("columns", [1, 2, 5, 8, 13])
def test_gate_families_take_the_rows_own_sums(columns):
    """The MLP with its gate families (dense products) is the MLP without them, to the bit:
    twins inside a family, units live in some columns and dead in others, inputs that are
    0 or -0 in every column (left out of a family's sums) or in some."""
    rng = np.random.default_rng(42)
    hidden = 50
    gate = family_gate(rng, hidden)
    up, down = random_sparse(80, hidden, 0.3, 15), random_sparse(hidden, 80, 0.3, 16)
    x = rng.standard_normal((hidden, columns)).astype(np.float32)
    x[0] = 1.0
    x[3::4] = 0.0
    x[5::8] = -0.0
    x[6::8, ::2] = 0.0
    arrays, twins, families = mlp_arrays(gate, up, down)
    assert twins[families.in_family].any() and families.table.shape[0] == 3
    assert families.weights.nbytes == (2 + 1 + 1) * 16 * 13 * 4   # 20, 8, 9 units; 13 inputs
    residual = rng.standard_normal((hidden, columns)).astype(np.float32)
    got, want = residual.copy(), residual.copy()
    kernels.mlp_add(*arrays[:3], twins, True, *families.arrays, *arrays[3:], x, got)
    kernels.mlp_add(*arrays[:3], twins, True, *no_families(80), *arrays[3:], x, want)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not np.array_equal(got, residual)


@pytest.mark.parametrize("columns", [1, 2, 5, 8, 13])
def test_gate_terms_on_inputs_that_are_zero_are_left_out_to_the_bit(columns):
    """Most gate inputs 0 or -0 in every column (a spliced machine's text-gate dims on its
    own tokens), a few in some columns only: the MLP that leaves their terms out is the MLP
    that adds every term (no families, `gate_finite` False), to the bit."""
    rng = np.random.default_rng(44)
    hidden = 50
    gate = family_gate(rng, hidden)
    up, down = random_sparse(80, hidden, 0.3, 17), random_sparse(hidden, 80, 0.3, 18)
    x = rng.standard_normal((hidden, columns)).astype(np.float32)
    x[0] = 1.0
    live = x[5::5].copy()
    x[1:] = 0.0
    x[2::3] = -0.0
    x[5::5] = live                                     # a fifth of the inputs live
    x[10::10, ::2] = 0.0
    arrays, twins, families = mlp_arrays(gate, up, down)
    nonzero = np.empty(hidden, dtype=np.bool_)
    kernels.nonzero_rows(x, nonzero)
    assert kernels.mostly_zero(families.inputs, nonzero) and families.table.shape[0] == 3
    residual = rng.standard_normal((hidden, columns)).astype(np.float32)
    want = residual.copy()
    kernels.mlp_add(*arrays[:3], twins, False, *no_families(80), *arrays[3:], x, want)
    for family_arrays in (families.arrays, no_families(80)):
        got = residual.copy()
        kernels.mlp_add(*arrays[:3], twins, True, *family_arrays, *arrays[3:], x, got)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not np.array_equal(want, residual)


@pytest.mark.parametrize("columns", [1, 3])
def test_an_infinite_gate_weight_on_a_zero_input_is_kept(columns):
    """inf * 0 is NaN: a gate with an infinite weight keeps its terms on zero inputs, and
    the unit's NaN reaches the residual as in transformers (one column and several)."""
    hidden, units = 6, 3
    gate, up = np.zeros((units, hidden), np.float32), np.zeros((units, hidden), np.float32)
    gate[:, 1], gate[:, 2], gate[1, 3] = 1.0, 2.0, np.inf
    up[:, 1] = 1.0
    down = np.ones((hidden, units), np.float32)
    x = np.zeros((hidden, columns), np.float32)
    x[1] = 1.0                                         # x[3] = 0: inf * 0 in unit 1
    mlp = Mlp([0, 1, 2], *(Matrix.csr(torch.from_numpy(m)) for m in (gate, up, down.T.copy())))
    assert not mlp.gate_finite
    residual = np.zeros((hidden, columns), np.float32)
    mlp_add(mlp, x, residual)
    with np.errstate(invalid="ignore"):
        gate_sums = gate @ x
    want = torch.from_numpy(down) @ (torch.nn.functional.silu(torch.from_numpy(gate_sums))
                                     * torch.from_numpy(up @ x))
    assert torch.isnan(want).all() and np.isnan(residual).all()


def test_twin_rows_are_neighbours_with_the_same_columns():
    gate = np.zeros((7, 6), dtype=np.float32)
    gate[0, [1, 4]] = [2.0, 3.0]
    gate[1, [1, 4]] = [-2.0, 5.0]          # 0 and 1: twins
    gate[2, [1, 4]] = [1.0, 1.0]           # same columns as 1, but 1 is taken
    gate[3, [0, 4]] = [1.0, 1.0]           # not 2's columns
    gate[4, [0, 4]] = [7.0, 1.0]           # 3 and 4: twins
    gate[5, [2]] = [1.0]
    gate[6, [2, 3]] = [1.0, 1.0]           # a longer row is no twin
    csr = Matrix.csr(torch.from_numpy(gate))
    assert kernels.twin_rows(csr.indptr, csr.indices).tolist() == \
        [True, False, False, True, False, False, False]


@pytest.mark.parametrize("columns", [1, 2, 6])
def test_twins_sum_each_row_in_its_own_order(columns):
    """Units in pairs with the same gate columns (a step's two units: the offset differs),
    some gates near zero: the MLP with the twins marked is the MLP without them to the bit."""
    rng = np.random.default_rng(21)
    hidden, pairs = 40, 30
    shared = random_sparse(pairs, hidden, 0.3, 9)
    shared[:, 0] = rng.choice([-300.0, 40.0, 0.25], pairs)
    gate = np.repeat(shared, 2, axis=0)
    gate[1::2, 0] -= 1000.0 * (gate[1::2, 0] != 0)
    gate[1::2, 1] += 3.0                              # one more column in the twin
    gate[0::2, 1] += 1.0
    up, down = random_sparse(2 * pairs, hidden, 0.3, 10), random_sparse(hidden, 2 * pairs, 0.3, 11)
    x = rng.standard_normal((hidden, columns)).astype(np.float32)
    x[0] = 1.0
    csr = [Matrix.csr(torch.from_numpy(m)) for m in (gate, up, down.T.copy())]
    arrays = [array for m in csr for array in (m.indptr, m.indices, m.data)]
    twins = kernels.twin_rows(csr[0].indptr, csr[0].indices)
    assert twins.sum() == pairs
    got = np.zeros((hidden, columns), dtype=np.float32)
    want = np.zeros((hidden, columns), dtype=np.float32)
    kernels.mlp_add(*arrays[:3], twins, True, *no_families(2 * pairs), *arrays[3:], x, got)
    kernels.mlp_add(*arrays[:3], np.zeros_like(twins), True, *no_families(2 * pairs),
                    *arrays[3:], x, want)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("columns", [5, 8, 13])
def test_the_mlp_of_a_column_does_not_depend_on_the_other_columns(columns):
    """Several columns at once (the loops over columns: eight, four and one at a time, twins
    summed in one pass, a unit live in some columns and dead in others) give each column's
    result alone (`_mlp_add_column`) to the bit."""
    rng = np.random.default_rng(33)
    hidden, pairs = 40, 30
    shared = random_sparse(pairs, hidden, 0.3, 12)
    gate = np.repeat(shared, 2, axis=0)
    gate[1::2] *= -1.5
    up, down = random_sparse(2 * pairs, hidden, 0.3, 13), random_sparse(hidden, 2 * pairs, 0.3, 14)
    x = rng.standard_normal((hidden, columns)).astype(np.float32)
    x[0] = 1.0
    gate[:, 0] = rng.choice([-300.0, 0.0, 2.0], 2 * pairs)
    x[1] = np.float32(60.0) * np.sign(rng.standard_normal(columns)).astype(np.float32)
    csr = [Matrix.csr(torch.from_numpy(m)) for m in (gate, up, down.T.copy())]
    arrays = [array for m in csr for array in (m.indptr, m.indices, m.data)]
    twins = kernels.twin_rows(csr[0].indptr, csr[0].indices)
    residual = rng.standard_normal((hidden, columns)).astype(np.float32)
    together = residual.copy()
    kernels.mlp_add(*arrays[:3], twins, True, *no_families(2 * pairs), *arrays[3:], x, together)
    for column in range(columns):
        alone = residual[:, column:column + 1].copy()
        kernels.mlp_add(*arrays[:3], twins, True, *no_families(2 * pairs), *arrays[3:],
                        x[:, column:column + 1].copy(), alone)
        assert np.array_equal(alone[:, 0].view(np.uint32), together[:, column].view(np.uint32))


def test_rms_norm_and_argmax():
    x = np.random.default_rng(7).standard_normal((64, 5)).astype(np.float32)
    scale = (1.0 + np.random.default_rng(8).standard_normal(64) * 0.1).astype(np.float32)
    out = np.empty_like(x)
    kernels.rms_norm(x, scale, np.float32(1e-6), out)
    tx = torch.from_numpy(x.T.copy())
    want = (tx * torch.rsqrt(tx.pow(2).mean(-1, keepdim=True) + 1e-6)) * torch.from_numpy(scale)
    np.testing.assert_allclose(out.T, want.numpy(), rtol=1e-6, atol=1e-6)
    logits = np.array([[1.0, 3.0], [2.0, 3.0], [2.0, 1.0]], dtype=np.float32)
    chosen = np.empty(2, dtype=np.int64)
    kernels.argmax_columns(logits, chosen)
    assert chosen.tolist() == torch.from_numpy(logits).argmax(0).tolist() == [1, 0]


@pytest.mark.parametrize("count", [0, 3, 16, 19, 40])
def test_attention_scores_are_sums_left_to_right(count):
    """`mixer_kernels.attention_scores` (the keys in blocks of KEY_BLOCK positions, each a
    dense panel) gives each query's score as the sum of query[i] * key[i] taken one term
    after the other in float32, to the bit, for every position below the count."""
    rng = np.random.default_rng(40 + count)
    dims, block = 37, mixer_kernels.KEY_BLOCK
    queries = rng.standard_normal((dims, 3)).astype(np.float32)
    keys = rng.standard_normal((48, dims)).astype(np.float32)
    key_blocks = np.ascontiguousarray(keys.reshape(48 // block, block, dims).transpose(0, 2, 1))
    got = np.full((count, 3), np.nan, dtype=np.float32)
    mixer_kernels.attention_scores(key_blocks, queries, got)
    for t in range(count):
        for j in range(3):
            total = np.float32(0.0)
            for i in range(dims):
                total = np.float32(total + np.float32(queries[i, j] * keys[t, i]))
            assert got[t, j].view(np.uint32) == total.view(np.uint32), (t, j)
