"""Model of float_horner/kernel.cu: Horner's rule with numpy's float32 multiply and add
(`_float32`), each rounded where the kernel rounds it (here the Taylor polynomial of e^x)."""
from _float32 import add, float_launch, float_of, multiply, word_of
from _int32 import run_grid


def float_horner(th, coeffs, degree, x, p):
    i = th.blockIdx * th.blockDim + th.threadIdx
    v = float_of(x[i])
    r = float_of(coeffs[degree])
    for k in range(degree - 1, -1, -1):
        r = add(multiply(r, v), float_of(coeffs[k]))
    p[i] = word_of(r)


def model(launch):
    return run_grid(float_launch(launch), float_horner)
