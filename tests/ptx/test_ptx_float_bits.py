""".f32 instructions that are integer operations on the bits (qwengpu/ptx/select_float.py).

Each test runs a PTX body over rows of binary32 bit patterns (ptx_harness.run_rows: the
interpreter and the ISA model must agree) and compares with PTX's semantics computed here from
the bits with struct (a float32 widened to a Python float is exact): comparisons with NaN and
signed zeros, .ftz flushing subnormal inputs, min/max's NaN rules, neg/abs, testp, selp, moves.
"""

from __future__ import annotations

import math
import random
import struct
from pathlib import Path

import pytest

from qwengpu.errors import PtxError
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx, parse_ptx_file

from ptx_harness import HEADER, M32, run_ptx, run_rows

EDGE_FLOATS = [
    0x0000_0000, 0x8000_0000,              # +0, -0
    0x0000_0001, 0x8000_0001,              # smallest subnormals
    0x007F_FFFF, 0x807F_FFFF,              # largest subnormals
    0x0080_0000, 0x8080_0000,              # smallest normals
    0x3F80_0000, 0xBF80_0000,              # +-1
    0x3FC0_0000, 0xC049_0FDB,              # 1.5, -pi
    0x7F7F_FFFF, 0xFF7F_FFFF,              # +-max normal
    0x7F80_0000, 0xFF80_0000,              # +-inf
    0x7FC0_0000, 0xFFC0_0000,              # quiet NaNs
    0x7F80_0001, 0xFF80_0001,              # signalling NaNs
    0x7FFF_FFFF, 0xFFFF_FFFF,              # NaNs with every payload bit
    0x1234_5678, 0xDEAD_BEEF,
]

COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu",
               "num", "nan"]
RELATIONS = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
             "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


def value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & M32))[0]


def is_nan(bits: int) -> bool:
    return math.isnan(value(bits))


def is_subnormal(bits: int) -> bool:
    return bits & 0x7F80_0000 == 0 and bits & 0x007F_FFFF != 0


def flushed(bits: int) -> int:
    """.ftz: a subnormal becomes the zero of its sign."""
    return bits & 0x8000_0000 if is_subnormal(bits) else bits


def compare(name: str, a: int, b: int, ftz: bool) -> bool:
    """PTX's setp on floats (PTX ISA, "Floating Point Comparisons")."""
    if ftz:
        a, b = flushed(a), flushed(b)
    x, y = value(a), value(b)
    unordered = math.isnan(x) or math.isnan(y)
    if name == "num":
        return not unordered
    if name == "nan":
        return unordered
    if name in RELATIONS:
        return not unordered and RELATIONS[name](x, y)
    return unordered or RELATIONS[name[:-1]](x, y)


def minimum_maximum(opcode: str, a: int, b: int, ftz: bool) -> int:
    """PTX's min/max.f32: a NaN gives the other operand, two give 0x7FFFFFFF; +0.0 > -0.0."""
    if ftz:
        a, b = flushed(a), flushed(b)
    if is_nan(a) and is_nan(b):
        return 0x7FFF_FFFF
    if is_nan(a):
        return b
    if is_nan(b):
        return a
    x, y = value(a), value(b)
    if x == y:                       # equal values: the same bits, or -0 and +0
        negative = a if a >> 31 else b
        positive = b if a >> 31 else a
        return negative if opcode == "min" else positive
    return a if (x < y) == (opcode == "min") else b


# Comparisons run a few at a time: the machine holds 128 instructions.
GROUPS = [COMPARISONS[i:i + 4] for i in range(0, len(COMPARISONS), 4)]


def setp_bits_body(ftz: bool, names: list[str]) -> str:
    """Comparisons of %a0 with %a1: bit k of %o0 for names[k]."""
    lines = ["    mov.u32 %o0, 0;"]
    suffix = ".ftz" if ftz else ""
    for bit, name in enumerate(names):
        lines += [f"    setp.{name}{suffix}.f32 %p1, %a0, %a1;",
                  f"    selp.u32 %x1, {1 << bit}, 0, %p1;",
                  "    or.b32 %o0, %o0, %x1;"]
    return "\n".join(lines)


def expected_setp_bits(a: int, b: int, ftz: bool, names: list[str]) -> int:
    return sum(1 << bit for bit, name in enumerate(names) if compare(name, a, b, ftz))


GRID = [(a, b) for a in EDGE_FLOATS for b in EDGE_FLOATS]


@pytest.mark.parametrize("names", GROUPS, ids=["-".join(group) for group in GROUPS])
@pytest.mark.parametrize("ftz", [False, True], ids=["plain", "ftz"])
def test_every_comparison_on_the_edge_grid(ftz, names):
    got = run_rows(setp_bits_body(ftz, names), GRID, 1)
    assert got == [(expected_setp_bits(a, b, ftz, names),) for a, b in GRID]


@pytest.mark.parametrize("ftz", [False, True], ids=["plain", "ftz"])
def test_min_max_on_the_edge_grid(ftz):
    suffix = ".ftz" if ftz else ""
    body = f"    min{suffix}.f32 %o0, %a0, %a1;\n    max{suffix}.f32 %o1, %a0, %a1;"
    got = run_rows(body, GRID, 2)
    assert got == [(minimum_maximum("min", a, b, ftz), minimum_maximum("max", a, b, ftz))
                   for a, b in GRID]


def test_min_max_of_signed_zeros_and_nans():
    """The cases PTX spells out, in both orders."""
    rows = [(0x8000_0000, 0x0000_0000), (0x0000_0000, 0x8000_0000),
            (0x7FC0_0000, 0x3F80_0000), (0x3F80_0000, 0xFFC0_0001),
            (0xFF80_0001, 0x7F80_0001)]
    got = run_rows("    min.f32 %o0, %a0, %a1;\n    max.f32 %o1, %a0, %a1;", rows, 2)
    assert got == [(0x8000_0000, 0x0000_0000), (0x8000_0000, 0x0000_0000),
                   (0x3F80_0000, 0x3F80_0000), (0x3F80_0000, 0x3F80_0000),
                   (0x7FFF_FFFF, 0x7FFF_FFFF)]


def test_neg_and_abs_flip_or_clear_the_sign():
    rows = [(a,) for a in EDGE_FLOATS]
    body = ("    neg.f32 %o0, %a0;\n    abs.f32 %o1, %a0;\n"
            "    neg.ftz.f32 %o2, %a0;\n    abs.ftz.f32 %o3, %a0;")
    got = run_rows(body, rows, 4)
    expected = []
    for (a,) in rows:
        f = flushed(a)
        expected.append((a ^ 0x8000_0000, a & 0x7FFF_FFFF, f ^ 0x8000_0000, f & 0x7FFF_FFFF))
    assert got == expected
    # neg of a number is the number negated (NaNs: PTX leaves the NaN unspecified)
    for (a,), (negated, absolute, _, _) in zip(rows, got):
        if not is_nan(a):
            assert value(negated) == -value(a) and value(absolute) == abs(value(a))


TESTP = {"finite": lambda x: math.isfinite(x), "infinite": lambda x: math.isinf(x),
         "number": lambda x: not math.isnan(x), "notanumber": lambda x: math.isnan(x),
         "normal": lambda x: math.isfinite(x) and abs(x) >= 2.0 ** -126,
         "subnormal": lambda x: x != 0 and abs(x) < 2.0 ** -126}


def test_testp_classes():
    rng = random.Random(7)
    rows = [(a,) for a in EDGE_FLOATS + [rng.getrandbits(32) for _ in range(40)]]
    lines = ["    mov.u32 %o0, 0;"]
    for bit, mode in enumerate(TESTP):
        lines += [f"    testp.{mode}.f32 %p1, %a0;", f"    selp.u32 %x1, {1 << bit}, 0, %p1;",
                  "    or.b32 %o0, %o0, %x1;"]
    got = run_rows("\n".join(lines), rows, 1)
    assert got == [(sum(1 << bit for bit, test in enumerate(TESTP.values())
                        if test(value(a))),) for (a,) in rows]


@pytest.mark.parametrize("boolean", ["and", "or", "xor"])
def test_combined_setp_forms(boolean):
    """setp.CMP.BOOL.f32 p|q, a, b, c: p = t BOOL c, q = !t BOOL c."""
    values = [0x0000_0000, 0x8000_0001, 0xBF80_0000, 0x3F80_0000, 0x7F80_0000, 0x7FC0_0000]
    rows = [(a, b, c) for a in values for b in values for c in (0, 1)]
    body = f"""\
    setp.ne.u32 %p3, %a2, 0;
    setp.ltu.{boolean}.ftz.f32 %p1|%p2, %a0, %a1, %p3;
    selp.u32 %o0, 1, 0, %p1;
    selp.u32 %o1, 1, 0, %p2;
    setp.ge.{boolean}.f32 %p1, %a0, %a1, !%p3;
    selp.u32 %o2, 1, 0, %p1;"""
    combine = {"and": lambda x, y: x and y, "or": lambda x, y: x or y,
               "xor": lambda x, y: x != y}[boolean]
    got = run_rows(body, rows, 3)
    expected = []
    for a, b, c in rows:
        t, u = compare("ltu", a, b, True), compare("ge", a, b, False)
        expected.append((int(combine(t, bool(c))), int(combine(not t, bool(c))),
                         int(combine(u, not c))))
    assert got == expected


def test_float_immediates_are_folded_and_moved():
    """0fXXXXXXXX operands: mov.f32, selp.f32, setp and min/max against a constant (a NaN
    constant makes the ordered comparison false and the unordered one true)."""
    rows = [(a,) for a in EDGE_FLOATS]
    body = """\
    mov.f32 %o0, 0fBFC00000;
    setp.gt.f32 %p1, %a0, 0f3F000000;
    selp.f32 %o1, 0f3F800000, %a0, %p1;
    setp.lt.f32 %p2, %a0, 0f7FC00000;
    setp.ltu.f32 %p3, 0f7FC00000, %a0;
    selp.u32 %x1, 1, 0, %p2;
    selp.u32 %x2, 2, 0, %p3;
    or.b32 %o2, %x1, %x2;
    max.f32 %x3, %a0, 0fBFC00000;
    min.f32 %o3, %x3, 0f40000000;
    min.f32 %o4, 0f7FC00000, %a0;
    setp.le.f32 %p4, 0f80000000, 0f00000000;
    selp.u32 %o5, 1, 0, %p4;"""
    got = run_rows(body, rows, 6)
    expected = []
    for (a,) in rows:
        clamp = minimum_maximum("min", minimum_maximum("max", a, 0xBFC0_0000, False),
                                0x4000_0000, False)
        expected.append((0xBFC0_0000, 0x3F80_0000 if compare("gt", a, 0x3F00_0000, False)
                         else a, 2, clamp, minimum_maximum("min", 0x7FC0_0000, a, False), 1))
    assert got == expected


def test_seeded_random_bit_patterns():
    rng = random.Random(2024)
    specials = [0x7FC0_0000, 0x8000_0000, 0, 0x0000_0001]
    rows = [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(600)]
    rows += [(rng.choice(specials), rng.getrandbits(32)) for _ in range(100)]
    # Same exponent and sign, so the comparisons look at the fraction bits
    rows += [(a, (a & 0xFF80_0000) | rng.getrandbits(23)) for a, _ in rows[:300]]
    names = ["lt", "geu", "eq", "neu"]
    body = setp_bits_body(False, names) + """
    min.f32 %o1, %a0, %a1;
    max.ftz.f32 %o2, %a0, %a1;"""
    got = run_rows(body, rows, 3)
    assert got == [(expected_setp_bits(a, b, False, names), minimum_maximum("min", a, b, False),
                    minimum_maximum("max", a, b, True)) for a, b in rows]


MEMORY_KERNEL = HEADER + """\
.visible .entry moves(.param .u64 moves_p, .param .f32 moves_scale)
{
    .reg .f32 %f<6>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [moves_p];
    ld.param.f32 %f1, [moves_scale];
    cvta.to.global.u64 %rd2, %rd1;
    ld.global.f32 %f2, [%rd2];
    ld.global.v2.f32 {%f3, %f4}, [%rd2+8];
    mov.b32 %r1, %f2;
    mov.b32 %f5, %r1;
    st.global.f32 [%rd2+16], %f1;
    st.global.f32 [%rd2+20], %f5;
    st.global.v2.f32 [%rd2+24], {%f4, %f3};
    setp.lt.f32 %p1, %f2, %f1;
    selp.f32 %f5, %f2, %f1, %p1;
    st.global.f32 [%rd2+32], %f5;
    ret;
}
"""


def test_loads_stores_and_parameters_of_f32():
    words = [0xC000_0000, 0, 0x3F80_0000, 0x7FC0_0000, 0, 0, 0, 0, 0, 0]
    run = run_ptx(MEMORY_KERNEL, {"p": words}, ["p", 0x4040_0000], block=1)
    assert run.result.trap is None
    assert run.words["p"] == [0xC000_0000, 0, 0x3F80_0000, 0x7FC0_0000, 0x4040_0000,
                              0xC000_0000, 0x7FC0_0000, 0x3F80_0000, 0xC000_0000, 0]


def refusal(line: str, registers: str = ".reg .f32 %f<4>;") -> PtxError:
    text = HEADER + f".entry k()\n{{\n    {registers}\n    {line}\n    ret;\n}}\n"
    with pytest.raises(PtxError) as caught:
        compile_kernel(parse_ptx(text, "k.ptx"), "k")
    return caught.value


@pytest.mark.parametrize("line", [
    "tanh.approx.f32 %f1, %f2;", "sin.approx.ftz.f32 %f1, %f2;",
    "rsqrt.approx.f32 %f1, %f2;", "ex2.approx.f32 %f1, %f2;", "setp.lt.f32.f64 %p, %f1, %f2;"])
def test_float_arithmetic_is_refused_at_its_line(line):
    error = refusal(line)
    assert error.loc.line == 8
    if "f64" not in line:
        assert "floating-point arithmetic QwenGPU does not have yet" in error.message


@pytest.mark.parametrize("line,message", [
    ("add.f64 %fd1, %fd2, %fd3;", "type .f64 (QwenGPU computes with integers only)"),
    ("min.f64 %fd1, %fd2, %fd3;", "type .f64 (QwenGPU computes with integers only)"),
    ("ld.global.f64 %fd1, [%fd2];", "type .f64 (QwenGPU computes with integers only)"),
    ("neg.f16 %h1, %h2;", "type .f16 (QwenGPU computes with integers only)"),
    ("min.xorsign.abs.f32 %f1, %f2, %f3;", "the .xorsign modifier"),
])
def test_other_float_types_stay_refused(line, message):
    error = refusal(line, ".reg .f32 %f<4>;\n    .reg .f64 %fd<4>;\n    .reg .b16 %h<4>;")
    assert message in error.message


# ---- real nvcc output: tests/ptx/data/float_bits.cu and the PTX nvcc made of it ----------------

FLOAT_BITS = (Path(__file__).parent / "data" / "float_bits.ptx").read_text()
NVCC_PAIRS = [pair for index, pair in enumerate(GRID) if index % 11 == 0] + [
    (0x8000_0000, 0), (0, 0x8000_0000), (0x7FC0_0000, 0x7FC0_0000), (0x3F00_0000, 0x3F00_0001)]


def chunks(pairs: list[tuple[int, int]], size: int = 8):
    for start in range(0, len(pairs), size):
        chunk = pairs[start:start + size]
        yield chunk + [(0, 0)] * (size - len(chunk))


def test_nvcc_min_max_kernel():
    """fmaxf, fminf, fabsf and a clamp fminf(fmaxf(-a, -1.5f), 2.0f)."""
    for chunk in chunks(NVCC_PAIRS):
        xs, ys = [a for a, _ in chunk], [b for _, b in chunk]
        run = run_ptx(FLOAT_BITS, {"x": xs, "y": ys, "out": [0] * 32}, ["x", "y", "out"],
                      block=8, kernel="float_min_max")
        assert run.result.trap is None
        expected = []
        for a, b in chunk:
            clamp = minimum_maximum("min", minimum_maximum("max", a ^ 0x8000_0000, 0xBFC0_0000,
                                                           False), 0x4000_0000, False)
            expected += [minimum_maximum("max", a, b, False),
                         minimum_maximum("min", a, b, False), a & 0x7FFF_FFFF, clamp]
        assert run.words["out"] == expected


def test_nvcc_comparison_kernels():
    """C's comparisons (!= is true for a NaN), isnan, isinf, isfinite, a > 0.5f."""
    for chunk in chunks(NVCC_PAIRS):
        xs, ys = [a for a, _ in chunk], [b for _, b in chunk]
        order = run_ptx(FLOAT_BITS, {"x": xs, "y": ys, "flags": [0] * 8}, ["x", "y", "flags"],
                        block=8, kernel="float_order")
        classes = run_ptx(FLOAT_BITS, {"x": xs, "flags": [0] * 8}, ["x", "flags"], block=8,
                          kernel="float_classes")
        expected_order, expected_classes = [], []
        for a, b in chunk:
            x, y = value(a), value(b)
            expected_order.append((x < y) | (x <= y) << 1 | (x == y) << 2 | (x != y) << 3
                                  | (x >= y) << 4 | (not x < y) << 5)
            expected_classes.append(math.isnan(x) | math.isinf(x) << 1 | math.isfinite(x) << 2
                                    | (x > 0.5) << 3)
        assert order.words["flags"] == expected_order
        assert classes.words["flags"] == expected_classes


def test_nvcc_fused_multiply_add_needs_the_wider_machine():
    """nvcc contracts `a * b + 1.0f` into fma.rn.f32 (one rounding): its routine does not fit
    the default machine's 128 instruction slots, which says so at the CUDA line and names
    the machine that holds it; there it runs, rounded once (tests/ptx/test_ptx_float_fma.py
    has the million)."""
    from fpu_helpers import reference_fma
    import numpy as np
    from qwengpu.errors import CapacityError

    module = parse_ptx_file(str(Path(__file__).parent / "data" / "float_bits.ptx"))
    with pytest.raises(CapacityError) as caught:
        compile_kernel(module, "float_fma")
    assert "a machine compiled with -P PROG_WORDS=256 holds it" in caught.value.message
    assert "c[i] = a[i] * b[i] + 1.0f;" in caught.value.render()
    a = [0x3F80_0001, 0x4049_0FDB, 0xBF80_0000, 0x0000_0001, 0x7F7F_FFFF, 0xFF80_0000]
    b = [0x3F7F_FFFF, 0x3EA2_F983, 0x3F80_0000, 0x3F80_0000, 0x4000_0000, 0x0000_0000]
    ptx = (Path(__file__).parent / "data" / "float_bits.ptx").read_text()
    run = run_ptx(ptx, {"a": a, "b": b, "c": [0] * 6}, ["a", "b", "c"], block=6,
                  kernel="float_fma", machine={"PROG_WORDS": 256})
    ones = np.full(6, 0x3F80_0000, np.uint32)
    want = reference_fma(np.array(a, np.uint32), np.array(b, np.uint32), ones)
    assert run.words["c"] == [int(word) for word in want]


