"""Model of float_hypot/kernel.cu: sqrt(x*x + y*y) with numpy's float32 multiply, add and
square root (`_float32`), each rounded as __fmul_rn, the add and sqrtf are."""
from _float32 import add, float_launch, float_of, multiply, square_root, word_of
from _int32 import run_grid

# The machine the example is written for: the default one with 256 instruction slots
# (hdlc compile -P PROG_WORDS=256); the default machine's 128 refuse it (docs/examples.md).
MACHINE = {"LANES": 4, "WARPS": 8, "REGS": 15, "PREDS": 7, "MEM_WORDS": 126,
           "PROG_WORDS": 256, "PARAM_WORDS": 8}
DEFAULT_MACHINE_ERROR = "instruction slots"


def float_hypot(th, x, y, r):
    i = th.blockIdx * th.blockDim + th.threadIdx
    a, b = float_of(x[i]), float_of(y[i])
    r[i] = word_of(square_root(add(multiply(a, a), multiply(b, b))))


def model(launch):
    return run_grid(float_launch(launch), float_hypot)
