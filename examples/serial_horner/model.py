"""Model of serial_horner/kernel.cu: Horner's rule in unsigned arithmetic, over x in place."""
from _int32 import run_grid, to_unsigned, uadd, umul

# The -P parameters of the reduced machine the example is written for (docs/examples.md).
MACHINE = {"LANES": 1, "WARPS": 1, "REGS": 15, "PREDS": 7, "MEM_WORDS": 32,
           "PROG_WORDS": 64, "PARAM_WORDS": 4}


def serial_horner(th, c, m, x, count):
    for k in range(count):
        v = to_unsigned(x[k])
        h = 0
        for j in range(m - 1, -1, -1):
            h = uadd(umul(h, v), to_unsigned(c[j]))
        x[k] = h


def model(launch):
    return run_grid(launch, serial_horner)
