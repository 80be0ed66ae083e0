"""The engine's dense product against the kernel before it, and torch's BLAS, side by side.

    python bench/bench_dense.py [--rows 6144] [--inner 2048] [--columns 1 2 4 8 64]
                                [--matrices 8] [--baseline CHECKOUT]

A spliced checkpoint's base layers, embedding and `lm_head` are dense; the engine multiplies
them with `dense_kernels.dense_product`: the weight kept transposed in panels of 16 rows
(`dense_kernels.pack_panels`), a panel's running sums held in vector registers while its
weights stream past (`register_blocks`: eight columns a block, then four, two or one),
float32 weights or bfloat16 ones held as 16 bits and widened in the product.  The baseline
is the kernel before it (`panels_of_128` below, commit 36dd803: panels of 128 rows whose
running sums stay in the first-level cache, eight columns a pass two terms at a time, the
same sums), on the same bfloat16 weights; `torch.mm` (BLAS, one thread, float32; its sums
are blocked, so they are not the engine's) is given for scale.  Each product runs over
`--matrices` different matrices in turn (default 8: 200 MB of bfloat16s at the default
size, more than the last-level cache holds, as a model's layers are), and the figure is the
best of five such rounds, per product, in one process, the kernels taking turns round after
round (the machine's load moves by 20 to 40% in a minute); the engine's results are checked
equal to the baseline's to the bit.  The last columns are multiply-adds a second, and those
of the engine's blocks on one panel of 1,024 terms whose operands stay in the first-level
cache: the rate the kernel's arithmetic allows when memory never waits.  Threads: one
(`torch.set_num_threads(1)`; the numba kernels run on the calling thread).  With
`--baseline CHECKOUT`, CHECKOUT's own `dense_product` (its engine imported under another
name, as `bench_engine_ab.py` does) runs beside them on its own panels of the same weights,
held to the same sums.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from qwengpu.engine.dense_kernels import PANEL_ROWS, dense_panels, pack_panels, \
    panel_terms  # noqa: E402
from qwengpu.engine.weights import Matrix  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from bench_engine_ab import baseline_engine_module  # noqa: E402


# the baseline's panels: 128 rows, and the terms a group of columns takes before moving on
ROWS_OF_128, TERMS_OF_128 = 128, 512


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



@njit(nogil=True)
def panels_of_128(panels, x, out, first, last):
    """The engine's dense product before register blocks (commit 36dd803): panels of 128
    rows, whose running sums (in the first-level cache) a pass of eight columns two terms
    at a time, then four, two or one column four terms at a time, advance along."""
    inner, width = panels.shape[1], panels.shape[2]
    rows, columns = out.shape[0], x.shape[1]
    sums = np.empty((columns, width), dtype=np.float32)
    whole = inner - inner % 4
    for p in range(first, last):
        panel = panels[p]
        sums[:, :] = 0.0
        for start in range(0, whole, TERMS_OF_128):
            stop = min(whole, start + TERMS_OF_128)
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


@njit(nogil=True)
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


@njit(nogil=True)
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


@njit(nogil=True)
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


@njit(nogil=True)
def _one_column_four_terms(target, panel, values, start, stop):
    for k in range(start, stop, 4):
        w0, w1, w2, w3 = panel[k], panel[k + 1], panel[k + 2], panel[k + 3]
        v0, v1, v2, v3 = values[k], values[k + 1], values[k + 2], values[k + 3]
        for r in range(w0.shape[0]):
            target[r] = (((target[r] + weight_value(w0[r]) * v0) + weight_value(w1[r]) * v1)
                         + weight_value(w2[r]) * v2) + weight_value(w3[r]) * v3


@njit(nogil=True)
def _add_one_term(sums, weights, x, k):
    """sums[c, r] += weights[r] x[k, c] for every column c."""
    for column in range(x.shape[1]):
        value = x[k, column]
        target = sums[column]
        for r in range(weights.shape[0]):
            target[r] += weight_value(weights[r]) * value


@njit(nogil=True)                 # not cached: it compiles the engine's kernels into itself
def passes_in_cache(panels, x, out, passes):
    """`dense_product` again and again on one panel of 1,024 terms (operands in the
    first-level cache): the rate its arithmetic allows."""
    for _ in range(passes):
        dense_panels(panels, x, out, 0, 1)


def in_cache_rate(columns: int) -> float:
    """Multiply-adds a second of `dense_product`'s passes with nothing to wait for."""
    panels = pack_panels(np.full((1024, PANEL_ROWS), 0x3A83, dtype=np.uint16))   # 1e-3
    x = np.ones((1024, columns), dtype=np.float32)
    out = np.empty((PANEL_ROWS, columns), dtype=np.float32)
    passes = 20_000
    seconds = best_of(lambda: passes_in_cache(panels, x, out, passes))
    return passes * 1024 * PANEL_ROWS * columns / seconds


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
    parser.add_argument("--columns", type=int, nargs="+", default=[1, 2, 4, 8, 64])
    parser.add_argument("--matrices", type=int, default=8,
                        help="different matrices each round multiplies in turn")
    parser.add_argument("--baseline", type=Path,
                        help="a checkout of this project: its engine's dense_product, on its "
                             "own panels of the same bfloat16 weights, runs beside")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        checkout = None if args.baseline is None else \
            baseline_engine_module(args.baseline.resolve(), Path(folder))
        run(args, checkout)
    return 0


def run(args: argparse.Namespace, checkout) -> None:
    """The table: a row per column count (see the module doc)."""
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    weights = [torch.from_numpy(rng.standard_normal((args.rows, args.inner), dtype=np.float32))
               .to(torch.bfloat16) for _ in range(args.matrices)]
    halves = [Matrix.of(weight) for weight in weights]
    full = [Matrix.of(weight.to(torch.float32)) for weight in weights]
    for matrix in full:                                   # kept float32, not 16 bits
        matrix.stored = pack_panels(np.ascontiguousarray(matrix.dense.T))
    in_128s = [np.ascontiguousarray(panel_terms(pack_panels(
        (matrix.dense.T.view(np.uint32) >> 16).astype(np.uint16), ROWS_OF_128), args.inner))
        for matrix in halves]                             # one term a row, as it read them
    floats = [weight.to(torch.float32) for weight in weights]
    assert all(m.bf16 for m in halves) and not any(m.bf16 for m in full)

    def panels(stored, x, out):
        dense_panels(stored, x, out, 0, stored.shape[0])

    def before_panels(stored, x, out):
        panels_of_128(stored, x, out, 0, stored.shape[0])

    def torch_mm(weight, x, out):
        torch.mm(weight, torch.from_numpy(x))

    contenders = {"before (bf16)": (before_panels, in_128s),
                  "dense_product (float32)": (panels, [m.stored for m in full]),
                  "dense_product (bf16)": (panels, [m.stored for m in halves]),
                  "torch.mm": (torch_mm, floats)}
    if checkout is not None:
        def checkout_panels(stored, x, out):
            checkout.dense_kernels.dense_panels(stored, x, out, 0, stored.shape[0])

        contenders["baseline checkout (bf16)"] = (
            checkout_panels, [checkout.weights.Matrix.of(weight).stored for weight in weights])
    count = args.matrices
    print(f"dense {args.rows} x {args.inner}, one thread, {count} matrices in turn; ms per "
          f"product (the best of 5 rounds, the {len(contenders)} taking turns)")
    print(f"| columns | {' | '.join(contenders)} | speed-up: bf16 | G mul-add/s: float32, "
          f"bf16 | passes in cache |")
    print("|---" * (len(contenders) + 4) + "|")
    for columns in args.columns:
        x = rng.standard_normal((args.inner, columns), dtype=np.float32)
        want = np.empty((args.rows, columns), dtype=np.float32)
        got = np.empty_like(want)
        best = dict.fromkeys(contenders, float("inf"))
        for turn in range(6):                 # they take turns, round after round
            for name, (kernel, operands) in contenders.items():
                started = time.perf_counter()
                for operand in operands:
                    kernel(operand, x, got)
                if turn:                      # the first round compiles and warms
                    best[name] = min(best[name], (time.perf_counter() - started) / count)
        for index in range(count):
            before_panels(in_128s[index], x, want)
            for name, (kernel, operands) in contenders.items():
                if name != "torch.mm":
                    kernel(operands[index], x, got)
                    if not np.array_equal(got, want):
                        raise SystemExit(f"{name} differs from the kernel before's sums at "
                                         f"{columns} columns")
        madds = args.rows * args.inner * columns / 1e9
        times = " | ".join(f"{seconds * 1e3:.2f}" for seconds in best.values())
        old, new, half = (best[name] for name in list(contenders)[:3])
        print(f"| {columns} | {times} | {old / half:.2f}x | {madds / new:.1f}, "
              f"{madds / half:.1f} | {in_cache_rate(columns) / 1e9:.1f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
