"""Model of unseen/horner/kernel.cu: Horner's rule per element."""
from _int32 import run_grid, sadd, smul


def horner(th, c, x, y, deg, n):
    i = th.blockIdx * th.blockDim + th.threadIdx
    if i >= n:
        return
    v = x[i]
    acc = c[deg]
    for k in range(deg - 1, -1, -1):
        acc = sadd(smul(acc, v), c[k])
    y[i] = acc


def model(launch):
    return run_grid(launch, horner)
