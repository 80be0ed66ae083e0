"""Model of float_saxpy/kernel.cu: y[i] = a[0] * x[i] + y[i] with numpy's float32 multiply
and add (`_float32`), rounded after each as __fmul_rn and the add are."""
from _float32 import add, float_launch, float_of, multiply, word_of
from _int32 import run_grid


def float_saxpy(th, a, x, y):
    i = th.blockIdx * th.blockDim + th.threadIdx
    y[i] = word_of(add(multiply(float_of(a[0]), float_of(x[i])), float_of(y[i])))


def model(launch):
    return run_grid(float_launch(launch), float_saxpy)
