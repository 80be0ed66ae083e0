"""`fma` (and `mad`) of `.f32`: qwengpu/ptx/select_float_fma.py's routine, a * b + c rounded once.

Expected values are `fpu_helpers.reference_fma`: numpy's float64 product (exact), the sum with
c rounded to odd, then to float32 (PTX's canonical NaN), itself held here to the examples'
model (examples/_float32.py: Python's exact fractions rounded by hand).  The routine is some 145 instructions, so it runs on a machine of 256 instruction
slots (`-P PROG_WORDS=256`); the default machine refuses it with the way out.  Rows run on
the interpreter and the tests' ISA model (ptx_harness.run_rows); a million triples run the
loader's machine code on the vectorised model (stretch_model.py), first held equal to the
interpreter on the same rows.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from qwengpu.errors import CapacityError, PtxError
from qwengpu.isa import Op
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx
from qwengpu.ptx.program import MachineLimits

from fpu_helpers import fma_triples, reference_fma
from ptx_harness import HEADER, M32, row_kernel, run_ptx, run_rows
from stretch_model import row_stretch, run_stretch
from test_ptx_float_add import saturated
from test_ptx_float_bits import EDGE_FLOATS, flushed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from _float32 import float_of, fused_multiply_add, word_of  # noqa: E402 (the examples' model)

WIDE = {"PROG_WORDS": 256}
LIMITS = replace(MachineLimits(), program_words=256)
ADDENDS = [0x0000_0000, 0x8000_0000, 0x0000_0001, 0x807F_FFFF, 0xBF80_0000, 0x7F7F_FFFF,
           0xFF80_0000, 0x7FC0_0000]
EDGE_ROWS = [(a, b, c) for i, a in enumerate(EDGE_FLOATS) for b in EDGE_FLOATS[i % 2::2]
             for c in ADDENDS[i % 4::4]]
RANDOM = list(zip(*(list(map(int, words)) for words in fma_triples(np.random.default_rng(5),
                                                                    400))))
ROWS = EDGE_ROWS + RANDOM
MILLION = 1_000_000
FMA = "    fma.rn{modifiers}.f32 %o0, %a0, %a1, %a2;"


def fma(a: int, b: int, c: int) -> int:
    return int(reference_fma(*(np.array([v], np.uint32) for v in (a, b, c)))[0])


def expected(a: int, b: int, c: int, ftz: bool = False, sat: bool = False) -> int:
    if ftz:
        a, b, c = flushed(a), flushed(b), flushed(c)
    result = fma(a, b, c)
    if ftz:
        result = flushed(result)
    return saturated(result) if sat else result


def test_the_reference_is_the_exact_rounding():
    a, b, c = fma_triples(np.random.default_rng(11), 4000)
    want = reference_fma(a, b, c)
    for x, y, z, w in zip(a.tolist(), b.tolist(), c.tolist(), want.tolist()):
        exact = word_of(fused_multiply_add(float_of(x), float_of(y), float_of(z))) & M32
        assert exact == w, (hex(x), hex(y), hex(z), hex(w), hex(exact))


@pytest.mark.parametrize("modifiers", ["", ".ftz", ".sat"])
def test_fma_on_edges_and_random_triples(modifiers):
    rows = ROWS if not modifiers else ROWS[::4]
    ftz, sat = ".ftz" in modifiers, ".sat" in modifiers
    got = run_rows(FMA.format(modifiers=modifiers), rows, 1, machine=WIDE)
    assert got == [(expected(a, b, c, ftz, sat),) for a, b, c in rows]


def _fma_code(modifiers: str = ""):
    kernel = compile_kernel(parse_ptx(row_kernel(FMA.format(modifiers=modifiers), 3, 1),
                                      "rows.ptx"), "rows", LIMITS)
    return row_stretch(kernel.slots)


def test_the_vectorised_model_agrees_with_the_interpreter():
    code, registers, out = _fma_code()
    columns = [np.array(column, np.uint32) for column in zip(*ROWS)]
    modelled = run_stretch(code, dict(zip(registers, columns)))[out]
    assert [(int(word),) for word in modelled] == run_rows(FMA.format(modifiers=""), ROWS, 1,
                                                           machine=WIDE)


@pytest.mark.parametrize("modifiers", ["", ".ftz"])
def test_fma_on_a_million_triples(modifiers):
    """The issue's bar: 10^6 operand sets bit-exact (cancellations down to the product's
    last bits, addends at the guard and sticky bits, ties broken by tiny addends, subnormal
    and overflowing products and sums)."""
    code, registers, out = _fma_code(modifiers)
    a, b, c = fma_triples(np.random.default_rng(2026), MILLION)
    got = run_stretch(code, dict(zip(registers, (a, b, c))))[out]
    if modifiers:
        flush = lambda words: np.where(words & 0x7F80_0000 == 0, words & 0x8000_0000, words)
        want = flush(reference_fma(flush(a), flush(b), flush(c)))
    else:
        want = reference_fma(a, b, c)
    wrong = np.nonzero(got != want)[0]
    assert wrong.size == 0, [(hex(a[i]), hex(b[i]), hex(c[i]), hex(got[i]), hex(want[i]))
                             for i in wrong[:5]]
    if not modifiers:
        subnormal = (want & 0x7F80_0000 == 0) & (want & 0x7F_FFFF != 0)
        assert subnormal.sum() > MILLION // 50


def test_the_default_machine_refuses_it_with_the_way_out():
    with pytest.raises(CapacityError) as caught:
        compile_kernel(parse_ptx(row_kernel(FMA.format(modifiers=""), 3, 1), "rows.ptx"),
                       "rows")
    assert "but QwenGPU has 128" in caught.value.message
    assert "-P PROG_WORDS=256 holds it" in caught.value.message


@pytest.mark.parametrize("line,message", [
    ("fma.rz.f32 %o0, %a0, %a1, %a2;", "the .rz rounding"),
    ("mad.f32 %o0, %a0, %a1, %a2;", "without .rn"),
    ("fma.rn.f64 %y0, %y1, %y2, %y3;", ""),
])
def test_refusals(line, message):
    with pytest.raises(PtxError) as caught:
        compile_kernel(parse_ptx(row_kernel("    " + line, 3, 1), "rows.ptx"), "rows", LIMITS)
    assert message in caught.value.message


def test_mad_rn_is_fma():
    rows = ROWS[::9]
    assert run_rows("    mad.rn.f32 %o0, %a0, %a1, %a2;", rows, 1, machine=WIDE) == \
        [(fma(a, b, c),) for a, b, c in rows]


KNOWN = (HEADER + ".visible .entry k(.param .u64 p)\n{\n"
         "    .reg .f32 %f<3>;\n    .reg .b64 %rd<2>;\n"
         "    ld.param.u64 %rd1, [p];\n"
         "    fma.rn.f32 %f1, 0f3F800001, 0f3F7FFFFF, 0fBF800000;\n"
         "    st.global.f32 [%rd1], %f1;\n    ret;\n}\n")


def test_known_operands_are_fused_at_load_time():
    """(1 + u)(1 - u/2) - 1 = u/2 - u^2/2: exact only when fused (the product alone rounds
    to 1.0, a tie)."""
    folded = compile_kernel(parse_ptx(KNOWN, "k.ptx"), "k")
    assert not any(slot.instruction.op == Op.MULHI_U for slot in folded.slots)
    want = fma(0x3F80_0001, 0x3F7F_FFFF, 0xBF80_0000)
    assert want != 0 and run_ptx(KNOWN, {"p": [0]}, ["p"], block=1).words["p"] == [want]


TWO = """    fma.rn.f32 %f1, %a0, %a1, %a2;
    fma.rn.f32 %o0, %f1, %a2, %a0;"""


def test_two_fmas_share_one_body():
    """One body, reached from two places; what the kernel keeps across the calls spills to
    local memory (two words a thread), so a launch takes fewer rows."""
    body = "    .reg .f32 %f<2>;\n" + TWO
    kernel = compile_kernel(parse_ptx(row_kernel(body, 3, 1), "rows.ptx"), "rows", LIMITS)
    assert sum(slot.instruction.op == Op.MULHI_U for slot in kernel.slots) == 1
    assert len(kernel.slots) < 200
    rows = ROWS[::7]
    got = run_rows(body, rows, 1, machine=WIDE, per_launch=16)
    assert got == [(fma(fma(a, b, c), c, a),) for a, b, c in rows]


@pytest.mark.parametrize("line,known", [
    ("fma.rn.f32 %o0, 0f40400000, %a0, %a1;", (0x4040_0000, None, None)),       # 3 * x + y
    ("fma.rn.f32 %o0, %a0, %a1, 0fBF800000;", (None, None, 0xBF80_0000)),      # x * y - 1
    ("fma.rn.f32 %o0, 0f3DCCCCCD, 0f41200000, %a0;", (0x3DCC_CCCD, 0x4120_0000, None)),
])
def test_known_operands_among_unknown_ones(line, known):
    """A known operand is folded into the code (a constant's significand and exponent at
    load time); the rest runs as usual."""
    unknown = sum(value is None for value in known)
    rows = [row[:unknown] for row in ROWS[::5]]
    got = run_rows("    " + line, rows, 1, machine=WIDE)
    want = []
    for row in rows:
        values = iter(row)
        operands = [value if value is not None else next(values) for value in known]
        want.append((fma(*operands),))
    assert got == want


def test_where_the_sticky_bit_is_closest_to_a_rounding_boundary():
    """The cases docs/fpu.md ("fma") works for the sticky bit: a product of a subnormal with a
    small significand and a large normal, whose window value is the smallest one that can
    lose an addend's bits, against addends 30 to 70 binades below it, the product also
    cancelled by a near-negation; and subnormal addends against products shifted far below
    them.  200,000 triples on the vectorised model."""
    rng = np.random.default_rng(99)
    n = 100_000
    signs = lambda: (rng.integers(0, 2, n).astype(np.uint32) << 31)
    a = signs() | rng.integers(1, 1 << 8, n).astype(np.uint32)               # tiny subnormal
    b = signs() | (rng.integers(200, 255, n).astype(np.uint32) << 23) | \
        rng.integers(0, 1 << 23, n).astype(np.uint32)
    with np.errstate(all="ignore"):
        product = (a.view(np.float32).astype(np.float64) * b.view(np.float32)
                   .astype(np.float64)).astype(np.float32).view(np.uint32)
    exponent = ((product >> 23) & 0xFF).astype(np.int64) - rng.integers(30, 71, n)
    below = signs() | (np.clip(exponent, 0, 254).astype(np.uint32) << 23) | \
        rng.integers(0, 1 << 23, n).astype(np.uint32)
    c = np.where(rng.random(n) < 0.2, product ^ np.uint32(0x8000_0000), below)
    x = signs() | rng.integers(0, 1 << 23, n).astype(np.uint32)              # subnormal c
    y = signs() | (rng.integers(1, 100, n).astype(np.uint32) << 23) | \
        rng.integers(0, 1 << 23, n).astype(np.uint32)
    z = signs() | rng.integers(1, 1 << 23, n).astype(np.uint32)
    a, b, c = (np.concatenate(pair) for pair in ((a, x), (b, y), (c, z)))
    code, registers, out = _fma_code()
    got = run_stretch(code, dict(zip(registers, (a, b, c))))[out]
    want = reference_fma(a, b, c)
    wrong = np.nonzero(got != want)[0]
    assert wrong.size == 0, [(hex(a[i]), hex(b[i]), hex(c[i]), hex(got[i]), hex(want[i]))
                             for i in wrong[:5]]
