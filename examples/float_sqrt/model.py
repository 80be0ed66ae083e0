"""Model of float_sqrt/kernel.cu: numpy's float32 square root (`_float32`), correctly
rounded as IEEE-754 requires; a negative number gives the canonical NaN."""
from _float32 import float_launch, float_of, square_root, word_of
from _int32 import run_grid


def float_sqrt(th, x, r):
    i = th.blockIdx * th.blockDim + th.threadIdx
    r[i] = word_of(square_root(float_of(x[i])))


def model(launch):
    return run_grid(float_launch(launch), float_sqrt)
