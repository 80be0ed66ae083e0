"""Model of divconst/kernel.cu: division and remainder by constants, C rounding."""
from _int32 import run_grid, sdiv, srem, to_unsigned, udiv, urem


def divconst(th, x, out):
    t = th.threadIdx
    v = x[t]
    u = to_unsigned(v)
    base = 5 * t
    out[base + 0] = udiv(u, 10)
    out[base + 1] = urem(u, 10)
    out[base + 2] = sdiv(v, 7)
    out[base + 3] = srem(v, 7)
    out[base + 4] = sdiv(v, 4)


def model(launch):
    return run_grid(launch, divconst)
