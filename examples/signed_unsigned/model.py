"""Model of signed_unsigned/kernel.cu: the same bits as int and as unsigned."""
from _int32 import run_grid, sdiv, shr_s, shr_u, to_unsigned


def signed_unsigned(th, x, y, out):
    t = th.threadIdx
    a = x[t]
    b = y[t]
    ua = to_unsigned(a)
    ub = to_unsigned(b)
    base = 6 * t
    out[base + 0] = shr_s(a, 3)
    out[base + 1] = shr_u(ua, 3)
    out[base + 2] = int(a < b)
    out[base + 3] = int(ua < ub)
    out[base + 4] = sdiv(a, 8)
    out[base + 5] = max(ua, ub)


def model(launch):
    return run_grid(launch, signed_unsigned)
