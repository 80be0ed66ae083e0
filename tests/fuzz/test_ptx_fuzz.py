"""Differential fuzzing of the PTX path: random kernels, the loader against a PTX reference.

Each seed gives a random valid kernel and launch (`ptx_generator.py`); the kernel is compiled
by the loader and run on the reference interpreter, and run again by `ptx_reference.py`, a
plain per-thread reading of the PTX ISA that shares no code with qwengpu.  The final buffers
must agree word for word.  A disagreement is shrunk to a small kernel, shown in the failure
with its launch JSON: save both under `tests/fuzz/regressions/` (the `.ptx` and a `.json`
launch file of the same name; a first line `// xfail: REASON` marks a bug not fixed yet), and
`test_regression` runs it from then on.  `bench/soak_ptx.py` runs the same check at scale.

The reference is checked on its own too, on hand-written kernels with known answers, so that
the two sides do not merely agree with each other.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ptx_reference
from fuzz_differential import check_case, failure_report
from ptx_generator import KERNEL, FuzzCase, generate_case
from tiers import first_by_default

FUZZ_KERNELS = 300
REGRESSIONS = Path(__file__).resolve().parent / "regressions"
HEADER = ".version 9.0\n.target sm_80\n.address_size 64\n\n"


def test_generator_is_deterministic():
    assert generate_case(7) == generate_case(7)
    assert generate_case(7).ptx != generate_case(8).ptx


@pytest.mark.parametrize("seed", first_by_default(range(FUZZ_KERNELS), FUZZ_KERNELS // 2))
def test_random_kernel(seed):
    case = generate_case(seed)
    difference = check_case(case)
    if difference is not None:
        pytest.fail(failure_report(case, difference), pytrace=False)


# regressions -------------------------------------------------------------------------------

def regression_case(ptx_path: Path) -> FuzzCase:
    launch = json.loads(ptx_path.with_suffix(".json").read_text())
    return FuzzCase(seed=-1, ptx=ptx_path.read_text(), grid=launch["grid"],
                    block=launch["block"], buffers=launch["buffers"], args=launch["args"])


def xfail_reason(ptx_path: Path) -> str | None:
    first = ptx_path.read_text().split("\n", 1)[0]
    return first.split("xfail:", 1)[1].strip() if first.startswith("// xfail:") else None


def regression_params() -> list:
    params = []
    for path in sorted(REGRESSIONS.glob("*.ptx")):
        reason = xfail_reason(path)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


@pytest.mark.parametrize("ptx_path", regression_params())
def test_regression(ptx_path):
    assert check_case(regression_case(ptx_path)) is None


def test_regression_files_are_read_back(tmp_path):
    case = generate_case(3)
    (tmp_path / "seed_3.ptx").write_text("// xfail: an example reason\n" + case.ptx)
    (tmp_path / "seed_3.json").write_text(json.dumps(case.launch_json("seed_3.ptx")))
    again = regression_case(tmp_path / "seed_3.ptx")
    assert xfail_reason(tmp_path / "seed_3.ptx") == "an example reason"
    assert (again.grid, again.block, again.buffers, again.args) == \
        (case.grid, case.block, case.buffers, case.args)
    assert check_case(again) is None


# the reference on its own ------------------------------------------------------------------

def kernel(body: str, registers: str = "") -> str:
    return HEADER + f""".visible .entry {KERNEL}(.param .u64 in_ptr, .param .u64 out_ptr,
    .param .u32 n)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;{registers}
    ld.param.u64 %rd0, [in_ptr];
    ld.param.u64 %rd1, [out_ptr];
    cvta.to.global.u64 %rd0, %rd0;
    cvta.to.global.u64 %rd1, %rd1;
{body}
    ret;
}}
"""


def run_both(ptx: str, grid: int, block: int, buffers: dict, args: list) -> dict:
    """The reference's buffers, after checking that the loader gives the same."""
    case = FuzzCase(-1, ptx, grid, block, buffers, args)
    assert check_case(case) is None
    return ptx_reference.run_ptx(ptx, grid, block, buffers, args)


GUARDED_SCALE = kernel("""
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r0, %r1, %r2, %r3;
    ld.param.u32 %r4, [n];
    setp.ge.s32 %p0, %r0, %r4;
    @%p0 bra $L__end;
    mul.wide.s32 %rd2, %r0, 4;
    add.s64 %rd3, %rd0, %rd2;
    ld.global.u32 %r5, [%rd3];
    mad.lo.s32 %r6, %r5, 3, %r3;
    and.b32 %r7, %r3, 1;
    setp.eq.u32 %p1, %r7, 1;
    @%p1 bra $L__odd;
    add.s32 %r6, %r6, 1000;
    bra $L__store;
$L__odd:
    sub.s32 %r6, 0, %r6;
$L__store:
    add.s64 %rd4, %rd1, %rd2;
    st.global.u32 [%rd4], %r6;
$L__end:""")


def test_reference_grid_with_bound_and_divergence():
    # out[g] = 3 * in[g] + tid, +1000 for even tid, negated for odd tid; g >= 5 does nothing
    buffers = {"in": [10, 20, 30, 40, 50, 60, -7, 8], "out": [-1] * 8}
    out = run_both(GUARDED_SCALE, 2, 3, buffers, ["in", "out", 5])["out"]
    expected = [3 * 10 + 0 + 1000, -(3 * 20 + 1), 3 * 30 + 2 + 1000,
                3 * 40 + 0 + 1000, -(3 * 50 + 1), -1, -1, -1]
    assert out == [value & 0xFFFF_FFFF for value in expected]


EDGES = kernel("""
    shl.b32 %r0, 1, 33;
    st.global.u32 [%rd1], %r0;
    mov.u32 %r1, 0x80000000;
    shr.s32 %r0, %r1, 40;
    st.global.u32 [%rd1+4], %r0;
    shr.u32 %r0, %r1, 31;
    st.global.u32 [%rd1+8], %r0;
    mul.hi.s32 %r0, -2, 3;
    st.global.u32 [%rd1+12], %r0;
    mov.u32 %r2, 0xFFFFFFFE;
    mul.hi.u32 %r0, %r2, 3;
    st.global.u32 [%rd1+16], %r0;
    setp.lt.s32 %p0, %r2, 1;
    setp.lt.u32 %p1, %r2, 1;
    selp.b32 %r3, 7, 9, %p0;
    selp.b32 %r4, 7, 9, %p1;
    st.global.u32 [%rd1+20], %r3;
    st.global.u32 [%rd1+24], %r4;
    min.s32 %r0, %r2, 3;
    st.global.u32 [%rd1+28], %r0;
    min.u32 %r0, %r2, 3;
    st.global.u32 [%rd1+32], %r0;
    mad.lo.s32 %r0, 65536, 65536, 5;
    st.global.u32 [%rd1+36], %r0;
    not.b32 %r0, 0;
    st.global.u32 [%rd1+40], %r0;
    mov.u32 %r5, 0;
    mov.u32 %r6, 1;
$L__loop:
    add.s32 %r5, %r5, %r6;
    add.s32 %r6, %r6, 1;
    setp.ls.u32 %p2, %r6, 4;
    @%p2 bra $L__loop;
    st.global.u32 [%rd1+44], %r5;
    add.s64 %rd2, %rd0, 8;
    mul.wide.s32 %rd3, -1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r7, [%rd4];
    st.global.u32 [%rd1+48], %r7;
    setp.hi.u32 %p3, %r2, %r1;
    @!%p3 st.global.u32 [%rd1+52], %r1;
    @%p3 st.global.u32 [%rd1+52], %r2;
    or.pred %p0, %p0, %p1;
    and.pred %p1, %p0, %p1;
    selp.b32 %r3, 7, 9, %p0;
    selp.b32 %r4, 7, 9, %p1;
    st.global.u32 [%rd1+56], %r3;
    st.global.u32 [%rd1+60], %r4;""")


def test_reference_edge_semantics():
    buffers = {"in": [11, 22, 33], "out": [0] * 16}
    out = run_both(EDGES, 1, 1, buffers, ["in", "out", 0])["out"]
    assert out == [0, 0xFFFF_FFFF, 1, 0xFFFF_FFFF, 2, 7, 9, 0xFFFF_FFFE, 3, 5,
                   0xFFFF_FFFF, 1 + 2 + 3 + 4, 22, 0xFFFF_FFFE, 7, 9]   # or/and.pred: 7, 9


@pytest.mark.parametrize("body, message", [
    ("$L__top:\n    bra $L__top;", "more than 50 steps"),
    ("    add.s32 %r0, %r1, 1;", "%r1 is read before it is written"),
    ("    st.global.u32 [%rd1], %r9;", "%r9 is read before it is written"),
    ("    mov.u32 %r0, 1;\n    st.global.u32 [%rd1+400], %r0;", "not a word of memory"),
    ("    bra $L__nowhere;", "unknown label"),
])
def test_reference_rejects(body, message):
    with pytest.raises(ptx_reference.PtxReferenceError, match=message):
        ptx_reference.run_ptx(kernel(body), 1, 1, {"in": [1], "out": [0]}, ["in", "out", 0],
                              step_limit=50)


# the reference on what the generator adds: local arrays, byte ops, 64-bit division -------

LOCAL_KERNEL = kernel("""
    mov.u64 %SPL, __local_depot0;
    mov.u32 %r0, %tid.x;
    add.s32 %r1, %r0, 10;
    st.local.u32 [%SPL], %r1;
    st.local.u32 [%SPL+4], %r0;
    cvta.local.u64 %rd2, %SPL;
    ld.u32 %r2, [%rd2];
    st.u32 [%rd2+4], %r2;
    and.b32 %r3, %r0, 1;
    mul.wide.u32 %rd3, %r3, 4;
    add.s64 %rd4, %SPL, %rd3;
    ld.local.u32 %r4, [%rd4];
    cvta.to.local.u64 %rd5, %rd2;
    ld.local.u32 %r5, [%rd5+4];
    mul.wide.u32 %rd6, %r0, 8;
    add.s64 %rd7, %rd1, %rd6;
    st.global.u32 [%rd7], %r4;
    st.global.u32 [%rd7+4], %r5;""", registers="\n    .local .align 4 .b8 __local_depot0[8];\n    .reg .b64 %SPL;")


def test_reference_local_arrays_are_per_thread_and_reached_through_generic_addresses():
    out = run_both(LOCAL_KERNEL, 1, 4, {"in": [0], "out": [0] * 8}, ["in", "out", 0])["out"]
    assert out == [value for t in range(4) for value in (t + 10, t + 10)]


BYTE_OPS = kernel("""
    ld.global.u32 %r0, [%rd0];
    ld.global.u32 %r1, [%rd0+4];
    ld.global.u32 %r2, [%rd0+8];
    prmt.b32 %r3, %r0, %r1, %r2;
    st.global.u32 [%rd1], %r3;
    prmt.b32.f4e %r3, %r0, %r1, 1;
    st.global.u32 [%rd1+4], %r3;
    prmt.b32.ecr %r3, %r0, %r1, %r2;
    st.global.u32 [%rd1+8], %r3;
    dp4a.s32.u32 %r3, %r0, %r1, 5;
    st.global.u32 [%rd1+12], %r3;
    dp2a.hi.u32.s32 %r3, %r0, %r1, 0;
    st.global.u32 [%rd1+16], %r3;""")


def test_reference_byte_ops():
    a, b, c = 0x80FF7F01, 0x11223344, 0x0000_A3F1
    out = run_both(BYTE_OPS, 1, 1, {"in": [a, b, c], "out": [0] * 5}, ["in", "out", 0])["out"]
    # c = 0xA3F1: byte 1 (0x7F), byte 7 sign-replicated (0x11: 0), byte 3 (0x80), byte 2
    # sign-replicated (0xFF: 0xFF), from the lowest result byte up
    assert out[0] == 0xFF_80_00_7F
    assert out[1] == 0x44_80_FF_7F                          # f4e, 1: bytes 4 3 2 1
    assert out[2] == 0x7F_7F_7F_01                          # ecr, c & 3 = 1: bytes 1 1 1 0
    assert out[3] == (5 + 1 * 0x44 + 127 * 0x33 - 1 * 0x22 - 128 * 0x11) & 0xFFFF_FFFF  # a signed
    assert out[4] == (0x7F01 * 0x22 + 0x80FF * 0x11) & 0xFFFF_FFFF    # halves of a, bytes 2, 3


def divide_kernel(op: str) -> str:
    return kernel(f"""
    ld.global.u32 %r0, [%rd0];
    ld.global.u32 %r1, [%rd0+4];
    ld.global.u32 %r2, [%rd0+8];
    mul.wide.u32 %rd2, %r1, 1;
    shl.b64 %rd2, %rd2, 32;
    mul.wide.u32 %rd6, %r0, 1;
    or.b64 %rd2, %rd2, %rd6;
    mul.wide.u32 %rd3, %r2, 7;
    {op} %rd4, %rd2, %rd3;
    st.global.u32 [%rd1], %rd4;
    shr.u64 %rd6, %rd4, 32;
    st.global.u32 [%rd1+4], %rd6;""")


@pytest.mark.parametrize("op", ["div.s64", "rem.s64", "div.u64", "rem.u64"])
def test_reference_64_bit_division(op):
    a, b, c = 0x80FF7F01, 0x91223344, 0x0000_A3F1
    out = run_both(divide_kernel(op), 1, 1, {"in": [a, b, c], "out": [0] * 2},
                   ["in", "out", 0])["out"]
    x, y = b << 32 | a, 7 * c
    if op.endswith("s64"):
        x -= 1 << 64
        quotient = -(-x // y)                               # x < 0 < y: towards zero
        value = quotient if op.startswith("div") else x - quotient * y
    else:
        value = x // y if op.startswith("div") else x % y
    assert (out[0] | out[1] << 32) == value & (1 << 64) - 1


def test_reference_refuses_undefined_local_reads_and_division_by_zero():
    unread = kernel("    mov.u64 %SPL, __local_depot0;\n    ld.local.u32 %r0, [%SPL+4];",
                    registers="\n    .local .align 4 .b8 __local_depot0[8];\n    .reg .b64 %SPL;")
    with pytest.raises(ptx_reference.PtxReferenceError, match="read before it is written"):
        ptx_reference.run_ptx(unread, 1, 1, {"in": [1], "out": [0]}, ["in", "out", 0])
    divide = kernel("    mov.u32 %r0, 0;\n    div.u32 %r1, 7, %r0;")
    with pytest.raises(ptx_reference.PtxReferenceError, match="division by zero"):
        ptx_reference.run_ptx(divide, 1, 1, {"in": [1], "out": [0]}, ["in", "out", 0])


def test_the_generator_makes_kernels_that_spill_and_use_local_memory():
    """The differential fuzz covers spilling: some kernels need more registers than the
    machine has, some use a local array, some prmt/dp4a."""
    from qwengpu.ptx.compile import compile_kernel
    from qwengpu.ptx.parser import parse_ptx

    cases = [generate_case(seed) for seed in range(40)]
    programs = [compile_kernel(parse_ptx(case.ptx, "fuzz.ptx"), KERNEL) for case in cases]
    assert sum(any(slot.note.startswith("spill") for slot in program.slots)
               for program in programs) >= 4
    assert sum(".local" in case.ptx for case in cases) >= 6
    assert sum("prmt" in case.ptx or "dp4a" in case.ptx or "dp2a" in case.ptx
               for case in cases) >= 6
