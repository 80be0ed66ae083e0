"""Model of mulhi_wide/kernel.cu: __mulhi, __umulhi and the low half of the product."""
from _int32 import mulhi_s, mulhi_u, run_grid, to_unsigned, umul


def mulhi_wide(th, a, b, out):
    t = th.threadIdx
    x = a[t]
    y = b[t]
    base = 3 * t
    out[base + 0] = mulhi_s(x, y)
    out[base + 1] = mulhi_u(to_unsigned(x), to_unsigned(y))
    out[base + 2] = umul(to_unsigned(x), to_unsigned(y))


def model(launch):
    return run_grid(launch, mulhi_wide)
