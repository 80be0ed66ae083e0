"""`add` and `sub` of `.f32` on the FPU (qwengpu/ptx/select_fpu.py), `cvt.sat.f32.f32`.

Each body runs over rows of binary32 operand pairs (ptx_harness.run_rows: the interpreter and
the tests' ISA model must agree) and is compared with PTX's semantics computed here with
numpy's float32 addition: round to nearest even, NaN results canonical (0x7FFFFFFF), `.ftz`
flushing subnormal inputs and results to the zero of their sign, `.sat` clamping to
[+0.0, 1.0] with NaN to +0.0.  nvcc's own PTX (tests/ptx/data/float_bits.cu) runs too, and
what the FPU does not have is refused at its line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qwengpu.isa import Op
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx

from fpu_helpers import operand_pairs, reference_add
from ptx_harness import HEADER, refusal_at_line, run_ptx, run_rows
from test_ptx_float_bits import EDGE_FLOATS, flushed

ROWS = [(a, b) for a in EDGE_FLOATS for b in EDGE_FLOATS[::3]] + \
    list(zip(*(list(map(int, words)) for words in operand_pairs(np.random.default_rng(11), 400))))
FLOAT_BITS = (Path(__file__).parent / "data" / "float_bits.ptx").read_text()
ONE = 0x3F80_0000


def add(a: int, b: int) -> int:
    return int(reference_add(np.array([a], np.uint32), np.array([b], np.uint32))[0])


def saturated(bits: int) -> int:
    """[+0.0, 1.0]; NaN and every negative (-0.0 too) to +0.0."""
    if bits & 0x7FFF_FFFF > 0x7F80_0000 or bits >> 31:
        return 0
    return min(bits, ONE)


def expected(opcode: str, a: int, b: int, ftz: bool = False, sat: bool = False) -> int:
    if ftz:
        a, b = flushed(a), flushed(b)
    result = add(a, b if opcode == "add" else b ^ 0x8000_0000)
    if ftz:
        result = flushed(result)
    return saturated(result) if sat else result


@pytest.mark.parametrize("modifiers", ["", ".rn", ".ftz", ".sat", ".rn.ftz.sat"])
def test_add_and_sub(modifiers):
    body = (f"    add{modifiers}.f32 %o0, %a0, %a1;\n"
            f"    sub{modifiers}.f32 %o1, %a0, %a1;")
    ftz, sat = ".ftz" in modifiers, ".sat" in modifiers
    got = run_rows(body, ROWS, 2)
    want = [(expected("add", a, b, ftz, sat), expected("sub", a, b, ftz, sat)) for a, b in ROWS]
    assert got == want


def test_immediate_operands_and_folding():
    """A float immediate in either place; two immediates are added at load time."""
    body = ("    add.f32 %o0, %a0, 0f3FC00000;\n"     # x + 1.5
            "    sub.f32 %o1, 0f3F800000, %a0;\n"     # 1 - x
            "    add.f32 %x1, 0f3F800000, 0f33800000;\n"   # 1 + 2^-24 = 1 (a tie, to even)
            "    add.f32 %o2, %x1, 0f00000000;")
    rows = [(a,) for a, _ in ROWS[::5]]
    got = run_rows(body, rows, 3)
    assert got == [(add(a, 0x3FC0_0000), add(ONE, a ^ 0x8000_0000), ONE) for a, in rows]
    folded = compile_kernel(parse_ptx(HEADER + ".visible .entry k(.param .u64 p)\n{\n"
                                      "    .reg .f32 %f<3>;\n    .reg .b64 %rd<2>;\n"
                                      "    ld.param.u64 %rd1, [p];\n"
                                      "    add.f32 %f1, 0f3F800000, 0f40000000;\n"
                                      "    st.global.f32 [%rd1], %f1;\n    ret;\n}\n", "k.ptx"), "k")
    assert not any(slot.instruction.op in (Op.FADD1, Op.FADD2) for slot in folded.slots)


@pytest.mark.parametrize("ftz", [False, True], ids=["plain", "ftz"])
def test_saturate(ftz):
    body = f"    cvt{'.ftz' if ftz else ''}.sat.f32.f32 %o0, %a0;"
    rows = [(a,) for a in EDGE_FLOATS + [0x3F7F_FFFF, 0x3F80_0001, 0x3E80_0000]]
    got = run_rows(body, rows, 1)
    assert got == [(saturated(flushed(a) if ftz else a),) for a, in rows]


def test_nvcc_float_kernels():
    """float_bits.cu: c = a + b; x - y, __saturatef(x + y), (x + 1.5f) - y."""
    pairs = ROWS[::7][:8]
    xs, ys = [a for a, _ in pairs], [b for _, b in pairs]
    run = run_ptx(FLOAT_BITS, {"a": xs, "b": ys, "c": [0] * 8}, ["a", "b", "c"], block=8,
                  kernel="float_add")
    assert run.words["c"] == [add(a, b) for a, b in pairs]
    run = run_ptx(FLOAT_BITS, {"a": xs, "b": ys, "out": [0] * 24}, ["a", "b", "out"], block=8,
                  kernel="float_add_sub")
    want = []
    for a, b in pairs:
        want += [expected("sub", a, b), saturated(add(a, b)),
                 expected("sub", add(a, 0x3FC0_0000), b)]
    assert run.words["out"] == want


@pytest.mark.parametrize("line,message", [
    ("add.rz.f32 %f1, %f2, %f3;", "the .rz rounding (QwenGPU's FPU rounds to nearest even"),
    ("sub.rm.f32 %f1, %f2, %f3;", "the .rm rounding"),
    ("add.rp.ftz.f32 %f1, %f2, %f3;", "the .rp rounding"),
    ("fma.rz.f32 %f1, %f2, %f3, %f0;", "the .rz rounding (QwenGPU's fma rounds to nearest"),
    ("cvt.rz.sat.f32.f32 %f1, %f2;", "the .sat modifier"),
])
def test_what_the_fpu_does_not_have_is_refused_at_its_line(line, message):
    assert message in refusal_at_line(line).message
