"""Model of serial_mad/kernel.cu: one thread's a * x + b and |a - b| (32-bit wrap-around)."""
from _int32 import run_grid, sadd, smul, ssub

# The -P parameters of the reduced machine the example is written for (docs/examples.md).
MACHINE = {"LANES": 1, "WARPS": 1, "REGS": 15, "PREDS": 7, "MEM_WORDS": 32,
           "PROG_WORDS": 64, "PARAM_WORDS": 4}


def serial_mad(th, inp, out):
    a, x, b = inp[0], inp[1], inp[2]
    out[0] = sadd(smul(a, x), b)
    out[1] = ssub(a, b) if a > b else ssub(b, a)


def model(launch):
    return run_grid(launch, serial_mad)
