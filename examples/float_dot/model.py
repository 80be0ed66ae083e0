"""Model of float_dot/kernel.cu: the 16 products with numpy's float32 multiply, summed by the
kernel's tree (round `stride`: element t gets partial[t] + partial[t + stride]) with its
float32 add (`_float32`)."""
from _float32 import add, float_launch, float_of, multiply, word_of
from _int32 import run_blocks

BLOCK = 16


def float_dot(block, x, y, dot):
    partial = [multiply(float_of(x[t]), float_of(y[t])) for t in block.threads]
    stride = BLOCK // 2
    while stride > 0:                       # each round ends at __syncthreads
        partial = [add(partial[t], partial[t + stride]) if t < stride else partial[t]
                   for t in block.threads]
        stride //= 2
    dot[0] = word_of(partial[0])


def model(launch):
    return run_blocks(float_launch(launch), float_dot)
