"""Model of minmax_clamp/kernel.cu: signed min / max / abs / clamp."""
from _int32 import run_grid, sneg


def minmax_clamp(th, a, b, out, lo, hi):
    t = th.threadIdx
    x = a[t]
    y = b[t]
    base = 4 * t
    out[base + 0] = min(x, y)
    out[base + 1] = max(x, y)
    out[base + 2] = sneg(x) if x < 0 else x      # abs(); the data avoids INT_MIN
    out[base + 3] = min(max(x, lo), hi)


def model(launch):
    return run_grid(launch, minmax_clamp)
