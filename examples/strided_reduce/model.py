"""Model of strided_reduce/kernel.cu: a grid-stride sum and xor per thread."""
from _int32 import run_grid, sadd


def strided_reduce(th, a, total, xr, n):
    i = th.blockIdx * th.blockDim + th.threadIdx
    stride = th.gridDim * th.blockDim
    s = 0
    x = 0
    j = i
    while j < n:
        s = sadd(s, a[j])
        x ^= a[j]
        j += stride
    total[i] = s
    xr[i] = x


def model(launch):
    return run_grid(launch, strided_reduce)
