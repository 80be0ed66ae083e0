"""Model of mul_wide64/kernel.cu: 64-bit products split into low and high words."""
from _int32 import hi32, lo32, mul_wide_s, mul_wide_u, run_grid


def mul_wide64(th, a, b, out):
    t = th.threadIdx
    x = a[t]
    y = b[t]
    p = mul_wide_s(x, y)        # long long: exact, can be negative
    q = mul_wide_u(x, y)        # unsigned long long: exact, non-negative
    base = 4 * t
    out[base + 0] = lo32(p)
    out[base + 1] = hi32(p)     # p >> 32 on a signed 64-bit value: arithmetic
    out[base + 2] = lo32(q)
    out[base + 3] = hi32(q)


def model(launch):
    return run_grid(launch, mul_wide64)
