"""Model of vector_add/kernel.cu: c[i] = a[i] + b[i] for i < n."""
from _int32 import run_grid, sadd


def vector_add(th, a, b, c, n):
    i = th.blockIdx * th.blockDim + th.threadIdx
    if i < n:
        c[i] = sadd(a[i], b[i])


def model(launch):
    return run_grid(launch, vector_add)
