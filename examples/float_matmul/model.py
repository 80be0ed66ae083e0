"""Model of float_matmul/kernel.cu: c[row][col] = sum over k in order of a[row][k] * b[k][col],
each product and each partial sum one numpy float32 rounding (`_float32`)."""
import numpy as np

from _float32 import add, float_launch, float_of, multiply, word_of
from _int32 import run_grid

N = 4


def float_matmul(th, a, b, c):
    row, col = th.threadIdx // N, th.threadIdx % N
    total = np.float32(0.0)
    for k in range(N):
        total = add(total, multiply(float_of(a[row * N + k]), float_of(b[k * N + col])))
    c[row * N + col] = word_of(total)


def model(launch):
    return run_grid(float_launch(launch), float_matmul)
