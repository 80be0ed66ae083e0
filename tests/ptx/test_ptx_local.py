"""Per-thread local memory (docs/ptx.md, "Local memory"): `.local` arrays, `ld.local` and
`st.local`, `cvta.local`/`cvta.to.local`, generic accesses through a pointer made by
`cvta.local`, `%SP`/`%SPL` as nvcc writes them, and what does not fit.

The nvcc kernels are tests/ptx/data/local.cu (checked-in PTX), each against a plain-Python
model of its CUDA source; the hand-written PTX checks the edges nvcc does not reach (an offset
past the window traps, threads do not see each other's windows, byte stores, sizes).  Every
run goes through the interpreter and the independent ISA model (ptx_harness.run_ptx), which
must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qwengpu.errors import CapacityError, PtxError
from qwengpu.isa import Op, Space, Trap
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx, parse_ptx_file
from qwengpu.ptx.program import MachineLimits
from qwengpu.runtime.launch import launch_for_program

from ptx_harness import HEADER, M32, run_ptx, s32

DATA = Path(__file__).parent / "data"
LOCAL = (DATA / "local.ptx").read_text()


def test_a_local_array_indexed_at_run_time():
    x = [5, -3, 7, 100, 0, 9, -8, 2]
    run = run_ptx(LOCAL, {"x": list(x)}, ["x", 5], block=4, kernel="local_array")
    a = [(value * i) & M32 for i, value in enumerate(x)]       # one warp: loads come first
    expected = [a[(5 + t) & 7] for t in range(4)] + [value & M32 for value in x[4:]]
    assert run.result.trap is None and run.words["x"] == expected


def test_a_histogram_in_each_threads_own_array():
    n, block = 5, 6
    data = [3, 1, 2, 3, 0, 7, 7, 4, 5, 6, -1, -2, -3, -4, -5, 8, 9, 10, 11, 12, 0, 0, 0, 0, 0,
            1, 1, 2, 2, 3]
    run = run_ptx(LOCAL, {"in": data, "out": [0] * block}, ["in", "out", n], block=block,
                  kernel="local_histogram")
    expected = []
    for t in range(block):
        bins = [0] * 4
        for k in range(n):
            bins[data[t * n + k] & 3] += k + 1
        expected.append(bins[0] + 10 * bins[1] + 100 * bins[2] + 1000 * bins[3])
    assert run.words["out"] == expected


def test_a_generic_pointer_into_local_memory():
    """`cvta.local` makes the generic address (window base + offset); the generic ld/st
    through a pointer that is either local or global reach the right word."""
    block, n = 8, 8
    data = [4, 7, 10, 13, 1, 6, 3, 8, 9, 2, 5]
    out = list(range(50, 50 + 2 * n))
    run = run_ptx(LOCAL, {"in": data, "out": list(out)}, ["in", "out", n], block=block,
                  kernel="local_generic")
    expected = list(out)
    for t in range(block):
        buf = [data[t + k] for k in range(4)]
        if data[t] & 1:
            buf[t & 3] += 100
        else:
            expected[t] += 100
        expected[t + n] = sum(value * (k + 1) for k, value in enumerate(buf))
    assert run.words["out"] == expected


def test_bytes_in_local_memory():
    data = [0x12345678, -1, 0, 0x7F80FF01, 0x5, 0xFEDCBA98 - (1 << 32), 77, 0x01010101]
    run = run_ptx(LOCAL, {"in": data, "out": [0] * 8}, ["in", "out"], block=8,
                  kernel="local_bytes")
    expected = []
    for value in data:
        b = [(s32(value) >> (3 * k)) & 0xFF for k in range(8)]
        i = value & 7
        b[i] = (b[i] + 200) & 0xFF
        s = 0
        for byte in b:
            s = s * 3 + byte
        expected.append(s & M32)
    assert run.words["out"] == expected


def test_nvcc_local_kernels_use_the_local_space_and_size_the_window():
    program = compile_kernel(parse_ptx_file(str(DATA / "local.ptx")), "local_generic")
    spaces = {slot.instruction.space for slot in program.slots
              if slot.instruction.op in (Op.LD, Op.ST)}
    assert spaces == {int(Space.GLOBAL), int(Space.LOCAL)}
    assert program.local_bytes == 16                          # __local_depot2[16]
    bytes_program = compile_kernel(parse_ptx_file(str(DATA / "local.ptx")), "local_bytes")
    assert Op.ST_U8 in {slot.instruction.op for slot in bytes_program.slots}


# ---- hand-written PTX -----------------------------------------------------------------------

def local_kernel(body: str, depot_bytes: int = 16, align: int = 4) -> str:
    return HEADER + f""".visible .entry loc(.param .u64 loc_out, .param .u32 loc_k)
{{
    .local .align {align} .b8 __local_depot0[{depot_bytes}];
    .reg .b64 %SP;
    .reg .b64 %SPL;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    mov.u64 %SPL, __local_depot0;
    ld.param.u64 %rd1, [loc_out];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u32 %r1, [loc_k];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
{body}
    ret;
}}
"""


def test_windows_are_per_thread():
    """Every thread writes its tid into the same local offset; each reads its own back."""
    body = """\
    st.local.u32 [%SPL+4], %r2;
    add.s32 %r3, %r2, 100;
    st.local.u32 [__local_depot0+8], %r3;
    ld.local.u32 %r4, [%SPL+4];
    ld.local.u32 %r5, [%SPL+8];
    mad.lo.s32 %r6, %r4, 1000, %r5;
    st.global.u32 [%rd3], %r6;"""
    run = run_ptx(local_kernel(body), {"out": [0] * 12}, ["out", 0], grid=1, block=12)
    assert run.words["out"] == [t * 1000 + t + 100 for t in range(12)]


def test_an_offset_past_the_window_traps():
    body = """\
    shl.b32 %r3, %r1, 2;
    cvt.u64.u32 %rd4, %r3;
    add.s64 %rd5, %SPL, %rd4;
    st.local.u32 [%rd5], %r2;
    st.global.u32 [%rd3], %r3;"""
    inside = run_ptx(local_kernel(body), {"out": [0] * 4}, ["out", 3], block=4)
    assert inside.result.trap is None and inside.words["out"] == [12] * 4
    past = run_ptx(local_kernel(body), {"out": [0] * 4}, ["out", 4], block=4)
    assert past.result.trap is not None and past.result.trap.code == Trap.ADDRESS_RANGE


def test_cvta_local_and_back():
    """A generic address of the depot is `local_base + offset`; cvta.to.local undoes it; a
    generic store through it lands in the thread's window."""
    body = """\
    cvta.local.u64 %SP, %SPL;
    add.u64 %rd4, %SP, 8;
    st.u32 [%rd4], %r2;
    cvta.to.local.u64 %rd5, %rd4;
    ld.local.u32 %r3, [%rd5];
    cvt.u32.u64 %r4, %rd5;
    cvta.local.u32 %r5, %r4;
    ld.u32 %r6, [%r5];
    mad.lo.s32 %r7, %r4, 100, %r3;
    add.s32 %r7, %r7, %r6;
    st.global.u32 [%rd3], %r7;"""
    run = run_ptx(local_kernel(body), {"out": [0] * 8}, ["out", 0], block=8)
    assert run.words["out"] == [800 + 2 * t for t in range(8)]


def test_the_launch_lays_a_window_out_for_every_thread_after_the_buffers():
    program = compile_kernel(parse_ptx(local_kernel("    st.local.u32 [%SPL], %r2;", 12),
                                       "loc.ptx"), "loc")
    assert program.local_bytes == 12
    launch = launch_for_program(program, 2, 3, {"out": [0] * 6}, ["out", 0])
    assert launch.windows.local_words == 3
    assert launch.windows.local_bases == ((6, 9, 12), (15, 18, 21))


def test_local_arrays_larger_than_a_threads_window_are_refused():
    ptx = local_kernel("    st.local.u32 [%SPL], %r2;", depot_bytes=68)
    with pytest.raises(CapacityError) as caught:
        compile_kernel(parse_ptx(ptx, "loc.ptx"), "loc")
    assert "needs 17 words of local memory a thread for its local arrays (__local_depot0: 68 " \
           "bytes), but QwenGPU has 16 (LOCAL_WORDS; 1 too many)" in caught.value.message
    assert caught.value.loc.line == 7                        # the .local declaration
    fits = compile_kernel(parse_ptx(ptx, "loc.ptx"), "loc", MachineLimits(local_words=17))
    assert fits.local_bytes == 68


def test_windows_that_do_not_fit_in_memory_say_by_how_much():
    program = compile_kernel(parse_ptx(local_kernel("    st.local.u32 [%SPL], %r2;", 64),
                                       "loc.ptx"), "loc")
    with pytest.raises(CapacityError, match=r"need 136 words, but the machine has 126 "
                                            r"\(MEM_WORDS\); 10 too many"):
        launch_for_program(program, 1, 8, {"out": [0] * 8}, ["out", 0])


def test_local_accesses_name_local_variables():
    ptx = local_kernel("    ld.local.u32 %r3, [loc_out];")
    with pytest.raises(PtxError, match="loc_out is not a .local variable"):
        compile_kernel(parse_ptx(ptx, "loc.ptx"), "loc")


def test_a_global_access_to_a_local_variable_says_how_to_reach_it():
    ptx = local_kernel("    ld.global.u32 %r3, [__local_depot0];")
    with pytest.raises(PtxError, match=r"__local_depot0 is in .local memory: address it with "
                                       r"ld.local/st.local, or make a generic address of it "
                                       r"with cvta.local"):
        compile_kernel(parse_ptx(ptx, "loc.ptx"), "loc")
