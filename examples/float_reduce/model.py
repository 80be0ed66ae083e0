"""Model of float_reduce/kernel.cu: each block's 16 floats summed by the kernel's tree (in
round `stride`, element t gets partial[t] + partial[t + stride]), with numpy's float32 add
(`_float32`), so every rounding happens where the kernel's does."""
from _float32 import add, float_launch, float_of, word_of
from _int32 import run_blocks

BLOCK = 16


def float_reduce(block, in_, sums):
    partial = [float_of(in_[block.blockIdx * BLOCK + t]) for t in block.threads]
    stride = BLOCK // 2
    while stride > 0:                       # each round ends at __syncthreads
        partial = [add(partial[t], partial[t + stride]) if t < stride else partial[t]
                   for t in block.threads]
        stride //= 2
    sums[block.blockIdx] = word_of(partial[0])


def model(launch):
    return run_blocks(float_launch(launch), float_reduce)
