"""Model of float_convert/kernel.cu with Python's own numbers: (float)n is the nearest binary32
(numpy rounds an exact integer to float32 to nearest even), (int)x truncates (math.trunc),
__float2int_rn and rintf round half to even (Python's round; rintf keeps the sign), out-of-range values clamp to
INT_MIN/INT_MAX and a NaN gives 0 (the PTX ISA's cvt)."""
import math

import numpy as np

from _float32 import float_launch, float_of, word_of
from _int32 import run_grid

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


def clamp(value: float, rounding) -> int:
    if math.isnan(value):
        return 0
    return max(INT_MIN, min(INT_MAX, rounding(value))) if math.isfinite(value) else \
        (INT_MAX if value > 0 else INT_MIN)


def float_convert(th, n, x, as_float, truncated, nearest, rounded):
    i = th.blockIdx * th.blockDim + th.threadIdx
    as_float[i] = word_of(np.float32(n[i]))
    value = float(float_of(x[i]))
    truncated[i] = clamp(value, math.trunc)
    nearest[i] = clamp(value, round)
    # rintf keeps the sign (rintf(-0.4) is -0.0) and leaves infinities and NaN (canonical)
    rounded[i] = word_of(np.float32(math.copysign(round(value), value))
                         if math.isfinite(value) else float_of(x[i]))


def model(launch):
    return run_grid(float_launch(launch), float_convert)
