"""Model of multi_warp/kernel.cu: a 32-thread block reading mirrored elements."""
from _int32 import run_grid, shr_s, smul, ssub


def multi_warp(th, inp, out):
    t = th.threadIdx
    n = th.blockDim
    warp = shr_s(t, 2)
    lane = t & 3
    out[t] = ssub(smul(inp[n - 1 - t], warp + 1), lane)


def model(launch):
    return run_grid(launch, multi_warp)
