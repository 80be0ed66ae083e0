"""Differential fuzzing of the PTX path with floats: random kernels that compute on binary32.

`generate_case(seed, floats=True)` (ptx_generator.py) mixes into the random kernels of
test_ptx_fuzz.py the `.f32` instructions the loader runs: add and sub (`.rn .ftz .sat`),
setp with every comparison (ordered, unordered, num, nan), min, max, neg, abs, selp, the
multiply by ±0.5, 2, 4, 8 that needs no routine, the conversions between binary32 and 32-bit
integers in every rounding (and to an integral binary32), and in three kernels of five one
routine (`mul`, `div`, `sqrt` or `rcp.rn.f32`) used once or twice, inside branches and loops
too, where its shared body returns by a dispatch; `generate_case(seed, fma=True)` gives
every kernel the fma routine instead, run on a machine of 256 instruction slots.  Its words are float edge values, numbers
of moderate size and random bits.  The loader's result on the reference interpreter must
equal, word for word, `ptx_reference.py`'s, whose float meaning (ptx_float_reference.py)
is numpy's binary32 and exact integer work, read from the PTX ISA, sharing no code with
qwengpu.  A kernel the loader refuses for want of room (its routine and float statements
over the 128 instruction slots, or a routine's registers spilled past the 126 words) is
skipped, with the loader's message; the generator keeps those rare (3% of 2,000 seeds).
"""

from __future__ import annotations

import pytest

import ptx_reference
from fuzz_differential import LoaderRefused, check_case, does_not_fit, failure_report
from ptx_generator import FuzzCase, generate_case
from test_ptx_fuzz import kernel, run_both
from tiers import EXTRA, first_by_default

FLOAT_FUZZ_KERNELS = 200
FMA_FUZZ_KERNELS = 60
MOST_REFUSED = 0.05


def _refused_for_room(case: FuzzCase) -> bool:
    try:
        check_case(case)
    except LoaderRefused as refusal:
        return does_not_fit(refusal)
    return False


def test_the_cases_without_floats_are_those_of_before():
    """The float kernels come from `floats=True` alone: the seeds of test_ptx_fuzz.py (and the
    record counts pinned on them inside the model) are the same."""
    assert generate_case(11) == generate_case(11, floats=False)
    assert generate_case(11, floats=True) != generate_case(11)
    assert ".f32" not in "".join(generate_case(seed).ptx for seed in range(40))


def _check_or_skip(case: FuzzCase):
    """The case agrees on both sides, or is skipped as too big for its machine."""
    try:
        difference = check_case(case)
    except LoaderRefused as refusal:
        if does_not_fit(refusal):
            pytest.skip(f"does not fit the machine: {refusal}")
        raise
    if difference is not None:
        pytest.fail(failure_report(case, difference), pytrace=False)


@pytest.mark.parametrize("seed", first_by_default(range(FLOAT_FUZZ_KERNELS),
                                                   FLOAT_FUZZ_KERNELS // 2))
def test_random_float_kernel(seed):
    _check_or_skip(generate_case(seed, floats=True))


@pytest.mark.parametrize("seed", first_by_default(range(FMA_FUZZ_KERNELS), 20))
def test_random_fma_kernel(seed):
    """Every kernel has the fma routine (used once or twice, in branches and loops), on the
    machine of 256 instruction slots it needs."""
    case = generate_case(seed, fma=True)
    assert case.machine == (("PROG_WORDS", 256),)
    _check_or_skip(case)


@EXTRA
def test_the_fma_kernels_mostly_fit_and_use_it():
    """Most use the fma (a short body may end before its turn), some twice (one shared body)."""
    cases = [generate_case(seed, fma=True) for seed in range(FMA_FUZZ_KERNELS)]
    assert sum(_refused_for_room(case) for case in cases) <= MOST_REFUSED * len(cases)
    assert sum("fma.rn" in case.ptx for case in cases) >= 2 * len(cases) // 3
    assert sum(case.ptx.count("fma.rn") > 1 for case in cases) >= len(cases) // 6


def test_the_float_kernels_fit_and_use_every_kind():
    """Few kernels are refused for slots, and the body uses every float form (so the test
    above does not pass by leaving them out)."""
    cases = [generate_case(seed, floats=True) for seed in range(FLOAT_FUZZ_KERNELS)]
    refused = sum(_refused_for_room(case) for case in cases)
    assert refused <= MOST_REFUSED * len(cases)
    text = "".join(case.ptx for case in cases)
    for form in ("add.", "sub.", ".sat.f32", ".ftz.f32", "setp.equ.", "setp.nan.", "min.",
                 "max.", "neg.", "abs.", "selp.f32", "mul.rn.f32", "div.rn", "sqrt.rn",
                 "rcp.rn", "cvt.rn.f32.s32", "cvt.rm.f32.", "cvt.rp.f32.", "cvt.rz.f32.",
                 "cvt.rni.s32.f32",
                 "cvt.rzi.u32.f32", "cvt.rmi.f32.f32", "0f3F000000"):
        assert form in text, form


# the float reference on its own --------------------------------------------------------------

FLOATS = kernel("""
    add.f32 %r0, 0f3F800000, 0f33800000;
    st.global.u32 [%rd1], %r0;
    add.f32 %r0, 0f3F800001, 0f33800000;
    st.global.u32 [%rd1+4], %r0;
    sub.sat.f32 %r0, 0f00000000, 0f3F800000;
    st.global.u32 [%rd1+8], %r0;
    mul.rn.ftz.f32 %r0, 0f00400000, 0f40000000;
    st.global.u32 [%rd1+12], %r0;
    div.rn.f32 %r0, 0f3F800000, 0f40400000;
    st.global.u32 [%rd1+16], %r0;
    sqrt.rn.f32 %r0, 0fBF800000;
    st.global.u32 [%rd1+20], %r0;
    min.f32 %r0, 0f80000000, 0f00000000;
    st.global.u32 [%rd1+24], %r0;
    max.f32 %r0, 0f7FC00000, 0fC0000000;
    st.global.u32 [%rd1+28], %r0;
    setp.equ.f32 %p0, 0f7FC00000, 0f00000000;
    setp.eq.f32 %p1, 0f80000000, 0f00000000;
    selp.b32 %r1, 1, 0, %p0;
    selp.b32 %r2, 2, 0, %p1;
    add.s32 %r1, %r1, %r2;
    st.global.u32 [%rd1+32], %r1;
    cvt.rni.s32.f32 %r0, 0f40200000;
    st.global.u32 [%rd1+36], %r0;
    cvt.rmi.f32.f32 %r0, 0fBE99999A;
    st.global.u32 [%rd1+40], %r0;
    cvt.rzi.f32.f32 %r0, 0fBE99999A;
    st.global.u32 [%rd1+44], %r0;
    mov.u32 %r3, 16777217;
    cvt.rn.f32.s32 %r0, %r3;
    st.global.u32 [%rd1+48], %r0;
    cvt.rp.f32.s32 %r0, %r3;
    st.global.u32 [%rd1+52], %r0;
    cvt.rzi.u32.f32 %r0, 0fC0700000;
    st.global.u32 [%rd1+56], %r0;
    cvt.rzi.s32.f32 %r0, 0f4F800000;
    st.global.u32 [%rd1+60], %r0;""", "\n    .reg .b32 %f<2>;")


def test_the_float_reference_on_known_answers():
    """Facts of binary32 and the PTX ISA, each checked against the loader too: 1 + 2^-24 is a
    tie that stays at 1.0 (even) but goes up from 1 + 2^-23; `.sat` makes -1 +0.0; `.ftz`
    flushes a subnormal operand; 1/3 rounds to 0x3EAAAAAB; sqrt(-1) and every NaN result is
    the canonical NaN; min(-0, +0) = -0; max(NaN, -2) = -2; `equ` is true with a NaN, -0 ==
    +0; 2.5 rounds to 2 (even); floor(-0.3) = -1.0 and trunc(-0.3) = -0.0; 2^24 + 1 rounds to
    2^24 to nearest and to 2^24 + 2 upward; (unsigned)-3.75 is 0 and (int)2^32 clamps."""
    out = run_both(FLOATS, 1, 1, {"in": [0], "out": [0] * 16}, ["in", "out", 1])["out"]
    assert out == [0x3F80_0000, 0x3F80_0002, 0x0000_0000, 0x0000_0000, 0x3EAA_AAAB,
                   0x7FFF_FFFF, 0x8000_0000, 0xC000_0000, 3, 2, 0xBF80_0000, 0x8000_0000,
                   0x4B80_0000, 0x4B80_0001, 0, 0x7FFF_FFFF]


def test_the_float_reference_refuses_what_it_does_not_model():
    text = kernel("    ex2.approx.f32 %r0, 0f3F800000;\n"
                  "    st.global.u32 [%rd1], %r0;")
    with pytest.raises(ptx_reference.PtxReferenceError, match="ex2"):
        ptx_reference.run_ptx(text, 1, 1, {"in": [0], "out": [0]}, ["in", "out", 1])
