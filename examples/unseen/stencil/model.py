"""Model of unseen/stencil/kernel.cu: out[i] = in[i-1] + 2 in[i] - in[i+1], zero outside."""
from _int32 import run_grid, sadd, smul, ssub


def stencil(th, inp, out, n):
    i = th.blockIdx * th.blockDim + th.threadIdx
    if i >= n:
        return
    left = inp[i - 1] if i > 0 else 0
    right = inp[i + 1] if i < n - 1 else 0
    out[i] = ssub(sadd(left, smul(2, inp[i])), right)


def model(launch):
    return run_grid(launch, stencil)
