"""`mul` of `.f32` (qwengpu/ptx/select_fpu.py's `float_multiply`, a routine on integer instructions).

Expected values are numpy's float32 product (IEEE-754, round to nearest even, the CPU's own
multiplier) with PTX's canonical NaN, `.ftz` flushing subnormal inputs and results to the
zero of their sign and `.sat` clamping to [+0.0, 1.0] (tests/fpu_helpers.py).  Rows run on the
interpreter and the tests' ISA model (ptx_harness.run_rows); a million operand pairs run the
loader's machine code on the vectorised model (stretch_model.py), which
is first held equal to the interpreter on the same rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qwengpu.isa import Op
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx

from fpu_helpers import multiply_pairs, reference_multiply
from ptx_harness import HEADER, refusal_at_line, row_kernel, run_ptx, run_rows
from stretch_model import row_stretch, run_stretch
from test_ptx_float_add import add, saturated
from test_ptx_float_bits import EDGE_FLOATS, flushed

RANDOM = multiply_pairs(np.random.default_rng(23), 600)
ROWS = [(a, b) for a in EDGE_FLOATS for b in EDGE_FLOATS[::2]] + \
    list(zip(*(list(map(int, words)) for words in RANDOM)))
FLOAT_BITS = (Path(__file__).parent / "data" / "float_bits.ptx").read_text()
MILLION = 1_000_000


def multiply(a: int, b: int) -> int:
    return int(reference_multiply(np.array([a], np.uint32), np.array([b], np.uint32))[0])


def expected(a: int, b: int, ftz: bool = False, sat: bool = False) -> int:
    if ftz:
        a, b = flushed(a), flushed(b)
    result = multiply(a, b)
    if ftz:
        result = flushed(result)
    return saturated(result) if sat else result


@pytest.mark.parametrize("modifiers", ["", ".rn", ".ftz", ".sat", ".rn.ftz.sat"])
def test_multiply_on_edges_and_random_pairs(modifiers):
    ftz, sat = ".ftz" in modifiers, ".sat" in modifiers
    got = run_rows(f"    mul{modifiers}.f32 %o0, %a0, %a1;", ROWS, 1)
    assert got == [(expected(a, b, ftz, sat),) for a, b in ROWS]


def _multiply_code(modifiers: str = ""):
    kernel = compile_kernel(parse_ptx(row_kernel(f"    mul{modifiers}.f32 %o0, %a0, %a1;", 2, 1),
                                      "rows.ptx"), "rows")
    return row_stretch(kernel.slots)


def test_the_vectorised_model_agrees_with_the_interpreter():
    code, (a_register, b_register), out = _multiply_code()
    a, b = (np.array(column, np.uint32) for column in zip(*ROWS))
    modelled = run_stretch(code, {a_register: a, b_register: b})[out]
    assert [(int(word),) for word in modelled] == run_rows("    mul.f32 %o0, %a0, %a1;", ROWS, 1)


@pytest.mark.parametrize("modifiers", ["", ".ftz"])
def test_multiply_on_a_million_pairs(modifiers):
    """The issue's bar: 10^6 operand sets bit-exact (a fifth of them with subnormal results,
    a tenth overflowing, ties from short significands)."""
    code, (a_register, b_register), out = _multiply_code(modifiers)
    a, b = multiply_pairs(np.random.default_rng(2026), MILLION)
    got = run_stretch(code, {a_register: a, b_register: b})[out]
    if modifiers:
        flush = lambda words: np.where(words & 0x7F80_0000 == 0, words & 0x8000_0000, words)
        want = flush(reference_multiply(flush(a), flush(b)))
    else:
        want = reference_multiply(a, b)
    wrong = np.nonzero(got != want)[0]
    assert wrong.size == 0, [(hex(a[i]), hex(b[i]), hex(got[i]), hex(want[i]))
                             for i in wrong[:5]]
    subnormal = (want & 0x7F80_0000 == 0) & (want & 0x7F_FFFF != 0)
    assert subnormal.sum() > MILLION // 20 or modifiers


SCALES = ["0f3F000000", "0fBF000000", "0f40000000", "0fC0800000", "0f41000000"]   # .5 -.5 2 -4 8


@pytest.mark.parametrize("constant", SCALES)
def test_multiplying_by_half_or_a_small_power_of_two_needs_no_routine(constant):
    """x * 0.5 halves in some 14 instructions, x * 2, 4, 8 are FPU additions of x to itself:
    exact on a million operands (half of them subnormals and the smallest normals, where the
    halving rounds), in either operand order, and on the interpreter's edge rows."""
    words = int(constant[2:], 16)
    a, _ = multiply_pairs(np.random.default_rng(7), MILLION // 2)
    # and every 33rd word below 2^24 (the subnormals, the smallest normals) with each sign
    low = np.arange(0, 1 << 24, 33, dtype=np.uint32)
    a = np.concatenate([a, low, low | np.uint32(0x8000_0000)])
    want = reference_multiply(a, np.full(len(a), words, np.uint32))
    for body in (f"    mul.f32 %o0, %a0, {constant};", f"    mul.f32 %o0, {constant}, %a0;"):
        kernel = compile_kernel(parse_ptx(row_kernel(body, 2, 1), "rows.ptx"), "rows")
        assert len(kernel.slots) < 30
        assert not any(slot.instruction.op == Op.MULHI_U for slot in kernel.slots)
        code, (a_register, b_register), out = row_stretch(kernel.slots)
        got = run_stretch(code, {a_register: a, b_register: a})[out]
        wrong = np.nonzero(got != want)[0]
        assert wrong.size == 0, [(hex(a[i]), hex(got[i]), hex(want[i])) for i in wrong[:5]]
    rows = [(x,) for x in EDGE_FLOATS]
    assert run_rows(f"    mul.f32 %o0, %a0, {constant};", rows, 1) == \
        [(multiply(x, words),) for x, in rows]


KNOWN_PRODUCT = (HEADER + ".visible .entry k(.param .u64 p)\n{\n"
                 "    .reg .f32 %f<3>;\n    .reg .b64 %rd<2>;\n"
                 "    ld.param.u64 %rd1, [p];\n"
                 "    mul.f32 %f1, 0f3FC00000, 0f40000000;\n"
                 "    st.global.f32 [%rd1], %f1;\n    ret;\n}\n")


@pytest.mark.parametrize("line,constant,constant_first", [
    ("mul.f32 %o0, %a0, 0f3DCCCCCD;", 0x3DCC_CCCD, False),           # x * 0.1f
    ("mul.f32 %o0, 0fC0400000, %a0;", 0xC040_0000, True),            # -3 * x
    ("mul.f32 %o0, %a0, 0f00000003;", 0x0000_0003, False),           # a subnormal constant
])
def test_immediates(line, constant, constant_first):
    rows = [(a,) for a, _ in ROWS[::3]]
    got = run_rows("    " + line, rows, 1)
    assert got == [(multiply(constant, a) if constant_first else multiply(a, constant),)
                   for a, in rows]


def test_known_operands_are_multiplied_at_load_time():
    folded = compile_kernel(parse_ptx(KNOWN_PRODUCT, "k.ptx"), "k")
    assert not any(slot.instruction.op == Op.MULHI_U for slot in folded.slots)
    assert run_ptx(KNOWN_PRODUCT, {"p": [0]}, ["p"], block=1).words["p"] == [0x4040_0000]
    assert multiply(0x3F80_0001, 0x3F7F_FFFF) == 0x3F80_0000     # (1 + u)(1 - u/2), a tie


def test_nvcc_multiply_kernels():
    """float_bits.cu: a[i] * b[i]; __fmul_rn(a[i], b[i]) + 1.0f; __saturatef(a[i] * 0.1f)."""
    pairs = ROWS[::13][:8]
    xs, ys = [a for a, _ in pairs], [b for _, b in pairs]
    for kernel, want in (("float_mul", [multiply(a, b) for a, b in pairs]),
                         ("float_mul_add", [add(multiply(a, b), 0x3F80_0000) for a, b in pairs])):
        run = run_ptx(FLOAT_BITS, {"a": xs, "b": ys, "c": [0] * 8}, ["a", "b", "c"], block=8,
                      kernel=kernel)
        assert run.words["c"] == want, kernel
    run = run_ptx(FLOAT_BITS, {"a": xs, "c": [0] * 8}, ["a", "c"], block=8,
                  kernel="float_scale_saturate")
    assert run.words["c"] == [saturated(multiply(a, 0x3DCC_CCCD)) for a in xs]


@pytest.mark.parametrize("line,message", [
    ("mul.rz.f32 %f1, %f2, %f3;", "the .rz rounding (QwenGPU's mul rounds to nearest even"),
    ("mul.rp.ftz.f32 %f1, %f2, %f3;", "the .rp rounding"),
    ("mul.f64 %fd1, %fd2, %fd3;", "type .f64"),
])
def test_what_multiply_does_not_have_is_refused_at_its_line(line, message):
    assert message in refusal_at_line(line).message
