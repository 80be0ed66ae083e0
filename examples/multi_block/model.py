"""Model of multi_block/kernel.cu: per-block scaling and a per-block sum by thread 0."""
from _int32 import run_grid, sadd, smul


def multi_block(th, inp, out, bsum):
    b = th.blockIdx
    i = b * th.blockDim + th.threadIdx
    out[i] = sadd(smul(inp[i], b), th.gridDim)
    if th.threadIdx == 0:
        s = 0
        for j in range(th.blockDim):
            s = sadd(s, inp[b * th.blockDim + j])
        bsum[b] = s


def model(launch):
    return run_grid(launch, multi_block)
