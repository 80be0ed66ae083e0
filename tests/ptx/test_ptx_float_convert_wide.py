"""cvt between binary32 and 64-bit integers (qwengpu/ptx/select_convert_wide.py).

Expected values are computed here with Python's exact integers and fractions: an integer
rounded to 24 significant bits in the mode's direction (ties to even for .rn), and a float
rounded to an integer with math.trunc/floor/ceil and round() (half to even), clamped to the
destination's range; a NaN gives 1 << 63 for .s64 and .u64 (PTX ISA 9.0, cvt).  Rows run on
the interpreter and the tests' ISA model (ptx_harness.run_rows), and nvcc's own conversions
(tests/ptx/data/float_convert.cu) too.
"""

from __future__ import annotations

import math
import random
import struct
from fractions import Fraction
from pathlib import Path

import pytest

from ptx_harness import run_ptx, run_rows
from test_ptx_float_bits import EDGE_FLOATS

M64 = (1 << 64) - 1
RANDOM = random.Random(64)
# every magnitude: ties and near-ties at each bit length past 24, the ends of both ranges
EDGE_INTS = [0, 1, 3, (1 << 24) + 1, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, (1 << 53) + 1,
             (1 << 63) - 1, 1 << 63, M64, (1 << 40) + (1 << 16) + 1]
EDGE_INTS += [(1 << k) + (1 << (k - 24)) for k in range(25, 64)]
EDGE_INTS += [(3 << (k - 1)) + (1 << (k - 24)) + extra for k in range(25, 63) for extra in (0, 1)]
INTS = sorted({v & M64 for x in EDGE_INTS + [RANDOM.getrandbits(RANDOM.randint(1, 64))
                                                for _ in range(120)] for v in (x, -x)})


def f32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def f32_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


FLOATS = list(EDGE_FLOATS) + [f32_bits(x) for x in (
    0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.7, -0.7, 2.0 ** 32, 2.0 ** 32 - 256, 2.0 ** 32 + 512,
    2.0 ** 62 * 3, -(2.0 ** 62) * 3, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 64, 1e19, -1e19, 9.2e18,
    4294967295.0, 1e-40, -1e-40)]
FLOATS += [RANDOM.getrandbits(32) for _ in range(60)]
FLOATS += [(RANDOM.randint(120, 200) << 23) | RANDOM.getrandbits(23) | RANDOM.getrandbits(1) << 31
           for _ in range(80)]


def integer_to_float(value: int, signed: bool, mode: str) -> int:
    number = value - (1 << 64) if signed and value >> 63 else value
    if number == 0:
        return 0
    drop = max(abs(number).bit_length() - 24, 0)
    scaled = Fraction(abs(number), 1 << drop)
    down, rest = math.floor(scaled), scaled - math.floor(scaled)
    if mode == "rn":
        up = rest > Fraction(1, 2) or (rest == Fraction(1, 2) and down % 2 == 1)
    elif mode == "rz":
        up = False
    else:
        up = rest != 0 and (mode == "rp") == (number > 0)
    magnitude = float((down + up) << drop)
    return f32_bits(magnitude if number > 0 else -magnitude)


def float_to_integer(bits: int, signed: bool, mode: str, ftz: bool) -> int:
    if ftz and bits & 0x7F80_0000 == 0:
        bits &= 0x8000_0000
    if bits & 0x7FFF_FFFF > 0x7F80_0000:
        return 1 << 63
    low, high = (-(1 << 63), (1 << 63) - 1) if signed else (0, M64)
    x = f32_value(bits)
    if math.isinf(x):
        return (high if x > 0 else low) & M64
    rounded = {"rzi": math.trunc, "rmi": math.floor, "rpi": math.ceil, "rni": round}[mode](
        Fraction(x))
    return min(max(rounded, low), high) & M64


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
@pytest.mark.parametrize("source", ["s64", "u64"])
def test_64_bit_integers_to_float(source, mode):
    rows = [(v & 0xFFFF_FFFF, v >> 32) for v in INTS]
    body = f"    mov.b64 %y1, {{%a0, %a1}};\n    cvt.{mode}.f32.{source} %o0, %y1;"
    got = run_rows(body, rows, 1)
    assert got == [(integer_to_float(v, source == "s64", mode),) for v in INTS]


@pytest.mark.parametrize("ftz", ["", ".ftz"])
@pytest.mark.parametrize("mode", ["rni", "rzi", "rmi", "rpi"])
@pytest.mark.parametrize("destination", ["s64", "u64"])
def test_float_to_64_bit_integers(destination, mode, ftz):
    body = f"    cvt.{mode}{ftz}.{destination}.f32 %y1, %a0;\n    mov.b64 {{%o0, %o1}}, %y1;"
    got = run_rows(body, [(bits,) for bits in FLOATS], 2)
    want = [float_to_integer(bits, destination == "s64", mode, bool(ftz)) for bits in FLOATS]
    assert [low | high << 32 for low, high in got] == want


@pytest.mark.parametrize("line,want", [
    ("cvt.rn.f32.s64 %f1, 9007199254740993;", integer_to_float((1 << 53) + 1, True, "rn")),
    ("cvt.rm.f32.s64 %f1, -3;", f32_bits(-3.0)),
    ("cvt.rzi.s64.f32 %rd1, 0fDF000000;", 1 << 63),            # -2^63 itself
    ("cvt.rni.u64.f32 %rd1, 0f7FC00000;", 1 << 63),            # NaN
])
def test_known_operands_are_converted_at_load_time(line, want):
    destination = "%f1" if "f32.s64" in line else "%rd1"
    store = "st.global.f32 [%rd2], %f1;" if destination == "%f1" else "st.global.u64 [%rd2], %rd1;"
    ptx = (".version 8.5\n.target sm_80\n.address_size 64\n"
           ".visible .entry k(.param .u64 p)\n{\n    .reg .f32 %f<3>;\n    .reg .b64 %rd<3>;\n"
           f"    ld.param.u64 %rd2, [p];\n    {line}\n    {store}\n    ret;\n}}\n")
    words = run_ptx(ptx, {"p": [0, 0]}, ["p"], block=1).words["p"]
    assert (words[0] | words[1] << 32 if destination == "%rd1" else words[0]) == want


def test_nvcc_64_bit_conversion_kernels():
    """float_convert.cu: (float)n on long long, __ull2float_rd, (long long)x,
    (long long)(unsigned long long)x, llrintf."""
    ptx = (Path(__file__).parent / "data" / "float_convert.ptx").read_text()
    values = [v for v in INTS if v not in (0,)][::9][:8]
    words = [w for v in values for w in (v & 0xFFFF_FFFF, v >> 32)]
    for kernel, signed, mode in (("wide_to_float", True, "rn"),
                                 ("unsigned_wide_to_float", False, "rm")):
        run = run_ptx(ptx, {"x": words, "out": [0] * 8}, ["x", "out"], block=8, kernel=kernel)
        assert run.words["out"] == [integer_to_float(v, signed, mode) for v in values], kernel
    floats = FLOATS[::17][:8]
    run = run_ptx(ptx, {"x": floats, "out": [0] * 32}, ["x", "out"], block=8,
                  kernel="float_to_wide")
    want = []
    for bits in floats:
        unsigned = float_to_integer(bits, False, "rzi", False)
        want += [float_to_integer(bits, True, "rzi", False), unsigned]
    got = [run.words["out"][2 * j] | run.words["out"][2 * j + 1] << 32 for j in range(16)]
    assert got == want
    run = run_ptx(ptx, {"x": floats, "out": [0] * 16}, ["x", "out"], block=8,
                  kernel="float_to_wide_rounded")
    got = [run.words["out"][2 * j] | run.words["out"][2 * j + 1] << 32 for j in range(8)]
    assert got == [float_to_integer(bits, True, "rni", False) for bits in floats]
