"""Model of dynamic_shared/kernel.cu: out[b*n + t] = 2 in[b*n + n-1-t] + t."""
from _int32 import run_blocks, sadd, smul


def dynamic_shared(block, in_, out):
    n = block.blockDim
    staging = [smul(in_[block.first + t], 2) for t in block.threads]
    for t in block.threads:
        out[block.first + t] = sadd(staging[n - 1 - t], t)


def model(launch):
    return run_blocks(launch, dynamic_shared)
