"""Model of warp_ops/kernel.cu: thread t adds, multiplies, xors or shifts (arithmetic) a[t], b[t]."""
from _int32 import run_grid, sadd, smul

# The -P parameters of the reduced machine the example is written for (docs/examples.md).
MACHINE = {"LANES": 4, "WARPS": 1, "REGS": 15, "PREDS": 7, "MEM_WORDS": 32,
           "PROG_WORDS": 64, "PARAM_WORDS": 4}


def warp_ops(th, a, b, out):
    t = th.threadIdx
    x, y = a[t], b[t]
    if t == 0:
        r = sadd(x, y)
    elif t == 1:
        r = smul(x, y)
    elif t == 2:
        r = x ^ y
    else:
        r = x >> (y & 31)          # Python's >> on a negative int is arithmetic, as in CUDA
    out[t] = r


def model(launch):
    return run_grid(launch, warp_ops)
