"""Model of select_ternary/kernel.cu: ternaries and && / || conditions."""
from _int32 import run_grid, sneg, ssub


def select_ternary(th, a, b, out):
    t = th.threadIdx
    x = a[t]
    y = b[t]
    d = ssub(x, y) if x > y else ssub(y, x)
    d = d if t & 1 else sneg(d)
    both = 1 if (x > 0 and y > 0) else 0
    either = 7 if (x == 0 or y == 0) else 3
    base = 4 * t
    out[base + 0] = d
    out[base + 1] = both
    out[base + 2] = either
    out[base + 3] = ((x if x & 4 else y) if x != y else 99)


def model(launch):
    return run_grid(launch, select_ternary)
