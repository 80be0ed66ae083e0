"""Model of matvec/kernel.cu: y = M x, one thread per row."""
from _int32 import run_grid, sadd, smul


def matvec(th, m, x, y, rows, cols):
    r = th.threadIdx
    if r >= rows:
        return
    acc = 0
    for c in range(cols):
        acc = sadd(acc, smul(m[r * cols + c], x[c]))
    y[r] = acc


def model(launch):
    return run_grid(launch, matvec)
