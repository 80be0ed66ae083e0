"""Float routines shared by several uses in one kernel (qwengpu/ptx/routines.py).

A kernel that multiplies (or divides, or takes roots) more than once gets one body of the
routine, reached by branches, and a dispatch on the calling site's number back to where each
lane came from.  These kernels call from straight-line code, from both arms of a branch the
lanes of a warp take apart, from a loop, and under a PTX guard; every result is numpy's
float32 arithmetic (canonical NaN), and a kernel that still does not fit is refused with its
slots counted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qwengpu.errors import CapacityError
from qwengpu.isa import Op
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx

from fpu_helpers import division_pairs, reference_divide, reference_multiply
from ptx_harness import row_kernel, run_ptx, run_rows
from test_ptx_float_bits import EDGE_FLOATS

ROWS = [(a, b) for a in EDGE_FLOATS[::2] for b in EDGE_FLOATS[::3]] + \
    list(zip(*(list(map(int, words)) for words in division_pairs(np.random.default_rng(41), 96))))
ONE = 0x3F80_0000
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def mul(a: int, b: int) -> int:
    return int(reference_multiply(np.array([a], np.uint32), np.array([b], np.uint32))[0])


def div(a: int, b: int) -> int:
    return int(reference_divide(np.array([a], np.uint32), np.array([b], np.uint32))[0])


def slots(body: str, outputs: int):
    return compile_kernel(parse_ptx(row_kernel(body, 2, outputs), "rows.ptx"), "rows").slots


def test_three_multiplies_share_one_body():
    body = ("    mul.f32 %o0, %a0, %a1;\n"
            "    mul.f32 %o1, %o0, %a0;\n"
            "    mul.ftz.f32 %o2, %o1, 0f40400000;")
    program = slots(body, 3)
    assert sum(slot.instruction.op == Op.MULHI_U for slot in program) == 1
    assert len(program) < 100                 # inlined three times it would be some 170
    flush = lambda w: w & 0x8000_0000 if w & 0x7F80_0000 == 0 else w
    want = []
    for a, b in ROWS:
        o0 = mul(a, b)
        o1 = mul(o0, a)
        want.append((o0, o1, flush(mul(flush(o1), 0x4040_0000))))
    assert run_rows(body, ROWS, 3) == want


def test_divisions_and_reciprocals_share_one_body():
    body = ("    div.rn.f32 %o0, %a0, %a1;\n"
            "    rcp.rn.f32 %o1, %a0;\n"
            "    div.rn.f32 %o2, %a1, %o0;")
    assert sum(slot.instruction.op == Op.BRA for slot in slots(body, 3)) < 10
    want = [(div(a, b), div(ONE, a), div(b, div(a, b))) for a, b in ROWS]
    assert run_rows(body, ROWS, 3) == want


def test_lanes_return_where_they_called_from():
    """Lanes 0 and 1 of each warp multiply in one arm, the others in the other arm, a third
    multiply follows the join, and a fourth runs three times in a loop."""
    body = ("    and.b32 %x1, %t, 3;\n"
            "    setp.lt.u32 %p1, %x1, 2;\n"
            "    @%p1 bra LOW;\n"
            "    mul.f32 %o0, %a0, %a1;\n"
            "    bra JOIN;\n"
            "LOW:\n"
            "    mul.f32 %o0, %a1, %a1;\n"
            "JOIN:\n"
            "    mul.f32 %o1, %o0, %a0;\n"
            "    mov.u32 %x2, 3;\n"
            "    mov.b32 %o2, 0f3F800000;\n"
            "LOOP:\n"
            "    mul.f32 %o2, %o2, %a1;\n"
            "    sub.u32 %x2, %x2, 1;\n"
            "    setp.ne.u32 %p2, %x2, 0;\n"
            "    @%p2 bra LOOP;")
    rows = ROWS[:64]
    want = []
    for index, (a, b) in enumerate(rows):
        o0 = mul(b, b) if index % 32 % 4 < 2 else mul(a, b)
        want.append((o0, mul(o0, a), mul(mul(mul(ONE, b), b), b)))
    assert run_rows(body, rows, 3) == want


def test_a_guarded_use_keeps_the_old_value_where_the_guard_fails():
    body = ("    setp.lt.u32 %p1, %a1, 0x80000000;\n"
            "    mov.u32 %o0, 7;\n"
            "    @%p1 mul.f32 %o0, %a0, %a1;\n"
            "    @!%p1 mul.f32 %o1, %a1, %a1;\n"
            "    @%p1 mov.u32 %o1, 9;")
    want = [(mul(a, b), 9) if b < 0x8000_0000 else (7, mul(b, b)) for a, b in ROWS]
    assert run_rows(body, ROWS, 2) == want


def test_nvcc_kernels_with_several_uses():
    """The corpus's float_complex_mul (four multiplies) and float_matmul (a 4x4 matrix
    product whose loop nvcc unrolls: four multiplies), on other operands than their launches."""
    xs = [0x3FC0_0000, 0xC020_0000, 0x3DCC_CCCD, 0x4B80_0001, 0x0000_0003, 0x7F7F_FFFF,
          0x8000_0000, 0x7F80_0000]
    ys = [0x4040_0000, 0x3F00_0000, 0xBE99_999A, 0x3F80_0001, 0x4B00_0000, 0x3F80_0002,
          0x4120_0000, 0x0000_0000]
    run = run_ptx(_example_ptx("float_complex_mul"), {"x": xs, "y": ys, "z": [0] * 8},
                  ["x", "y", "z"], block=4)
    want = []
    for i in range(4):
        a, b, c, d = xs[2 * i], xs[2 * i + 1], ys[2 * i], ys[2 * i + 1]
        want += [_add(mul(a, c), mul(b, d) ^ 0x8000_0000), _add(mul(a, d), mul(b, c))]
    assert run.words["z"] == want
    a = [0x3F80_0000 + 0x0010_0000 * i for i in range(16)]
    b = [0x4000_0000 - 0x0008_0000 * i for i in range(16)]
    run = run_ptx(_example_ptx("float_matmul"), {"a": a, "b": b, "c": [0] * 16},
                  ["a", "b", "c"], block=16)
    want = []
    for row in range(4):
        for col in range(4):
            total = 0
            for k in range(4):
                total = _add(total, mul(a[row * 4 + k], b[k * 4 + col]))
            want.append(total)
    assert run.words["c"] == want


def _example_ptx(name: str) -> str:
    return (EXAMPLES / name / "kernel.ptx").read_text()


def _add(a: int, b: int) -> int:
    with np.errstate(all="ignore"):
        result = int((np.array([a], np.uint32).view(np.float32)
                      + np.array([b], np.uint32).view(np.float32)).view(np.uint32)[0])
    return 0x7FFF_FFFF if result & 0x7FFF_FFFF > 0x7F80_0000 else result


def test_what_still_does_not_fit_is_refused_with_its_slots_counted():
    """Three different routines are three bodies: 52 + 72 + 64 instructions."""
    body = ("    mul.f32 %o0, %a0, %a1;\n"
            "    div.rn.f32 %o1, %a0, %a1;\n"
            "    sqrt.rn.f32 %o2, %a0;")
    with pytest.raises(CapacityError) as caught:
        slots(body, 3)
    assert "instruction slots, but QwenGPU has 128" in caught.value.message
