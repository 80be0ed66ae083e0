"""Model of float_matvec/kernel.cu: y[row] = sum over k, left to right, of a[row][k] * x[k],
each product and each partial sum one numpy float32 rounding (`_float32`)."""
import numpy as np

from _float32 import add, float_launch, float_of, multiply, word_of
from _int32 import run_grid


def float_matvec(th, a, x, y, columns):
    row = th.threadIdx
    total = np.float32(0.0)
    for k in range(columns):
        total = add(total, multiply(float_of(a[row * columns + k]), float_of(x[k])))
    y[row] = word_of(total)


def model(launch):
    return run_grid(float_launch(launch), float_matvec)
