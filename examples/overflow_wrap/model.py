"""Model of overflow_wrap/kernel.cu: unsigned wrap-around read back as int."""
from _int32 import run_grid, shr_s, to_signed, to_unsigned, uadd, umul, usub


def overflow_wrap(th, x, y, out):
    t = th.threadIdx
    a = to_unsigned(x[t])
    b = to_unsigned(y[t])
    base = 6 * t
    out[base + 0] = to_signed(uadd(a, b))
    out[base + 1] = to_signed(usub(a, b))
    out[base + 2] = to_signed(umul(a, b))
    out[base + 3] = to_signed(usub(0, a))
    out[base + 4] = shr_s(x[t], 31)
    out[base + 5] = int(to_signed(uadd(a, b)) < x[t])


def model(launch):
    return run_grid(launch, overflow_wrap)
