"""64-bit arithmetic on word pairs, 16-bit arithmetic in 32-bit registers, and the bit-field,
funnel-shift and byte-permute instructions, against plain-Python PTX semantics."""

from __future__ import annotations

import random

import pytest

from ptx_harness import EDGE_WORDS, M32, M64, pairs, run_rows, s64, sext

EDGE_64 = [0, 1, 2, M32, 1 << 32, (1 << 32) + 1, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, M64,
           M64 - 1, 0xFFFF_FFFF_0000_0000, 0x0000_0001_FFFF_FFFF, 0x1234_5678_9ABC_DEF0]


def pairs_64(extra: int = 10) -> list[tuple[int, int]]:
    rng = random.Random(64)
    chosen = [(a, b) for i, a in enumerate(EDGE_64) for j, b in enumerate(EDGE_64)
              if (i + 2 * j) % 5 == 0 or i == j]
    return chosen + [(rng.getrandbits(64), rng.getrandbits(64)) for _ in range(extra)]


def split(value: int) -> tuple[int, int]:
    value &= M64
    return value & M32, value >> 32


def rows_64(values: list[tuple[int, int]]) -> list[tuple[int, int, int, int]]:
    return [(*split(a), *split(b)) for a, b in values]


LOAD_64 = "    mov.b64 %y0, {%a0, %a1};\n    mov.b64 %y1, {%a2, %a3};\n"
STORE_64 = "    mov.b64 {%o0, %o1}, %y2;"

BINARY_64 = {
    "add.s64": lambda a, b: a + b,
    "sub.s64": lambda a, b: a - b,
    "mul.lo.s64": lambda a, b: a * b,
    "mul.lo.u64": lambda a, b: a * b,
    "and.b64": lambda a, b: a & b,
    "or.b64": lambda a, b: a | b,
    "xor.b64": lambda a, b: a ^ b,
    "min.s64": lambda a, b: min(s64(a), s64(b)),
    "max.s64": lambda a, b: max(s64(a), s64(b)),
    "min.u64": min,
    "max.u64": max,
}


@pytest.mark.parametrize("op", sorted(BINARY_64))
def test_binary_64(op):
    values = pairs_64()
    got = run_rows(LOAD_64 + f"    {op} %y2, %y0, %y1;\n" + STORE_64, rows_64(values), 2)
    assert got == [split(BINARY_64[op](a, b)) for a, b in values]


def test_carry_and_borrow_with_immediates():
    values = [(a, 0) for a in EDGE_64]
    body = ("    mov.b64 %y0, {%a0, %a1};\n    add.s64 %y2, %y0, 16;\n"
            "    sub.s64 %y3, %y0, 1;\n    add.s64 %y4, %y0, -1;\n"
            "    mov.b64 {%o0, %o1}, %y2;\n    mov.b64 {%o2, %o3}, %y3;\n"
            "    mov.b64 {%o4, %o5}, %y4;")
    got = run_rows(body, rows_64(values), 6)
    assert got == [(*split(a + 16), *split(a - 1), *split(a - 1)) for a, _ in values]


def test_unary_64():
    values = [(a, 0) for a in EDGE_64]
    body = ("    mov.b64 %y0, {%a0, %a1};\n    neg.s64 %y2, %y0;\n    abs.s64 %y3, %y0;\n"
            "    not.b64 %y4, %y0;\n    mov.b64 {%o0, %o1}, %y2;\n    mov.b64 {%o2, %o3}, %y3;\n"
            "    mov.b64 {%o4, %o5}, %y4;")
    got = run_rows(body, rows_64(values), 6)
    assert got == [(*split(-a), *split(abs(s64(a))), *split(~a)) for a, _ in values]


SHIFTS_64 = [0, 1, 5, 31, 32, 33, 40, 63, 64, 65, 1000, M32]


@pytest.mark.parametrize("op", ["shl.b64", "shr.u64", "shr.s64"])
def test_shift_64_by_register_and_immediate(op):
    def expected(a, n):
        n = min(n, 64)
        if op == "shl.b64":
            return a << n
        return s64(a) >> n if op == "shr.s64" else a >> n

    values = [(a, n) for a in (1 << 63 | 5, 0x8000_0001_0000_0003, M64, 0x1234_5678_9ABC_DEF0)
              for n in SHIFTS_64]
    rows = [(*split(a), n, 0) for a, n in values]
    body = "    mov.b64 %y0, {%a0, %a1};\n" + f"    {op} %y2, %y0, %a2;\n" + STORE_64
    assert run_rows(body, rows, 2) == [split(expected(a, n)) for a, n in values]
    for amount in (0, 1, 31, 32, 33, 63, 64, 99):
        body = "    mov.b64 %y0, {%a0, %a1};\n" + f"    {op} %y2, %y0, {amount};\n" + STORE_64
        rows = [(*split(a), 0, 0) for a in EDGE_64]
        assert run_rows(body, rows, 2) == [split(expected(a, amount)) for a in EDGE_64]


@pytest.mark.parametrize("type_name", ["s64", "u64"])
def test_setp_and_selp_64(type_name):
    comparisons = ["eq", "ne", "lt", "le", "gt", "ge"]
    values = pairs_64(extra=6) + [(a, a) for a in EDGE_64[:4]]
    body = LOAD_64 + "\n".join(f"    setp.{cmp}.{type_name} %p1, %y0, %y1;\n"
                               f"    selp.u32 %o{k}, 1, 0, %p1;"
                               for k, cmp in enumerate(comparisons))
    body += "\n    selp.b64 %y2, %y0, %y1, %p1;\n    mov.b64 {%o6, %o7}, %y2;"
    got = run_rows(body, rows_64(values), 8)
    signed = type_name == "s64"
    for (a, b), words in zip(values, got):
        x, y = (s64(a), s64(b)) if signed else (a, b)
        outcomes = [x == y, x != y, x < y, x <= y, x > y, x >= y]
        assert words == (*map(int, outcomes), *split(a if x >= y else b))


def test_multiply_add_64_and_param_words():
    values = pairs_64(extra=4)
    body = LOAD_64 + "    mad.lo.s64 %y2, %y0, %y1, %y0;\n" + STORE_64
    got = run_rows(body, rows_64(values), 2)
    assert got == [split(a * b + a) for a, b in values]


# ---- 16-bit values in 32-bit registers ----------------------------------------------------------

BINARY_16 = {
    "add.s16": lambda a, b: a + b,
    "sub.u16": lambda a, b: a - b,
    "mul.lo.s16": lambda a, b: a * b,
    "mul.hi.s16": lambda a, b: (sext(a, 16) * sext(b, 16)) >> 16,
    "mul.hi.u16": lambda a, b: (a * b) >> 16,
    "min.s16": lambda a, b: min(sext(a, 16), sext(b, 16)),
    "max.u16": max,
    "and.b16": lambda a, b: a & b,
    "xor.b16": lambda a, b: a ^ b,
    "shl.b16": lambda a, b: a << b if b < 16 else 0,
    "shr.u16": lambda a, b: a >> b,
    "shr.s16": lambda a, b: sext(a, 16) >> min(b, 16),
}
WORDS_16 = [0, 1, 2, 15, 16, 17, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0xFFFE, 0x1234]


@pytest.mark.parametrize("op", sorted(BINARY_16))
def test_binary_16(op):
    rows = pairs(WORDS_16, extra=8)
    body = ("    cvt.u16.u32 %h0, %a0;\n    cvt.u16.u32 %h1, %a1;\n"
            f"    {op} %h2, %h0, %h1;\n    cvt.u32.u16 %o0, %h2;")
    got = run_rows(body, [(a & 0xFFFF, b & 0xFFFF) for a, b in rows], 1)
    assert got == [(BINARY_16[op](a & 0xFFFF, b & 0xFFFF) & 0xFFFF,) for a, b in rows]


def test_16_bit_unary_compare_wide_and_unpack():
    rows = [((a & 0xFFFF) | (b & 0xFFFF) << 16,) for a, b in pairs(WORDS_16, extra=6)]
    body = """\
    mov.b32 {%h0, %h1}, %a0;
    neg.s16 %h2, %h0;
    abs.s16 %h3, %h0;
    not.b16 %h4, %h1;
    cvt.u32.u16 %o0, %h2;
    cvt.u32.u16 %o1, %h3;
    cvt.u32.u16 %o2, %h4;
    setp.lt.s16 %p1, %h0, %h1;
    selp.u32 %o3, 1, 0, %p1;
    setp.lt.u16 %p2, %h0, %h1;
    selp.u32 %o4, 1, 0, %p2;
    mul.wide.s16 %o5, %h0, %h1;
    mul.wide.u16 %o6, %h0, %h1;
    cvt.s32.s16 %o7, %h1;
    and.b16 %h5, %h0, -256;
    mov.b32 %o8, {%h5, %h0};
    add.s16 %h6, %h0, -1;
    cvt.u32.u16 %o9, %h6;"""
    got = run_rows(body, rows, 10)
    for (word,), values in zip(rows, got):
        a, b = word & 0xFFFF, word >> 16
        sa, sb = sext(a, 16), sext(b, 16)
        assert values == ((-a) & 0xFFFF, abs(sa) & 0xFFFF, ~b & 0xFFFF, int(sa < sb),
                          int(a < b), (sa * sb) & M32, a * b, sb & M32, (a & 0xFF00) | (a << 16),
                          (a - 1) & 0xFFFF)


# ---- funnel shifts, bit fields, byte permutes ---------------------------------------------------


def funnel(a, b, n, left, clamp):
    n = min(n, 32) if clamp else n & 31
    wide = (b << 32) | a
    return ((wide << n) >> 32) & M32 if left else (wide >> n) & M32


@pytest.mark.parametrize("mode", ["l.wrap", "r.wrap", "l.clamp", "r.clamp"])
def test_funnel_shift(mode):
    left, clamp = mode.startswith("l"), mode.endswith("clamp")
    amounts = [0, 1, 7, 16, 31, 32, 33, 40, M32]
    rows = [(a, b, n) for a, b in pairs(extra=2)[:12] for n in amounts]
    body = f"    shf.{mode}.b32 %o0, %a0, %a1, %a2;\n    shf.{mode}.b32 %o1, %a0, %a0, 7;\n" \
           f"    shf.{mode}.b32 %o2, %a0, %a1, 32;"
    got = run_rows(body, rows, 3)
    assert got == [(funnel(a, b, n, left, clamp), funnel(a, a, 7, left, clamp),
                    funnel(a, b, 32, left, clamp)) for a, b, n in rows]


def bfe(a, pos, length, signed):
    pos, length = pos & 0xFF, length & 0xFF
    sbit = 0 if not signed or length == 0 else (a >> min(pos + length - 1, 31)) & 1
    result = 0
    for i in range(32):
        bit = (a >> (pos + i)) & 1 if i < length and pos + i <= 31 else sbit
        result |= bit << i
    return result


FIELDS = [(0, 0), (0, 1), (0, 32), (3, 5), (8, 8), (16, 16), (28, 8), (31, 1), (31, 5),
          (32, 4), (40, 3), (0, 40), (4, 300), (260, 4)]


@pytest.mark.parametrize("signed", [False, True])
def test_bit_field_extract(signed):
    kind = "s32" if signed else "u32"
    for pos, length in FIELDS:
        rows = [(a,) for a in EDGE_WORDS]
        got = run_rows(f"    bfe.{kind} %o0, %a0, {pos}, {length};", rows, 1)
        assert got == [(bfe(a, pos, length, signed),) for (a,) in rows], (pos, length)
    rows = [(a, pos, length) for a in (0xDEAD_BEEF, 0x8000_0000, 0x7FFF_FFFF)
            for pos, length in FIELDS]
    if not signed:
        got = run_rows("    bfe.u32 %o0, %a0, %a1, %a2;", rows, 1)
        assert got == [(bfe(a, pos, length, False),) for a, pos, length in rows]


def test_bit_field_insert():
    for pos, length in FIELDS:
        rows = pairs(extra=2)[:10]
        got = run_rows(f"    bfi.b32 %o0, %a0, %a1, {pos}, {length};", rows, 1)
        expected = []
        for a, b in rows:
            result = b
            for i in range(length & 0xFF):
                if (pos & 0xFF) + i <= 31:
                    bit = 1 << ((pos & 0xFF) + i)
                    result = (result & ~bit) | (((a >> i) & 1) << ((pos & 0xFF) + i))
            expected.append((result & M32,))
        assert got == expected, (pos, length)


def prmt(a, b, selector):
    source = a | (b << 32)
    result = 0
    for i in range(4):
        nibble = (selector >> (4 * i)) & 0xF
        byte = (source >> (8 * (nibble & 7))) & 0xFF
        if nibble & 8:
            byte = 0xFF if byte & 0x80 else 0
        result |= byte << (8 * i)
    return result


@pytest.mark.parametrize("selector", [0x3210, 0x7654, 0x0123, 0x7604, 0x4444, 0x8888, 0x0B1A,
                                      0x5140, 0xF0E1])
def test_byte_permute(selector):
    rows = pairs(extra=4)[:20]
    got = run_rows(f"    prmt.b32 %o0, %a0, %a1, {selector};", rows, 1)
    assert got == [(prmt(a, b, selector),) for a, b in rows]
