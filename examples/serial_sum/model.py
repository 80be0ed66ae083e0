"""Model of serial_sum/kernel.cu: one thread's sum, dot product and count of negatives."""
from _int32 import run_grid, sadd, smul

# The -P parameters of the reduced machine the example is written for (docs/examples.md).
MACHINE = {"LANES": 1, "WARPS": 1, "REGS": 15, "PREDS": 7, "MEM_WORDS": 32,
           "PROG_WORDS": 64, "PARAM_WORDS": 4}


def serial_sum(th, a, b, out, n):
    total = dot = negatives = 0
    for i in range(n):
        total = sadd(total, a[i])
        dot = sadd(dot, smul(a[i], b[i]))
        negatives = sadd(negatives, int(a[i] < 0))
    out[0] = total
    out[1] = dot
    out[2] = negatives


def model(launch):
    return run_grid(launch, serial_sum)
