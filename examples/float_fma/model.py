"""Model of float_fma/kernel.cu: a * x + y rounded once (`_float32.fused_multiply_add`, exact
fractions rounded by hand), as nvcc's fma.rn.f32 is."""
from _float32 import float_launch, float_of, fused_multiply_add, word_of
from _int32 import run_grid

# The machine the example is written for: the default one with 256 instruction slots
# (hdlc compile -P PROG_WORDS=256); the default machine's 128 refuse it (docs/examples.md).
MACHINE = {"LANES": 4, "WARPS": 8, "REGS": 15, "PREDS": 7, "MEM_WORDS": 126,
           "PROG_WORDS": 256, "PARAM_WORDS": 8}
DEFAULT_MACHINE_ERROR = "instruction slots"


def float_fma(th, a, x, y):
    i = th.blockIdx * th.blockDim + th.threadIdx
    y[i] = word_of(fused_multiply_add(float_of(a[0]), float_of(x[i]), float_of(y[i])))


def model(launch):
    return run_grid(float_launch(launch), float_fma)
