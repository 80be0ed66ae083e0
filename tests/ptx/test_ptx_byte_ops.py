"""`prmt` with a register selector and in every mode, and `dp4a`/`dp2a` in every signedness,
against plain-Python readings of the PTX ISA manual (written here, shared with nothing).

prmt: every value of every selector nibble (each of the 16 values in each of the 4 result
positions, the other nibbles varied), on a few pairs of words whose bytes have both signs;
each mode for every c[1:0] (with junk in c's other bits, which the modes ignore), with the
selector in a register and as an immediate.  dp4a/dp2a: words of bytes and halfwords at the
edges (0x80, 0x7F, 0xFF, 0x8000, 0x7FFF, 0xFFFF) and random ones.
"""

from __future__ import annotations

import random

import pytest

from ptx_harness import EDGE_WORDS, M32, run_rows, sext

WORD_PAIRS = [(0x8899AABB, 0x11223344), (0x7F80FF01, 0x00FE8001), (0xDEADBEEF, 0xCAFEF00D)]

# The manual's table of the modes: for c[1:0] = 0..3, where d.b3, d.b2, d.b1, d.b0 come from
# (bytes 0..3 are a's, 4..7 are b's).
MODE_TABLE = {
    "f4e": ["3 2 1 0", "4 3 2 1", "5 4 3 2", "6 5 4 3"],
    "b4e": ["5 6 7 0", "6 7 0 1", "7 0 1 2", "0 1 2 3"],
    "rc8": ["0 0 0 0", "1 1 1 1", "2 2 2 2", "3 3 3 3"],
    "ecl": ["3 2 1 0", "3 2 1 1", "3 2 2 2", "3 3 3 3"],
    "ecr": ["0 0 0 0", "1 1 1 0", "2 2 1 0", "3 2 1 0"],
    "rc16": ["1 0 1 0", "3 2 3 2", "1 0 1 0", "3 2 3 2"],
}


def source_byte(a: int, b: int, index: int) -> int:
    return ((b << 32 | a) >> (8 * index)) & 0xFF


def prmt_generic(a: int, b: int, c: int) -> int:
    result = 0
    for position in range(4):
        control = (c >> (4 * position)) & 0xF
        value = source_byte(a, b, control & 7)
        if control & 8:                      # replicate the byte's sign
            value = 0xFF if value & 0x80 else 0x00
        result |= value << (8 * position)
    return result


def prmt_mode(a: int, b: int, c: int, mode: str) -> int:
    d3, d2, d1, d0 = (int(text) for text in MODE_TABLE[mode][c & 3].split())
    return (source_byte(a, b, d3) << 24 | source_byte(a, b, d2) << 16 |
            source_byte(a, b, d1) << 8 | source_byte(a, b, d0))


def every_nibble_selectors(seed: int = 5) -> list[int]:
    rng = random.Random(seed)
    selectors = []
    for position in range(4):
        for value in range(16):
            others = rng.getrandbits(16) & ~(0xF << (4 * position))
            selectors.append(others | value << (4 * position) | rng.getrandbits(16) << 16)
    return selectors


def test_register_selector_every_nibble_value_in_every_position():
    rows = [(a, b, c) for c in every_nibble_selectors() for a, b in WORD_PAIRS]
    got = run_rows("    prmt.b32 %o0, %a0, %a1, %a2;", rows, 1)
    assert got == [(prmt_generic(a, b, c),) for a, b, c in rows]


@pytest.mark.parametrize("mode", sorted(MODE_TABLE))
def test_every_mode_with_a_register_selector(mode):
    rows = [(a, b, low | junk) for low in range(4) for junk in (0, 0xFFFF_FFF0, 0x1234_5670)
            for a, b in WORD_PAIRS]
    got = run_rows(f"    prmt.b32.{mode} %o0, %a0, %a1, %a2;", rows, 1)
    assert got == [(prmt_mode(a, b, c, mode),) for a, b, c in rows]


@pytest.mark.parametrize("mode", sorted(MODE_TABLE))
@pytest.mark.parametrize("selector", [0, 1, 2, 3, 0xFE, 0x7FFF_FFFF])
def test_every_mode_with_an_immediate_selector(mode, selector):
    rows = list(WORD_PAIRS)
    got = run_rows(f"    prmt.b32.{mode} %o0, %a0, %a1, {selector};", rows, 1)
    assert got == [(prmt_mode(a, b, selector, mode),) for a, b in rows]


def test_a_guarded_register_prmt_keeps_the_destination_where_the_guard_fails():
    rows = [(a, b, c, flag) for a, b in WORD_PAIRS for c in (0x3210, 0x89AB, 0x0741)
            for flag in (0, 1)]
    body = """\
    setp.ne.u32 %p1, %a3, 0;
    mov.u32 %o0, 77;
    @%p1 prmt.b32 %o0, %a0, %a1, %a2;"""
    got = run_rows(body, rows, 1)
    assert got == [(prmt_generic(a, b, c) if flag else 77,) for a, b, c, flag in rows]


# ---- dp4a / dp2a --------------------------------------------------------------------------------

DOT_WORDS = [0, 0x01010101, 0x80808080, 0x7F7F7F7F, 0xFFFFFFFF, 0x7F80FF01, 0x8000_7FFF,
             0xFFFF_8000, 0x0102_0304, 0x4D96_1D00]


def dot_rows(seed: int = 3, extra: int = 12) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    rows = [(a, b, c) for i, a in enumerate(DOT_WORDS) for j, b in enumerate(DOT_WORDS)
            if (i + 2 * j) % 4 == 0 for c in (0, 0x7FFF_FFFF)]
    rows += [(rng.getrandbits(32), rng.getrandbits(32), rng.choice(EDGE_WORDS))
             for _ in range(extra)]
    return rows


def part(word: int, index: int, bits: int, signed: bool) -> int:
    value = (word >> (bits * index)) & ((1 << bits) - 1)
    return sext(value, bits) if signed else value


def dp4a(a: int, b: int, c: int, a_signed: bool, b_signed: bool) -> int:
    return (c + sum(part(a, k, 8, a_signed) * part(b, k, 8, b_signed) for k in range(4))) & M32


def dp2a(a: int, b: int, c: int, a_signed: bool, b_signed: bool, high: bool) -> int:
    first = 2 if high else 0
    return (c + sum(part(a, k, 16, a_signed) * part(b, first + k, 8, b_signed)
                    for k in range(2))) & M32


SIGNS = [("u32", "u32"), ("u32", "s32"), ("s32", "u32"), ("s32", "s32")]


@pytest.mark.parametrize("a_type,b_type", SIGNS)
def test_dp4a_every_signedness(a_type, b_type):
    rows = dot_rows()
    got = run_rows(f"    dp4a.{a_type}.{b_type} %o0, %a0, %a1, %a2;", rows, 1)
    assert got == [(dp4a(a, b, c, a_type[0] == "s", b_type[0] == "s"),) for a, b, c in rows]


@pytest.mark.parametrize("half", ["lo", "hi"])
@pytest.mark.parametrize("a_type,b_type", SIGNS)
def test_dp2a_every_signedness_and_half(half, a_type, b_type):
    rows = dot_rows(seed=4)
    got = run_rows(f"    dp2a.{half}.{a_type}.{b_type} %o0, %a0, %a1, %a2;", rows, 1)
    assert got == [(dp2a(a, b, c, a_type[0] == "s", b_type[0] == "s", half == "hi"),)
                   for a, b, c in rows]


@pytest.mark.parametrize("a_type,b_type", SIGNS)
def test_dp4a_with_constant_weights(a_type, b_type):
    """nvcc's grayscale: a constant word of weights (here with a byte above 0x7F too)."""
    weights = 0x1D96_4D00 | 0x80
    rows = [(a, c) for a in DOT_WORDS for c in (0, 5)]
    got = run_rows(f"    dp4a.{a_type}.{b_type} %o0, %a0, {weights}, %a1;", rows, 1)
    assert got == [(dp4a(a, weights, c, a_type[0] == "s", b_type[0] == "s"),) for a, c in rows]
