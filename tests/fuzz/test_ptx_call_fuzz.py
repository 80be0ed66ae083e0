"""Differential fuzzing of calls and launch shapes: the loader inlines, the reference calls.

Each seed gives a random kernel that calls one or two device functions on a grid and block
of 1 to 3 dimensions (`ptx_call_generator.py`); the loader compiles it for its shape (calls
inlined, 3-D indices computed from the machine's flat ones) and the reference interpreter
runs it, and `ptx_reference.py` runs it with a call stack and CUDA's thread numbering.  The
buffers must agree word for word; a failure is shrunk and reported as in test_ptx_fuzz.py.
The reference's calls and shapes are checked on their own too, on a kernel with a known
answer.
"""

from __future__ import annotations

import pytest

import ptx_reference
from fuzz_differential import check_case, failure_report
from ptx_call_generator import generate_call_case
from ptx_generator import FuzzCase
from tiers import first_by_default

CALL_KERNELS = 120
HEADER = ".version 9.0\n.target sm_80\n.address_size 64\n\n"


def test_the_generator_is_deterministic_and_varied():
    assert generate_call_case(5) == generate_call_case(5)
    cases = [generate_call_case(seed) for seed in range(40)]
    assert any(isinstance(case.block, list) and len(case.block) == 3 for case in cases)
    assert any(isinstance(case.grid, list) for case in cases)
    assert any(".func (.param .b32 func_retval0) outer" in case.ptx for case in cases)
    assert all("call.uni" in case.ptx for case in cases)


@pytest.mark.parametrize("seed", first_by_default(range(CALL_KERNELS), CALL_KERNELS // 2))
def test_random_kernel_with_calls(seed):
    case = generate_call_case(seed)
    difference = check_case(case)
    if difference is not None:
        pytest.fail(failure_report(case, difference), pytrace=False)


KNOWN = HEADER + """.func (.param .b32 func_retval0) scale(.param .b32 scale_param_0, .param .b32 scale_param_1)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    ld.param.u32 %r1, [scale_param_0];
    ld.param.u32 %r2, [scale_param_1];
    setp.eq.s32 %p1, %r2, 0;
    st.param.b32 [func_retval0], %r1;
    @%p1 ret;
    mul.lo.s32 %r3, %r1, %r2;
    st.param.b32 [func_retval0], %r3;
    ret;
}

.visible .entry fuzz(.param .u64 out_ptr)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd0, [out_ptr];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %tid.y;
    mov.u32 %r3, %ctaid.z;
    mov.u32 %r4, %ntid.x;
    mad.lo.s32 %r5, %r2, %r4, %r1;
    mov.u32 %r6, %ntid.y;
    mul.lo.s32 %r6, %r6, %r4;
    mad.lo.s32 %r5, %r3, %r6, %r5;
    {
    .param .b32 a0;
    .param .b32 a1;
    .param .b32 r0;
    st.param.b32 [a0], %r5;
    st.param.b32 [a1], %r2;
    call.uni (r0), scale, (a0, a1);
    ld.param.b32 %r7, [r0];
    }
    mul.wide.u32 %rd1, %r5, 4;
    add.s64 %rd2, %rd0, %rd1;
    st.global.u32 [%rd2], %r7;
    ret;
}
"""


def test_the_reference_calls_and_numbers_threads_as_cuda_does():
    """Block (2, 3), grid (1, 1, 2): thread (x, y) of block z is number i = 6z + 2y + x and
    stores scale(i, y): i where y is 0 (the early return), i * y otherwise."""
    out = ptx_reference.run_ptx(KNOWN, [1, 1, 2], [2, 3], {"out": [0] * 12}, ["out"])["out"]
    expected = []
    for z in range(2):
        for y in range(3):
            for x in range(2):
                i = 6 * z + 2 * y + x
                expected.append(i if y == 0 else i * y)
    assert out == expected
    assert check_case(FuzzCase(-1, KNOWN, [1, 1, 2], [2, 3], {"out": [0] * 12}, ["out"])) \
        is None                                    # and the loader agrees


def test_the_reference_refuses_a_call_of_no_function():
    text = KNOWN.replace("call.uni (r0), scale,", "call.uni (r0), missing,")
    with pytest.raises(ptx_reference.PtxReferenceError, match="no function missing"):
        ptx_reference.run_ptx(text, 1, 1, {"out": [0]}, ["out"])
