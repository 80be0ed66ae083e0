"""Model of matrix_add_2d/kernel.cu: c = a + b over the 7 x 4 matrix inside an 8-word pitch."""
from _int32 import run_grid, sadd, smul


def matrix_add_2d(th, a, b, c, width, height, pitch):
    col = th.blockIdx.x * th.blockDim.x + th.threadIdx.x
    row = th.blockIdx.y * th.blockDim.y + th.threadIdx.y
    if col < width and row < height:
        i = sadd(smul(row, pitch), col)
        c[i] = sadd(a[i], b[i])


def model(launch):
    return run_grid(launch, matrix_add_2d)
