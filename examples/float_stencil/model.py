"""Model of float_stencil/kernel.cu: out[i] = (in[i-1] + in[i]) + in[i+1] in binary32, the
neighbours outside [0, n) 0.0, with numpy's float32 add (`_float32`)."""
from _float32 import add, float_launch, float_of, word_of
from _int32 import run_grid


def float_stencil(th, in_, out, n):
    i = th.blockIdx * th.blockDim + th.threadIdx
    if i < n:
        left = float_of(in_[i - 1]) if i > 0 else float_of(0)
        right = float_of(in_[i + 1]) if i + 1 < n else float_of(0)
        out[i] = word_of(add(add(left, float_of(in_[i])), right))


def model(launch):
    return run_grid(float_launch(launch), float_stencil)
