"""Model of shared_reduce/kernel.cu: out[b] = the sum of block b's inputs (those below n)."""
from _int32 import run_blocks, sadd


def shared_reduce(block, in_, out, n):
    partial = [in_[block.first + t] if block.first + t < n else 0 for t in block.threads]
    stride = block.blockDim // 2
    while stride > 0:                       # each round ends at __syncthreads
        partial = [sadd(partial[t], partial[t + stride]) if t < stride else partial[t]
                   for t in block.threads]
        stride //= 2
    out[block.blockIdx] = partial[0]


def model(launch):
    return run_blocks(launch, shared_reduce)
