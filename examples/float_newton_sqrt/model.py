"""Model of float_newton_sqrt/kernel.cu: eight Newton steps g = 0.5 * (g + x / g) from
max(x, 1), every division, addition and multiply one numpy float32 rounding (`_float32`)."""
import numpy as np

from _float32 import add, divide, float_launch, float_of, multiply, word_of
from _int32 import run_grid


def float_newton_sqrt(th, x, root):
    i = th.blockIdx * th.blockDim + th.threadIdx
    v = float_of(x[i])
    g = v if v > 1.0 else np.float32(1.0)
    for _ in range(8):
        g = multiply(np.float32(0.5), add(g, divide(v, g)))
    root[i] = word_of(g)


def model(launch):
    return run_grid(float_launch(launch), float_newton_sqrt)
