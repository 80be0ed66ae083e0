"""Model of histogram/kernel.cu: bins[k] counts the values v (of the first n) with v & 7 == k;
extremes = [max, min] of them (atomics: the order does not matter)."""
from _int32 import run_grid


def histogram(th, values, bins, extremes, n):
    # one thread's part, with the block's shared bins folded into the global ones: the
    # counts only add, so the result is the same
    i = th.blockIdx * th.blockDim + th.threadIdx
    if i < n:
        v = values[i]
        bins[v & 7] = bins[v & 7] + 1
        extremes[0] = max(extremes[0], v)
        extremes[1] = min(extremes[1], v)


def model(launch):
    return run_grid(launch, histogram)
