"""Model of matmul/kernel.cu: c[row][col] = sum over k of a[row][k] * b[k][col]."""
from _int32 import run_grid, sadd, smul


def matmul(th, a, b, c, n, m, p):
    row, col = th.blockIdx, th.threadIdx
    if row < n and col < p:
        s = 0
        for k in range(m):
            s = sadd(s, smul(a[row * m + k], b[k * p + col]))
        c[row * p + col] = s


def model(launch):
    return run_grid(launch, matmul)
