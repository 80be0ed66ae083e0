"""The engine's dense product against the kernel it replaced, and torch's BLAS, side by side.

    python bench/bench_dense.py [--rows 6144] [--inner 2048] [--columns 1 2 4 8 64]

A spliced checkpoint's base layers, embedding and `lm_head` are dense; the engine multiplies
them with `kernels.dense_product` (the weight kept transposed, the running sums of a block of
rows held while the weights advance, four terms and four columns a pass), and with
`kernels.dense_product_bf16` where every weight is a bfloat16 (held as 16 bits, widened in
the product).  The baseline is the kernel before them (`one_column_a_pass` below: four
terms a pass, one column at a time over a block of 4,096 sums, the same sums), and
`torch.mm` (BLAS, one thread; its sums are blocked, so they are not the engine's) is given
for scale.  Each figure is the best of seven runs in one process; the engine's results are
checked equal to the baseline's to the bit.  The last columns are multiply-adds a second,
and those of the inner step (`kernels._add_four_terms`) repeated on one block whose operands
stay in the first-level cache: the rate the kernel's arithmetic allows when memory never
waits.  Threads: one (`torch.set_num_threads(1)`; the numba kernels run on the calling
thread).
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
def one_column_a_pass(operand, x, out):
    """The engine's dense product before this one: a block of 4,096 sums (at least 512
    rows), four terms a pass, the columns one after the other."""
    inner, rows = operand.shape
    columns = x.shape[1]
    block = max(4096 // max(columns, 1), 512)
    sums = np.empty((columns, block), dtype=np.float32)
    whole = inner - inner % 4
    for start in range(0, rows, block):
        stop = min(rows, start + block)
        sums[:, :stop - start] = 0.0
        for k in range(0, whole, 4):
            w0, w1 = operand[k, start:stop], operand[k + 1, start:stop]
            w2, w3 = operand[k + 2, start:stop], operand[k + 3, start:stop]
            for column in range(columns):
                v0, v1, v2, v3 = x[k, column], x[k + 1, column], x[k + 2, column], \
                    x[k + 3, column]
                target = sums[column]
                for r in range(stop - start):
                    target[r] = (((target[r] + w0[r] * v0) + w1[r] * v1) + w2[r] * v2) \
                        + w3[r] * v3
        for k in range(whole, inner):
            weights = operand[k, start:stop]
            for column in range(columns):
                value = x[k, column]
                target = sums[column]
                for r in range(stop - start):
                    target[r] += weights[r] * value
        for r in range(stop - start):
            for column in range(columns):
                out[start + r, column] = sums[column, r]


@njit(cache=True, nogil=True)
def passes_in_cache(sums, operand, x, passes):
    """`dense_product`'s inner step again and again on one block of 512 rows and 4 terms
    (operands in the first-level cache): the rate its arithmetic allows."""
    for _ in range(passes):
        _add_four_terms(sums, operand[0], operand[1], operand[2], operand[3], x, 0)


def in_cache_rate(columns: int) -> float:
    """Multiply-adds a second of `dense_product`'s inner step with nothing to wait for."""
    sums = np.zeros((columns, 512), dtype=np.float32)
    operand = np.full((4, 512), 1e-3, dtype=np.float32)
    x = np.ones((4, columns), dtype=np.float32)
    passes = 20_000
    seconds = best_of(lambda: passes_in_cache(sums, operand, x, passes))
    return passes * 4 * 512 * columns / seconds


def best_of(work, runs: int = 7) -> float:
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
    parser.add_argument("--columns", type=int, nargs="+", default=[1, 2, 4, 8, 64])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    weight = torch.from_numpy(rng.standard_normal((args.rows, args.inner), dtype=np.float32))
    weight = weight.to(torch.bfloat16).to(torch.float32)     # values both kernels can hold
    full, halves = Matrix.of(weight), Matrix.of(weight.to(torch.bfloat16))
    full.stored = np.ascontiguousarray(weight.numpy().T)     # kept float32, not 16 bits
    assert halves.bf16 and not full.bf16
    print(f"dense {args.rows} x {args.inner}, one thread; ms per product (best of 7)")
    print("| columns | before | dense_product (float32) | dense_product_bf16 | torch.mm "
          "| speed-up: float32, bf16 | G mul-add/s: float32, bf16 | inner step in cache |")
    print("|---|---|---|---|---|---|---|---|")
    for columns in args.columns:
        x = rng.standard_normal((args.inner, columns), dtype=np.float32)
        before = np.empty((args.rows, columns), dtype=np.float32)
        old = best_of(lambda: one_column_a_pass(full.stored, x, before))
        new = best_of(lambda: matmul(full, x))
        half = best_of(lambda: matmul(halves, x))
        for matrix in (full, halves):
            if not np.array_equal(matmul(matrix, x), before):
                raise SystemExit(f"dense_product differs from the baseline's sums at {columns}")
        blas = best_of(lambda: torch.mm(weight, torch.from_numpy(x)))
        madds = args.rows * args.inner * columns / 1e9
        print(f"| {columns} | {old * 1e3:.2f} | {new * 1e3:.2f} | {half * 1e3:.2f} | "
              f"{blas * 1e3:.2f} | {old / new:.2f}x, {old / half:.2f}x | "
              f"{madds / new:.1f}, {madds / half:.1f} | {in_cache_rate(columns) / 1e9:.1f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
