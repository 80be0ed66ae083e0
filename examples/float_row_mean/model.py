"""Model of float_row_mean/kernel.cu: each row summed left to right with numpy's float32 add,
then divided by float32(columns) (exact for small counts) with its float32 division."""
import numpy as np

from _float32 import add, divide, float_launch, float_of, word_of
from _int32 import run_grid


def float_row_mean(th, a, columns, mean):
    row = th.threadIdx
    total = np.float32(0.0)
    for k in range(columns):
        total = add(total, float_of(a[row * columns + k]))
    mean[row] = word_of(divide(total, np.float32(columns)))


def model(launch):
    return run_grid(float_launch(launch), float_row_mean)
