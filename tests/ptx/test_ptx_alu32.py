"""32-bit PTX arithmetic, comparisons and predicates, lowered and run on edge values.

Each test writes a tiny PTX body, runs it over many input rows (ptx_harness.run_rows: the
interpreter and the ISA model must agree), and compares with PTX's semantics written here in
plain Python: wrap-around, signed vs unsigned, shift amounts clamped at the width, INT_MIN.
"""

from __future__ import annotations

import pytest

from ptx_harness import BINARY_32, EDGE_WORDS, M32, pairs, run_rows, s32

SHIFT_AMOUNTS = [0, 1, 2, 7, 16, 31, 32, 33, 63, 64, 100, 0x8000_0000, 0xFFFF_FFFF]


def shl(a, n):
    return (a << n) & M32 if n < 32 else 0


def shr_u(a, n):
    return a >> n if n < 32 else 0


def shr_s(a, n):
    return (s32(a) >> min(n, 32)) & M32


@pytest.mark.parametrize("op", sorted(BINARY_32))
def test_binary_register_operands(op):
    rows = pairs()
    got = run_rows(f"    {op} %o0, %a0, %a1;", rows, 1)
    assert got == [(BINARY_32[op](a, b) & M32,) for a, b in rows]


SHIFTS = {"shl.b32": shl, "shr.u32": shr_u, "shr.b32": shr_u, "shr.s32": shr_s}


@pytest.mark.parametrize("op", sorted(SHIFTS))
def test_shift_by_register_clamps_at_32(op):
    rows = [(a, n) for a in (0x8000_0001, 0xFFFF_FFFF, 0x1234_5678, 1, 0) for n in SHIFT_AMOUNTS]
    got = run_rows(f"    {op} %o0, %a0, %a1;", rows, 1)
    assert got == [(SHIFTS[op](a, n),) for a, n in rows]


@pytest.mark.parametrize("amount", [0, 1, 31, 32, 33, 200])
def test_shift_by_immediate(amount):
    rows = [(a,) for a in EDGE_WORDS]
    body = (f"    shl.b32 %o0, %a0, {amount};\n    shr.u32 %o1, %a0, {amount};\n"
            f"    shr.s32 %o2, %a0, {amount};")
    got = run_rows(body, rows, 3)
    assert got == [(shl(a, amount), shr_u(a, amount), shr_s(a, amount)) for (a,) in rows]


def test_immediate_operands_in_every_position():
    rows = [(a,) for a in EDGE_WORDS]
    body = """\
    sub.s32 %o0, 5, %a0;
    add.s32 %o1, %a0, -7;
    and.b32 %o2, %a0, 0xFFFF0000;
    min.u32 %o3, 7, %a0;
    mul.lo.s32 %o4, -3, %a0;
    xor.b32 %o5, %a0, -1;
    max.s32 %o6, -2147483648, %a0;
    or.b32 %o7, %a0, 0x80000000U;"""
    got = run_rows(body, rows, 8)
    assert got == [((5 - a) & M32, (a - 7) & M32, a & 0xFFFF_0000, min(7, a), (-3 * a) & M32,
                    a ^ M32, a, a | 0x8000_0000) for (a,) in rows]


def test_unary():
    rows = [(a,) for a in EDGE_WORDS]
    body = """\
    neg.s32 %o0, %a0;
    abs.s32 %o1, %a0;
    not.b32 %o2, %a0;
    cnot.b32 %o3, %a0;
    mov.b32 %o4, %a0;
    mov.u32 %o5, -2147483648;"""
    got = run_rows(body, rows, 6)
    assert got == [((-a) & M32, abs(s32(a)) & M32, a ^ M32, int(a == 0), a, 0x8000_0000)
                   for (a,) in rows]
    assert (abs(s32(0x8000_0000)) & M32) == 0x8000_0000   # abs(INT_MIN) stays INT_MIN


@pytest.mark.parametrize("op,expected", [
    ("mad.lo.s32", lambda a, b, c: a * b + c),
    ("mad.lo.u32", lambda a, b, c: a * b + c),
    ("mad.hi.s32", lambda a, b, c: ((s32(a) * s32(b)) >> 32) + c),
    ("mad.hi.u32", lambda a, b, c: ((a * b) >> 32) + c),
])
def test_multiply_add(op, expected):
    rows = [(a, b, c) for (a, b), c in zip(pairs(), EDGE_WORDS * 10)]
    got = run_rows(f"    {op} %o0, %a0, %a1, %a2;\n    {op} %o1, %a0, 3, -1;", rows, 2)
    assert got == [(expected(a, b, c) & M32, expected(a, 3, M32) & M32) for a, b, c in rows]


@pytest.mark.parametrize("signed", [True, False])
def test_multiply_wide(signed):
    kind = "s32" if signed else "u32"
    rows = pairs()
    body = f"    mul.wide.{kind} %y0, %a0, %a1;\n    mov.b64 {{%o0, %o1}}, %y0;\n" \
           f"    mad.wide.{kind} %y1, %a0, %a1, %y0;\n    mov.b64 {{%o2, %o3}}, %y1;"
    value = (lambda x: s32(x)) if signed else (lambda x: x)
    got = run_rows(body, rows, 4)
    for (a, b), words in zip(rows, got):
        product = (value(a) * value(b)) & ((1 << 64) - 1)
        twice = (2 * product) & ((1 << 64) - 1)
        assert words == (product & M32, product >> 32, twice & M32, twice >> 32)


COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"]


def compare(cmp, a, b, signed):
    x, y = (s32(a), s32(b)) if signed and cmp not in ("lo", "ls", "hi", "hs") else (a, b)
    return {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y,
            "lo": x < y, "ls": x <= y, "hi": x > y, "hs": x >= y}[cmp]


@pytest.mark.parametrize("type_name", ["s32", "u32"])
def test_setp_every_comparison(type_name):
    rows = pairs(extra=8) + [(a, a) for a in EDGE_WORDS[:6]]
    body = "\n".join(f"    setp.{cmp}.{type_name} %p1, %a0, %a1;\n"
                     f"    selp.u32 %o{k}, 1, 0, %p1;" for k, cmp in enumerate(COMPARISONS))
    got = run_rows(body, rows, len(COMPARISONS))
    signed = type_name == "s32"
    assert got == [tuple(int(compare(cmp, a, b, signed)) for cmp in COMPARISONS)
                   for a, b in rows]


def test_setp_with_an_immediate_first_operand_and_b32():
    rows = [(a,) for a in EDGE_WORDS]
    body = """\
    setp.lt.s32 %p1, 5, %a0;
    selp.u32 %o0, 1, 0, %p1;
    setp.eq.b32 %p2, %a0, 0xFFFFFFFF;
    selp.u32 %o1, 1, 0, %p2;
    setp.hi.u32 %p3, 7, %a0;
    selp.u32 %o2, 1, 0, %p3;"""
    got = run_rows(body, rows, 3)
    assert got == [(int(5 < s32(a)), int(a == M32), int(7 > a)) for (a,) in rows]


@pytest.mark.parametrize("boolean", ["and", "or", "xor"])
def test_setp_combining_and_two_destinations(boolean):
    rows = [(a, b, c) for (a, b), c in zip(pairs(extra=8), [0, 1] * 200)]
    body = f"""\
    setp.ne.u32 %q1, %a2, 0;
    setp.lt.{boolean}.s32 %p1|%p2, %a0, %a1, %q1;
    selp.u32 %o0, 1, 0, %p1;
    selp.u32 %o1, 1, 0, %p2;
    setp.ge.{boolean}.u32 %p3, %a0, %a1, !%q1;
    selp.u32 %o2, 1, 0, %p3;"""
    op = {"and": lambda x, y: x and y, "or": lambda x, y: x or y, "xor": lambda x, y: x != y}
    combine = op[boolean]
    got = run_rows(body, rows, 3)
    for (a, b, c), words in zip(rows, got):
        less = s32(a) < s32(b)
        assert words == (int(combine(less, c != 0)), int(combine(not less, c != 0)),
                         int(combine(a >= b, c == 0)))


def test_predicate_logic_and_guards():
    rows = pairs(extra=8)
    body = """\
    setp.lt.s32 %p1, %a0, %a1;
    setp.eq.u32 %p2, %a0, %a1;
    and.pred %p3, %p1, %p2;
    or.pred %p4, %p1, %p2;
    xor.pred %p5, %p1, %p4;
    not.pred %p6, %p1;
    mov.pred %p7, %p6;
    selp.u32 %o0, 1, 0, %p3;
    selp.u32 %o1, 1, 0, %p4;
    selp.u32 %o2, 1, 0, %p5;
    selp.u32 %o3, 1, 0, %p7;
    mov.u32 %o4, 77;
    @%p1 add.s32 %o4, %a0, %a1;
    @!%p1 sub.s32 %o4, %a0, %a1;
    selp.b32 %o5, %a0, %a1, %p4;
    selp.s32 %o6, -5, %a1, %p1;"""
    got = run_rows(body, rows, 7)
    for (a, b), words in zip(rows, got):
        less, equal = s32(a) < s32(b), a == b
        assert words == (int(less and equal), int(less or equal), int(less != (less or equal)),
                         int(not less), (a + b if less else a - b) & M32,
                         a if less or equal else b, M32 - 4 if less else b)


CONVERSIONS = {
    "cvt.s32.s8": lambda a: (a & 0xFF) - (0x100 if a & 0x80 else 0),
    "cvt.u32.u8": lambda a: a & 0xFF,
    "cvt.s32.s16": lambda a: (a & 0xFFFF) - (0x10000 if a & 0x8000 else 0),
    "cvt.u32.u16": lambda a: a & 0xFFFF,
    "cvt.u32.s8": lambda a: (a & 0xFF) - (0x100 if a & 0x80 else 0),
    "cvt.s32.u16": lambda a: a & 0xFFFF,
    "cvt.u8.u32": lambda a: a & 0xFF,
    "cvt.s8.s32": lambda a: (a & 0xFF) - (0x100 if a & 0x80 else 0),
    "cvt.u32.u32": lambda a: a,
}


@pytest.mark.parametrize("op", sorted(CONVERSIONS))
def test_conversions_within_32_bits(op):
    rows = [(a,) for a in EDGE_WORDS + [0x80, 0x7F, 0x8000, 0x7FFF, 0xFFFF_FF80]]
    got = run_rows(f"    {op} %o0, %a0;", rows, 1)
    assert got == [(CONVERSIONS[op](a) & M32,) for (a,) in rows]


def test_conversions_to_and_from_64_bits():
    rows = [(a,) for a in EDGE_WORDS]
    body = """\
    cvt.u64.u32 %y0, %a0;
    cvt.s64.s32 %y1, %a0;
    cvt.s64.s16 %y2, %a0;
    cvt.u32.u64 %o6, %y1;
    mov.b64 {%o0, %o1}, %y0;
    mov.b64 {%o2, %o3}, %y1;
    mov.b64 {%o4, %o5}, %y2;"""
    got = run_rows(body, rows, 7)
    for (a,), words in zip(rows, got):
        wide_signed = s32(a) & ((1 << 64) - 1)
        short = ((a & 0xFFFF) - (0x10000 if a & 0x8000 else 0)) & ((1 << 64) - 1)
        assert words == (a, 0, wide_signed & M32, wide_signed >> 32, short & M32, short >> 32, a)


def c_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def test_division_and_remainder_by_a_register():
    rows = [(a, b) for a, b in pairs() if b] + [(0x8000_0000, 0xFFFF_FFFF), (0x8000_0000, 1)]
    body = ("    div.u32 %o0, %a0, %a1;\n    rem.u32 %o1, %a0, %a1;\n"
            "    div.s32 %o2, %a0, %a1;\n    rem.s32 %o3, %a0, %a1;")
    got = run_rows(body, rows, 4)
    for (a, b), words in zip(rows, got):
        sa, sb = s32(a), s32(b)
        if sa == -(1 << 31) and sb == -1:      # overflows: PTX leaves it unspecified
            assert words[:2] == (0, 0x8000_0000)
            continue
        quotient = c_div(sa, sb)
        assert words == (a // b, a % b, quotient & M32, (sa - sb * quotient) & M32)


def test_division_by_zero_and_by_constants():
    rows = [(a,) for a in EDGE_WORDS]
    body = ("    div.u32 %o0, %a0, 0;\n    rem.u32 %o1, %a0, 0;\n    div.u32 %o2, %a0, 8;\n"
            "    rem.u32 %o3, %a0, 8;\n    div.s32 %o4, %a0, -3;\n    rem.s16 %h0, %a0, 7;\n"
            "    cvt.u32.u16 %o5, %h0;")
    got = run_rows(body, rows, 6)
    for (a,), words in zip(rows, got):
        small = a & 0xFFFF
        signed_small = small - (1 << 16) if small >> 15 else small
        remainder_16 = (signed_small - 7 * c_div(signed_small, 7)) & 0xFFFF
        assert words == (M32, a, a >> 3, a & 7, c_div(s32(a), -3) & M32, remainder_16)


def test_bit_counting():
    rows = [(a,) for a in EDGE_WORDS + [0x0001_0000, 0x4000_0000, 6]]
    first = "    popc.b32 %o0, %a0;\n    clz.b32 %o1, %a0;\n    brev.b32 %o2, %a0;"
    second = ("    bfind.u32 %o0, %a0;\n    bfind.s32 %o1, %a0;\n"
              "    bfind.shiftamt.u32 %o2, %a0;")
    third = ("    mov.b64 %y0, {%a0, %a0};\n    popc.b64 %o0, %y0;\n"
             "    cvt.u64.u32 %y1, %a0;\n    clz.b64 %o1, %y1;\n    clz.b64 %o2, %y0;")
    got = [a + b + c for a, b, c in zip(run_rows(first, rows, 3), run_rows(second, rows, 3),
                                        run_rows(third, rows, 3))]
    for (a,), words in zip(rows, got):
        signed = s32(a)
        msb_s = (~signed if signed < 0 else signed).bit_length() - 1
        assert words == (bin(a).count("1"), 32 - a.bit_length(), int(f"{a:032b}"[::-1], 2),
                         (a.bit_length() - 1) & M32, msb_s & M32,
                         (32 - a.bit_length()) if a else M32, 2 * bin(a).count("1"),
                         64 - a.bit_length(), 32 - a.bit_length() if a else 64)
