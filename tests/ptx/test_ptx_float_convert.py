"""cvt between 32-bit integers and binary32 (qwengpu/ptx/select_convert.py).

Each test runs a PTX body over rows of words (ptx_harness.run_rows: the interpreter and the ISA
model must agree) and compares with PTX's cvt computed here independently: integers rounded to
24 significant bits with Python integers, floats read with struct (exact as Python floats) and
rounded with math.floor/ceil/trunc and round() (half to even); float->int clamps to the
destination's range and NaN gives 0; .ftz reads a subnormal input as a zero of its sign.
"""

from __future__ import annotations

import math
import random
import struct
from pathlib import Path

import pytest

from qwengpu.errors import PtxError
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx

from ptx_harness import HEADER, M32, run_ptx, run_rows

MODES = ["rn", "rz", "rm", "rp"]
INT_EDGES = [0, 1, 2, 3, 7, 0xFF, (1 << 24) - 1, 1 << 24, (1 << 24) + 1, (1 << 24) + 2,
             (1 << 24) + 3, (1 << 25) + 1, (1 << 25) + 2, (1 << 25) + 3, (1 << 25) + 6,
             (1 << 25) + 7, (1 << 26) + 4, (1 << 26) + 12, (1 << 31) - 64, (1 << 31) - 65,
             0x7FFF_FFC0, 0x7FFF_FF80, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0xFFFF_FF80,
             0xFFFF_FF7F, 0x1234_5678, 0xDEAD_BEEF]
# ties of every magnitude from 2^24 to 2^31: odd and even significand, one ulp of 2^(k-24)
INT_TIES = [(m << (k - 24)) + (1 << (k - 25)) for k in range(25, 33) for m in (0x80_0000,
                                                                              0x80_0001)]
INTS = sorted({w & M32 for v in INT_EDGES + INT_TIES for w in (v, -v)})


def f32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def f32_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & M32))[0]


def expected_int_to_float(word: int, signed: bool, mode: str) -> int:
    n = word - (1 << 32) if signed and word >> 31 else word
    a = abs(n)
    drop = max(a.bit_length() - 24, 0)
    low = (a >> drop) << drop                   # toward zero, representable
    high = low + (1 << drop) if low != a else low
    if mode == "rz" or low == a:
        pick = low
    elif mode == "rn":
        if a - low != high - a:
            pick = low if a - low < high - a else high
        else:
            pick = low if (low >> drop) % 2 == 0 else high
    else:
        pick = high if (mode == "rp") == (n > 0) else low
    return f32_bits(-float(pick) if n < 0 else float(pick))


def flushed(bits: int, ftz: bool) -> int:
    subnormal = bits & 0x7F80_0000 == 0 and bits & 0x007F_FFFF
    return bits & 0x8000_0000 if ftz and subnormal else bits


ROUND = {"rni": round, "rzi": math.trunc, "rmi": math.floor, "rpi": math.ceil}


def expected_float_to_int(bits: int, signed: bool, mode: str, ftz: bool) -> int:
    x = f32_value(flushed(bits, ftz))
    if math.isnan(x):
        return 0
    low, high = (-(1 << 31), (1 << 31) - 1) if signed else (0, M32)
    if math.isinf(x):
        return (high if x > 0 else low) & M32
    return min(max(ROUND[mode](x), low), high) & M32


def expected_round_to_integral(bits: int, mode: str, ftz: bool) -> int:
    x = f32_value(flushed(bits, ftz))
    if math.isnan(x):
        return 0x7FFF_FFFF
    if math.isinf(x):
        return bits
    return f32_bits(math.copysign(float(ROUND[mode](x)), x))


FLOAT_EDGES = [f32_bits(v) for v in (
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 0.4, -0.4, 0.6, -0.6,
    0.75, -0.75, 2.0 ** 22 + 0.5, 2.0 ** 22 + 1.5, -(2.0 ** 22 + 0.5), 2.0 ** 23 - 0.5,
    2.0 ** 23, 2.0 ** 23 + 1, 2.0 ** 24 + 2, 2.0 ** 31 - 128, -(2.0 ** 31 - 128), 2.0 ** 31,
    -(2.0 ** 31), -(2.0 ** 31) - 256, 2.0 ** 32 - 256, 2.0 ** 32, -(2.0 ** 32), 1e30, -1e30,
    3.4e38, -3.4e38, math.inf, -math.inf, 123456.75, -98765.25, 1e-3, -1e-3)]
FLOAT_EDGES += [0x0000_0001, 0x8000_0001, 0x007F_FFFF, 0x807F_FFFF, 0x0080_0000, 0x8080_0000,
                0x7FC0_0000, 0xFFC0_0000, 0x7F80_0001, 0xFF80_0001, 0x7FFF_FFFF, 0xFFFF_FFFF,
                0x3F00_0001, 0xBF00_0001, 0x3EFF_FFFF, 0xBEFF_FFFF, 0x4EFF_FFFF, 0xCEFF_FFFF]
# every binade's halfway points: x.5 with even and odd integer parts
FLOAT_EDGES += [f32_bits(s * (m + 0.5)) for s in (1, -1) for m in (2 ** k for k in range(22))]
FLOAT_EDGES += [f32_bits(s * (m + 1.5)) for s in (1, -1) for m in (2 ** k for k in range(22))]

RNG = random.Random(20240611)
RANDOM_WORDS = [RNG.getrandbits(32) for _ in range(600)]
# random floats of moderate size too (the interesting exponents 120..160)
RANDOM_FLOATS = [(RNG.getrandbits(1) << 31) | (RNG.randint(110, 160) << 23)
                 | RNG.getrandbits(23) for _ in range(600)]


@pytest.mark.parametrize("mode", MODES)
def test_integer_to_float(mode):
    rows = [(w,) for w in INTS + RANDOM_WORDS + [w >> RNG.randint(0, 31) for w in RANDOM_WORDS]]
    body = f"    cvt.{mode}.f32.s32 %o0, %a0;\n    cvt.{mode}.f32.u32 %o1, %a0;"
    got = run_rows(body, rows, 2)
    assert got == [(expected_int_to_float(w, True, mode), expected_int_to_float(w, False, mode))
                   for (w,) in rows]


def test_integer_to_float_spot_values():
    """Hand-checked: 2^24+1 rounds to even 2^24 (rn), up to 2^24+2 (rp); INT_MIN is exact."""
    rows = [((1 << 24) + 1,), (0x8000_0000,), (0,), (0xFFFF_FFFF,)]
    body = ("    cvt.rn.f32.s32 %o0, %a0;\n    cvt.rp.f32.s32 %o1, %a0;\n"
            "    cvt.rn.f32.u32 %o2, %a0;\n    cvt.rm.f32.s32 %o3, %a0;")
    assert run_rows(body, rows, 4) == [
        (0x4B80_0000, 0x4B80_0001, 0x4B80_0000, 0x4B80_0000),
        (0xCF00_0000, 0xCF00_0000, 0x4F00_0000, 0xCF00_0000),
        (0, 0, 0, 0),
        (0xBF80_0000, 0xBF80_0000, 0x4F80_0000, 0xBF80_0000)]


@pytest.mark.parametrize("mode", ["rni", "rzi", "rmi", "rpi"])
@pytest.mark.parametrize("destination", ["s32", "u32"])
def test_float_to_integer(mode, destination):
    rows = [(w,) for w in FLOAT_EDGES + RANDOM_FLOATS + RANDOM_WORDS[:300]]
    body = (f"    cvt.{mode}.{destination}.f32 %o0, %a0;\n"
            f"    cvt.{mode}.ftz.{destination}.f32 %o1, %a0;")
    got = run_rows(body, rows, 2)
    signed = destination == "s32"
    assert got == [(expected_float_to_int(w, signed, mode, False),
                    expected_float_to_int(w, signed, mode, True)) for (w,) in rows]


def test_float_to_integer_spot_values():
    """PTX's clamping and NaN, and .ftz on floor of a negative subnormal: -1 without, 0 with."""
    rows = [(0x8000_0001,), (0x7FC0_0000,), (0xFF80_0000,), (f32_bits(2.5),), (f32_bits(-0.4),)]
    body = ("    cvt.rmi.s32.f32 %o0, %a0;\n    cvt.rmi.ftz.s32.f32 %o1, %a0;\n"
            "    cvt.rni.sat.s32.f32 %o2, %a0;\n    cvt.rpi.u32.f32 %o3, %a0;")
    assert run_rows(body, rows, 4) == [
        (M32, 0, 0, 0), (0, 0, 0, 0), (0x8000_0000, 0x8000_0000, 0x8000_0000, 0),
        (2, 2, 2, 3), (M32, M32, 0, 0)]


@pytest.mark.parametrize("mode", ["rni", "rzi", "rmi", "rpi"])
def test_round_to_integral_float(mode):
    rows = [(w,) for w in FLOAT_EDGES + RANDOM_FLOATS + RANDOM_WORDS[:300]]
    body = f"    cvt.{mode}.f32.f32 %o0, %a0;\n    cvt.{mode}.ftz.f32.f32 %o1, %a0;"
    got = run_rows(body, rows, 2)
    assert got == [(expected_round_to_integral(w, mode, False),
                    expected_round_to_integral(w, mode, True)) for (w,) in rows]


def test_narrow_integer_sources_and_constants():
    """.s16/.u8 sources are read extended; constant operands are converted at load time."""
    body = ("    cvt.u16.u32 %h1, %a0;\n    cvt.rn.f32.s16 %o0, %h1;\n"
            "    cvt.rn.f32.u16 %o1, %h1;\n    cvt.rn.f32.s32 %o2, 16777217;\n"
            "    cvt.rmi.s32.f32 %o3, 0fBF000000;\n    cvt.rni.f32.f32 %o4, 0f40200000;\n"
            "    cvt.rp.f32.u32 %o5, -1;")
    got = run_rows(body, [(0xFFFF,), (0x8001,)], 6)
    assert got == [(f32_bits(-1.0), f32_bits(65535.0), 0x4B80_0000, M32, f32_bits(2.0),
                    0x4F80_0000),
                   (f32_bits(-32767.0), f32_bits(32769.0), 0x4B80_0000, M32, f32_bits(2.0),
                    0x4F80_0000)]


FLOAT_CONVERT = (Path(__file__).parent / "data" / "float_convert.ptx").read_text()
# kernel -> (words out per input, Python model of one input word's outputs)
NVCC_KERNELS = {
    "float_to_int": (4, lambda w: [expected_float_to_int(w, True, "rzi", False),
                                   expected_float_to_int(w, False, "rzi", False),
                                   expected_float_to_int(w, True, "rni", False),
                                   expected_float_to_int(
                                       expected_round_to_integral(w, "rmi", False), True,
                                       "rzi", False)]),
    "float_to_int_directed": (3, lambda w: [expected_float_to_int(w, True, "rmi", False),
                                            expected_float_to_int(w, True, "rpi", False),
                                            expected_float_to_int(w, False, "rni", False)]),
    "int_to_float": (3, lambda n: [expected_int_to_float(n, True, "rn"),
                                   expected_int_to_float(n, False, "rn"),
                                   expected_int_to_float(n, True, "rz")]),
    "int_to_float_directed": (3, lambda n: [expected_int_to_float(n, True, "rm"),
                                            expected_int_to_float(n, False, "rp"),
                                            expected_int_to_float(n, False, "rz")]),
    "float_round": (4, lambda w: [expected_round_to_integral(w, mode, False)
                                  for mode in ("rmi", "rpi", "rzi", "rni")]),
}


@pytest.mark.parametrize("kernel", NVCC_KERNELS)
def test_nvcc_conversion_kernels(kernel):
    """tests/ptx/data/float_convert.cu: (int)x, (unsigned)x, __float2int_rn/rd/ru,
    __float2uint_rn, (int)floorf(x), (float)i, (float)u, __int2float_rz/rd, __uint2float_ru/rz,
    floorf, ceilf, truncf, rintf."""
    per_input, model = NVCC_KERNELS[kernel]
    words = INTS if kernel.startswith("int") else FLOAT_EDGES
    words = words + RANDOM_WORDS[:64] + RANDOM_FLOATS[:64]
    for start in range(0, len(words), 16):
        chunk = words[start:start + 16]
        run = run_ptx(FLOAT_CONVERT, {"x": chunk, "out": [0] * (per_input * len(chunk))},
                      ["x", "out"], block=len(chunk), kernel=kernel)
        assert run.result.trap is None
        assert run.words["out"] == [word for w in chunk for word in model(w)]


def refusal(line: str) -> PtxError:
    text = HEADER + f""".visible .entry k()
{{
    .reg .f32 %f<4>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .reg .b16 %h<4>;
    .reg .f64 %fd<4>;
    {line}
    ret;
}}
"""
    with pytest.raises(PtxError) as caught:
        compile_kernel(parse_ptx(text, "k.ptx"), "k")
    return caught.value


@pytest.mark.parametrize("line,message", [
    ("cvt.rni.f32.s64 %f1, %rd1;", "this rounding"),
    ("cvt.rn.u64.f32 %rd1, %f1;", "this rounding"),
    ("cvt.f64.f32 %fd1, %f1;", "type .f64"),
    ("cvt.rn.f16.f32 %h1, %f1;", "type .f16"),
    ("cvt.rzi.s16.f32 %h1, %f1;", "type .s16"),
    ("cvt.rn.s32.f32 %r1, %f1;", "this rounding"),
    ("cvt.rni.f32.s32 %f1, %r1;", "this rounding"),
    ("cvt.f32.s32 %f1, %r1;", "this rounding"),
    ("cvt.rn.sat.f32.s32 %f1, %r1;", "the .sat modifier"),
    ("cvt.rn.f64.s32 %fd1, %r1;", "QwenGPU computes with integers only"),
])
def test_other_conversions_are_refused(line, message):
    error = refusal(line)
    assert message in error.message
    assert error.loc.line == 12
