"""Model of float_vector_add/kernel.cu: c[i] = a[i] + b[i] in binary32 for i < n, with
numpy's float32 add (`_float32`)."""
from _float32 import add, float_launch, float_of, word_of
from _int32 import run_grid


def float_vector_add(th, a, b, c, n):
    i = th.blockIdx * th.blockDim + th.threadIdx
    if i < n:
        c[i] = word_of(add(float_of(a[i]), float_of(b[i])))


def model(launch):
    return run_grid(float_launch(launch), float_vector_add)
