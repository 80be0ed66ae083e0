"""Model of saxpy_int/kernel.cu: y[i] = a * x[i] + y[i] for i < n."""
from _int32 import run_grid, sadd, smul


def saxpy_int(th, n, a, x, y):
    i = th.blockIdx * th.blockDim + th.threadIdx
    if i < n:
        y[i] = sadd(smul(a, x[i]), y[i])


def model(launch):
    return run_grid(launch, saxpy_int)
