"""Model of float_complex_mul/kernel.cu: (ac - bd) + (ad + bc)i with numpy's float32 multiply,
subtract and add (`_float32`), each rounded where the kernel rounds it (inf times 0 is a NaN)."""
from _float32 import add, float_launch, float_of, multiply, word_of
from _int32 import run_grid


def float_complex_mul(th, x, y, z):
    i = th.threadIdx
    a, b = float_of(x[2 * i]), float_of(x[2 * i + 1])
    c, d = float_of(y[2 * i]), float_of(y[2 * i + 1])
    z[2 * i] = word_of(add(multiply(a, c), -multiply(b, d)))
    z[2 * i + 1] = word_of(add(multiply(a, d), multiply(b, c)))


def model(launch):
    return run_grid(float_launch(launch), float_complex_mul)
