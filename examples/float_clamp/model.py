"""Model of float_clamp/kernel.cu with Python's own floats: every value here is exactly a
binary32 (struct rounds the launch's decimals to the nearest one), and clamping and
comparing need no rounding.  fmaxf/fminf treat a NaN as missing data (the other operand);
no value here ties with a bound at +-0, where C leaves the choice to the library."""
import math
import struct

from _int32 import run_grid

NAMED = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def word_of(value: float) -> int:
    """The binary32 bits of a float (a double that is exactly a binary32), as an int32."""
    return struct.unpack("<i", struct.pack("<f", value))[0]


def float_of(word: int) -> float:
    return struct.unpack("<f", struct.pack("<i", word))[0]


def words(values) -> list[int]:
    """A launch buffer as words: integers as they are, {"f32": [...]} as binary32 bits."""
    if isinstance(values, dict):
        return [word_of(NAMED.get(value, value) if isinstance(value, str) else float(value))
                for value in values["f32"]]
    return values


def fmaxf(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else max(a, b)


def fminf(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else min(a, b)


def float_clamp(th, x, bounds, clamped, flags):
    i = th.blockIdx * th.blockDim + th.threadIdx
    v = float_of(x[i])
    clamped[i] = word_of(fminf(fmaxf(v, float_of(bounds[0])), float_of(bounds[1])))
    flags[i] = int(v > 0.0) | int(abs(v) < 1.0) << 1 | int(math.isnan(v)) << 2


def model(launch):
    launch = {**launch, "buffers": {name: words(values)
                                    for name, values in launch["buffers"].items()}}
    return run_grid(launch, float_clamp)
