"""64-bit `div`/`rem` (`.u64`, `.s64`) on edge values, against Python's integers.

PTX truncates towards zero (C's `/` and `%`), which Python's `//` and `%` do not: the model
below divides magnitudes.  PTX leaves division by zero undefined; QwenGPU gives what its
restoring division gives (docs/ptx.md): `.u64` quotient 2^64 - 1 and remainder the dividend,
`.s64` quotient -1 (+1 for a negative dividend) and remainder the dividend.
INT64_MIN / -1 wraps to INT64_MIN with remainder 0.
"""

from __future__ import annotations

import random

import pytest

from ptx_harness import M32, M64, run_rows, s64

INT64_MIN = 1 << 63
EDGE_64 = [0, 1, 2, 3, 7, 0xFFFF_FFFF, 0x1_0000_0000, 0x1_0000_0001, 0x7FFF_FFFF_FFFF_FFFF,
           INT64_MIN, INT64_MIN + 1, M64, M64 - 1, 0x1234_5678_9ABC_DEF0, 1000, M64 - 999]


def unsigned_model(a: int, b: int) -> tuple[int, int]:
    if b == 0:
        return M64, a
    return a // b, a % b


def signed_model(a: int, b: int) -> tuple[int, int]:
    x, y = s64(a), s64(b)
    if y == 0:
        return (1 if x < 0 else -1) & M64, a
    quotient = abs(x) // abs(y)
    if (x < 0) != (y < 0):
        quotient = -quotient
    remainder = abs(x) % abs(y)
    if x < 0:
        remainder = -remainder
    return quotient & M64, remainder & M64


def division_rows(seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    rows = [(a, b) for i, a in enumerate(EDGE_64) for j, b in enumerate(EDGE_64)
            if (i + j) % 5 == 0 or j in (0, 1)]
    rows += [(rng.getrandbits(64), rng.getrandbits(rng.choice([8, 33, 64])) | 1)
             for _ in range(10)]
    rows += [(INT64_MIN, M64), (INT64_MIN, 1), (M64, M64), (5, M64), (M64, 2)]
    return rows


BODY = """\
    mov.b64 %y0, {{%a0, %a1}};
    mov.b64 %y1, {{%a2, %a3}};
    div.{kind}64 %y2, %y0, %y1;
    rem.{kind}64 %y3, %y0, %y1;
    mov.b64 {{%o0, %o1}}, %y2;
    mov.b64 {{%o2, %o3}}, %y3;"""


def run_division(kind: str, rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    words = [(a & M32, a >> 32, b & M32, b >> 32) for a, b in rows]
    got = run_rows(BODY.format(kind=kind), words, 4)
    return [(low | high << 32, rem_low | rem_high << 32)
            for low, high, rem_low, rem_high in got]


@pytest.mark.parametrize("kind,model", [("u", unsigned_model), ("s", signed_model)],
                         ids=["u64", "s64"])
def test_division_and_remainder_on_edge_values(kind, model):
    rows = division_rows(seed=11 if kind == "u" else 12)
    assert run_division(kind, rows) == [model(a, b) for a, b in rows]


def test_int64_min_by_minus_one_wraps():
    assert run_division("s", [(INT64_MIN, M64)]) == [(INT64_MIN, 0)]


@pytest.mark.parametrize("divisor", [1, 2, 8, 1 << 32, 1 << 63, 12345, 0x1_0000_0003])
def test_unsigned_division_by_immediates(divisor):
    rows = [(a,) for a in EDGE_64]
    body = f"""\
    mov.b64 %y0, {{%a0, %a1}};
    div.u64 %y2, %y0, {divisor};
    rem.u64 %y3, %y0, {divisor};
    mov.b64 {{%o0, %o1}}, %y2;
    mov.b64 {{%o2, %o3}}, %y3;"""
    got = run_rows(body, [(a & M32, a >> 32) for (a,) in rows], 4)
    assert [(q | qh << 32, r | rh << 32) for q, qh, r, rh in got] == \
        [(a // divisor, a % divisor) for (a,) in rows]


def test_a_guarded_division_keeps_the_destination_where_the_guard_fails():
    rows = [(100, 0, 7, 0, flag) for flag in (0, 1)] + [(M32, M32, 3, 0, 1)]
    body = """\
    mov.b64 %y0, {%a0, %a1};
    mov.b64 %y1, {%a2, %a3};
    setp.ne.u32 %p1, %a4, 0;
    mov.b64 %y2, 99;
    @%p1 div.s64 %y2, %y0, %y1;
    mov.b64 {%o0, %o1}, %y2;"""
    got = [low | high << 32 for low, high in run_rows(body, rows, 2)]
    assert got == [99, 14, 0]
