"""Model of pair_ops/kernel.cu: odd threads multiply, even threads subtract, plus the tid."""
from _int32 import run_grid, sadd, smul, ssub

# The -P parameters of the reduced machine the example is written for (docs/examples.md).
MACHINE = {"LANES": 2, "WARPS": 1, "REGS": 15, "PREDS": 7, "MEM_WORDS": 32,
           "PROG_WORDS": 64, "PARAM_WORDS": 4}


def pair_ops(th, a, b, out):
    t = th.threadIdx
    x, y = a[t], b[t]
    r = smul(x, y) if t & 1 else ssub(x, y)
    out[t] = sadd(r, t)


def model(launch):
    return run_grid(launch, pair_ops)
