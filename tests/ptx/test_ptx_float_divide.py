"""`div`, `rcp` and `sqrt` of `.f32` (qwengpu/ptx/select_float_divide.py: loops on integers).

Expected values are numpy's float32 division and square root (IEEE-754, correctly rounded)
with PTX's canonical NaN, `.ftz` flushing subnormal inputs and results to the zero of their
sign, and div.approx's own rule for 2^126 < |b| < 2^128 (the PTX ISA: NaN if a is infinite,
else 0).  Rows run on the interpreter and the tests' ISA model (ptx_harness.run_rows); a
million operands run the loader's machine code on the vectorised model (stretch_model.py),
which is first held equal to the interpreter on the same rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qwengpu.isa import Op
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx

from fpu_helpers import (division_pairs, reference_divide, reference_square_root,
                         root_operands)
from ptx_harness import HEADER, refusal_at_line, row_kernel, run_ptx, run_rows
from stretch_model import row_stretch, run_stretch
from test_ptx_float_bits import EDGE_FLOATS, flushed

RANDOM = division_pairs(np.random.default_rng(31), 300)
ROWS = [(a, b) for a in EDGE_FLOATS for b in EDGE_FLOATS[::3]] + \
    list(zip(*(list(map(int, words)) for words in RANDOM)))
FLOAT_BITS = (Path(__file__).parent / "data" / "float_bits.ptx").read_text()
ONE, INFINITY = 0x3F80_0000, 0x7F80_0000
MILLION = 1_000_000


def words(*values: int) -> np.ndarray:
    return np.array(values, np.uint32)


def divide(a: int, b: int) -> int:
    return int(reference_divide(words(a), words(b))[0])


def root(a: int) -> int:
    return int(reference_square_root(words(a))[0])


def approximate_divide(a: int, b: int) -> int:
    if 0x7E80_0000 < b & 0x7FFF_FFFF < INFINITY:
        return 0x7FFF_FFFF if a & 0x7FFF_FFFF == INFINITY else 0
    return divide(a, b)


def expected(opcode: str, a: int, b: int, ftz: bool) -> int:
    if ftz:
        a, b = flushed(a), flushed(b)
    result = {"div": divide(a, b), "div.approx": approximate_divide(a, b), "rcp": divide(ONE, a),
              "sqrt": root(a)}[opcode]
    return flushed(result) if ftz else result


INSTRUCTIONS = {"div": "div.rn{ftz}.f32 %o0, %a0, %a1;", "rcp": "rcp.rn{ftz}.f32 %o0, %a0;",
                "sqrt": "sqrt.rn{ftz}.f32 %o0, %a0;"}


@pytest.mark.parametrize("ftz", ["", ".ftz"])
@pytest.mark.parametrize("opcode", list(INSTRUCTIONS))
def test_on_edges_and_random_operands(opcode, ftz):
    rows = ROWS if opcode == "div" else ROWS[::3]
    got = run_rows("    " + INSTRUCTIONS[opcode].format(ftz=ftz), rows, 1)
    assert got == [(expected(opcode, a, b, bool(ftz)),) for a, b in rows]


@pytest.mark.parametrize("line,opcode", [
    ("div.full.f32 %o0, %a0, %a1;", "div"),           # 2 ulp allowed: exact is within
    ("sqrt.approx.f32 %o0, %a0;", "sqrt"),            # 2^-23 relative allowed
    ("rcp.approx.ftz.f32 %o0, %a0;", "rcp"),          # 1 ulp allowed
    ("div.approx.f32 %o0, %a0, %a1;", "div.approx"),  # and its rule for huge divisors
])
def test_the_full_and_approximate_forms_are_the_correctly_rounded_ones(line, opcode):
    huge = [(a, b) for a in EDGE_FLOATS[::2] for b in (0x7F00_0000, 0xFF7F_FFFF, 0x7E80_0001)]
    rows = ROWS[::4] + huge
    got = run_rows("    " + line, rows, 1)
    assert got == [(expected(opcode, a, b, ".ftz" in line),) for a, b in rows]


def _stretch(line: str):
    kernel = compile_kernel(parse_ptx(row_kernel("    " + line, 2, 1), "rows.ptx"), "rows")
    return row_stretch(kernel.slots)


@pytest.mark.parametrize("opcode", list(INSTRUCTIONS))
def test_the_vectorised_model_agrees_with_the_interpreter(opcode):
    line = INSTRUCTIONS[opcode].format(ftz="")
    code, (a_register, b_register), out = _stretch(line)
    rows = ROWS[::2]
    a, b = (np.array(column, np.uint32) for column in zip(*rows))
    modelled = run_stretch(code, {a_register: a, b_register: b})[out]
    assert [(int(word),) for word in modelled] == run_rows("    " + line, rows, 1)


@pytest.mark.parametrize("opcode", list(INSTRUCTIONS))
def test_on_a_million_operands(opcode):
    """The issue's bar: 10^6 operand sets bit-exact."""
    code, (a_register, b_register), out = _stretch(INSTRUCTIONS[opcode].format(ftz=""))
    rng = np.random.default_rng(2027)
    if opcode == "sqrt":
        a = root_operands(rng, MILLION)
        b = a
        want = reference_square_root(a)
    else:
        a, b = division_pairs(rng, MILLION)
        if opcode == "rcp":
            a, b = b, a
        want = reference_divide(a, b) if opcode == "div" else \
            reference_divide(np.full(MILLION, ONE, np.uint32), a)
    got = run_stretch(code, {a_register: a, b_register: b})[out]
    wrong = np.nonzero(got != want)[0]
    assert wrong.size == 0, [(hex(a[i]), hex(b[i]), hex(got[i]), hex(want[i]))
                             for i in wrong[:5]]
    subnormal = (want & 0x7F80_0000 == 0) & (want & 0x7F_FFFF != 0)
    assert subnormal.sum() > MILLION // 50 or opcode == "sqrt"


KNOWN = (HEADER + ".visible .entry k(.param .u64 p)\n{{\n"
         "    .reg .f32 %f<3>;\n    .reg .b64 %rd<2>;\n"
         "    ld.param.u64 %rd1, [p];\n"
         "    {line}\n"
         "    st.global.f32 [%rd1], %f1;\n    ret;\n}}\n")


@pytest.mark.parametrize("line,want", [
    ("div.rn.f32 %f1, 0f3F800000, 0f40400000;", 0x3EAA_AAAB),    # 1/3
    ("div.rn.f32 %f1, 0f00000003, 0f40000000;", 0x0000_0002),    # 1.5 ulp: a tie, to even
    ("rcp.rn.f32 %f1, 0f00000000;", INFINITY),
    ("sqrt.rn.f32 %f1, 0f40000000;", 0x3FB5_04F3),               # sqrt(2)
    ("sqrt.rn.f32 %f1, 0f80000000;", 0x8000_0000),               # sqrt(-0) = -0
    ("div.approx.f32 %f1, 0f3F800000, 0f7F000000;", 0),          # |b| = 2^127: 0
])
def test_known_operands_are_computed_at_load_time(line, want):
    ptx = KNOWN.format(line=line)
    program = compile_kernel(parse_ptx(ptx, "k.ptx"), "k")
    assert not any(slot.instruction.op == Op.BRA for slot in program.slots)
    assert run_ptx(ptx, {"p": [0]}, ["p"], block=1).words["p"] == [want]
    operands = _operands(line)                  # the table itself, against numpy
    if "approx" not in line:
        assert want == (root(operands[0]) if line.startswith("sqrt") else divide(*operands))


def _operands(line: str) -> list[int]:
    """The float immediates of a line (rcp reads as 1 / x)."""
    values = [int(token[2:10], 16) for token in line.replace(";", "").split(", ")[1:]]
    return [ONE, *values] if line.startswith("rcp") else values


def test_a_guarded_division_leaves_other_lanes_alone():
    body = ("    setp.lt.u32 %p1, %a1, 0x80000000;\n"
            "    mov.u32 %o0, 7;\n"
            "    @%p1 div.rn.f32 %o0, %a0, %a1;")
    rows = ROWS[::5]
    got = run_rows(body, rows, 1)
    assert got == [(divide(a, b) if b < 0x8000_0000 else 7,) for a, b in rows]


def test_nvcc_kernels():
    """float_bits.cu: a / b, __fdividef(a, b), sqrtf(a), 1.0f / a."""
    pairs = ROWS[::11][:8]
    xs, ys = [a for a, _ in pairs], [b for _, b in pairs]
    for kernel, operation in (("float_div", divide), ("float_fast_div", approximate_divide)):
        run = run_ptx(FLOAT_BITS, {"a": xs, "b": ys, "c": [0] * 8}, ["a", "b", "c"], block=8,
                      kernel=kernel)
        assert run.words["c"] == [operation(a, b) for a, b in pairs], kernel
    for kernel, operation in (("float_sqrt", root), ("float_rcp", lambda a: divide(ONE, a))):
        run = run_ptx(FLOAT_BITS, {"a": xs, "c": [0] * 8}, ["a", "c"], block=8, kernel=kernel)
        assert run.words["c"] == [operation(a) for a in xs], kernel


@pytest.mark.parametrize("line,message", [
    ("div.rz.f32 %f1, %f2, %f3;", "the .rz rounding (QwenGPU's div rounds to nearest even"),
    ("sqrt.rm.f32 %f1, %f2;", "the .rm rounding"),
    ("div.f32 %f1, %f2, %f3;", "without .rn, .full or .approx"),
    ("sqrt.full.f32 %f1, %f2;", "the .full modifier"),
    ("rsqrt.approx.f32 %f1, %f2;", "fma, div, rcp and sqrt run; rsqrt, ex2"),
    ("div.rn.f64 %fd1, %fd2, %fd3;", "type .f64"),
])
def test_what_is_not_built_is_refused_at_its_line(line, message):
    assert message in refusal_at_line(line).message
