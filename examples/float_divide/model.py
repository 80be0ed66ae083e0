"""Model of float_divide/kernel.cu: c[i] = a[i] / b[i] with numpy's float32 division
(`_float32`): correctly rounded, x / 0 = inf, 0 / 0 and inf / inf a NaN (the canonical one)."""
from _float32 import divide, float_launch, float_of, word_of
from _int32 import run_grid


def float_divide(th, a, b, c):
    i = th.blockIdx * th.blockDim + th.threadIdx
    c[i] = word_of(divide(float_of(a[i]), float_of(b[i])))


def model(launch):
    return run_grid(float_launch(launch), float_divide)
