"""Model of early_return/kernel.cu: data-dependent early returns."""
from _int32 import run_grid, sadd, smul, ssub


def early_return(th, inp, out, count):
    t = th.threadIdx
    v = inp[t]
    if v < 0:
        return
    if v == 0:
        out[t] = -1
        return
    out[t] = ssub(smul(v, v), t)
    count[t] = sadd(count[t], 1)


def model(launch):
    return run_grid(launch, early_return)
