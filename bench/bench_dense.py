"""The engine's dense product against the kernel it replaced, and torch's BLAS, side by side.

    python bench/bench_dense.py [--rows 6144] [--inner 2048] [--columns 1 2 8 64 256]

A spliced checkpoint's base layers, embedding and `lm_head` are dense; the engine multiplies
them with `kernels.dense_product` (the weight kept transposed, the running sums of a block of
rows held while the weights advance, four terms a pass).  The baseline is the kernel before
it (`row_by_row` below: each row's sum left to right, the same sums), and `torch.mm` (BLAS,
one thread; its sums are blocked, so they are not the engine's) is given for scale.  Each
figure is the best of five runs in one process; the engine's result is checked equal to the
baseline's to the bit.  The last two columns are the product's multiply-adds a second, and
those of its inner step (`kernels._add_four_terms`) repeated on one block whose operands stay
in the first-level cache: the rate the kernel's arithmetic allows when memory never waits
(with one column the product is bound by reading the weights; with 8 and more, by that).  Threads: one (`torch.set_num_threads(1)`; the numba kernels run on
the calling thread).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from numba import njit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from qwengpu.engine.engine import matmul  # noqa: E402
from qwengpu.engine.kernels import _add_four_terms  # noqa: E402
from qwengpu.engine.weights import Matrix  # noqa: E402


@njit(cache=True, nogil=True)
def row_by_row(weight, x, out):
    """The engine's dense product before `dense_product`: row by row, left to right."""
    rows, inner = weight.shape
    columns = x.shape[1]
    for row in range(rows):
        if columns <= 2:
            for column in range(columns):
                total = np.float32(0.0)
                for k in range(inner):
                    total += weight[row, k] * x[k, column]
                out[row, column] = total
            continue
        target = out[row]
        target[:] = 0.0
        for k in range(inner):
            value = weight[row, k]
            source = x[k]
            for column in range(columns):
                target[column] += value * source[column]


@njit(cache=True, nogil=True)
def passes_in_cache(sums, operand, x, passes):
    """`dense_product`'s inner step again and again on one block of 512 rows and 4 terms
    (operands in the first-level cache): the rate its arithmetic allows."""
    for _ in range(passes):
        _add_four_terms(sums, operand, 0, 0, 512, x)


def in_cache_rate(columns: int) -> float:
    """Multiply-adds a second of `dense_product`'s inner step with nothing to wait for."""
    sums = np.zeros((columns, 512), dtype=np.float32)
    operand = np.full((4, 512), 1e-3, dtype=np.float32)
    x = np.ones((4, columns), dtype=np.float32)
    passes = 20_000
    seconds = best_of(lambda: passes_in_cache(sums, operand, x, passes))
    return passes * 4 * 512 * columns / seconds


def best_of(work, runs: int = 5) -> float:
    work()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6144)
    parser.add_argument("--inner", type=int, default=2048)
    parser.add_argument("--columns", type=int, nargs="+", default=[1, 2, 8, 64, 256])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((args.rows, args.inner), dtype=np.float32)
    matrix = Matrix.of(torch.from_numpy(weight))
    print(f"dense {args.rows} x {args.inner} float32, one thread; ms per product (best of 5)")
    print("| columns | before (row by row) | dense_product | torch.mm | speed-up over before "
          "| dense_product G mul-add/s | its inner step in cache |")
    print("|---|---|---|---|---|---|---|")
    for columns in args.columns:
        x = rng.standard_normal((args.inner, columns), dtype=np.float32)
        before = np.empty((args.rows, columns), dtype=np.float32)
        old = best_of(lambda: row_by_row(weight, x, before))
        new = best_of(lambda: matmul(matrix, x))
        if not np.array_equal(matmul(matrix, x), before):
            raise SystemExit(f"dense_product differs from the row-by-row sums at {columns}")
        blas = best_of(lambda: torch.mm(torch.from_numpy(weight), torch.from_numpy(x)))
        rate = args.rows * args.inner * columns / new
        print(f"| {columns} | {old * 1e3:.1f} | {new * 1e3:.1f} | {blas * 1e3:.1f} | "
              f"{old / new:.1f}x | {rate / 1e9:.1f} | {in_cache_rate(columns) / 1e9:.1f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
