"""Loads, stores, parameters and addresses: sub-word loads at every byte offset, 64-bit and
vector accesses, address forms, faults, and parameter words (scalars, pointers, structs)."""

from __future__ import annotations

from ptx_harness import HEADER, M32, run_ptx, sext

REGISTERS = """\
    .reg .b32 %x<12>;
    .reg .b16 %h<4>;
    .reg .b64 %rd<12>;
    .reg .pred %p<3>;
    .reg .b32 %t;
"""


def kernel(body: str, params: str = ".param .u64 k_in, .param .u64 k_out") -> str:
    return HEADER + f""".visible .entry k({params})
{{
{REGISTERS}    ld.param.u64 %rd0, [k_in];
    ld.param.u64 %rd1, [k_out];
    mov.u32 %t, %tid.x;
{body}
    ret;
}}
"""


BYTES = [0x80, 0x7F, 0x01, 0xFF, 0x34, 0x12, 0xFE, 0x80]
IN_WORDS = [int.from_bytes(bytes(BYTES[0:4]), "little"), int.from_bytes(bytes(BYTES[4:8]),
                                                                          "little")]


def test_byte_loads_at_every_offset():
    body = """\
    cvt.u64.u32 %rd2, %t;
    add.s64 %rd3, %rd0, %rd2;
    ld.global.u8 %x0, [%rd3];
    ld.global.s8 %x1, [%rd3];
    ld.global.u8 %h0, [%rd3];
    cvt.u32.u16 %x2, %h0;
    ld.global.s8 %h1, [%rd3];
    cvt.u32.u16 %x3, %h1;
    mul.wide.u32 %rd4, %t, 16;
    add.s64 %rd5, %rd1, %rd4;
    st.global.v4.u32 [%rd5], {%x0, %x1, %x2, %x3};"""
    run = run_ptx(kernel(body), {"in": IN_WORDS, "out": [0] * 32}, ["in", "out"], block=8)
    out = run.words["out"]
    for t, byte in enumerate(BYTES):
        assert out[4 * t:4 * t + 4] == [byte, sext(byte, 8) & M32, byte, sext(byte, 8) & 0xFFFF]


def test_halfword_loads_and_a_misaligned_one():
    body = """\
    mul.wide.u32 %rd2, %t, 2;
    add.s64 %rd3, %rd0, %rd2;
    ld.global.u16 %x0, [%rd3];
    ld.global.s16 %x1, [%rd3];
    mul.wide.u32 %rd4, %t, 8;
    add.s64 %rd5, %rd1, %rd4;
    st.global.v2.u32 [%rd5], {%x0, %x1};"""
    run = run_ptx(kernel(body), {"in": IN_WORDS, "out": [0] * 8}, ["in", "out"])
    halves = [IN_WORDS[0] & 0xFFFF, IN_WORDS[0] >> 16, IN_WORDS[1] & 0xFFFF, IN_WORDS[1] >> 16]
    assert run.words["out"] == [w for h in halves for w in (h, sext(h, 16) & M32)]
    odd = "    ld.global.u16 %x0, [%rd0+1];\n    st.global.u32 [%rd1], %x0;"
    trapped = run_ptx(kernel(odd), {"in": IN_WORDS, "out": [0]}, ["in", "out"], block=1)
    assert trapped.result.trap.kind == "misaligned address"
    assert "byte address 1 is not a multiple of 2 (a 2-byte access)" in trapped.result.trap.message


def test_64_bit_and_vector_accesses_and_address_forms():
    body = """\
    ld.global.u64 %rd2, [%rd0];
    st.global.u64 [%rd1+8], %rd2;
    ld.global.v2.u32 {%x0, _}, [%rd0+8];
    ld.global.v4.u32 {%x1, %x2, %x3, %x4}, [%rd0];
    add.s64 %rd3, %rd1, 16;
    st.global.v4.u32 [%rd3+-16], {%x4, %x3, %x2, %x1};
    st.global.u32 [%rd1+16], %x0;
    ld.global.u32 %x5, [4];
    st.global.u32 [%rd1+20], %x5;
    ld.global.s32 %rd4, [%rd0+12];
    st.global.u64 [%rd1+24], %rd4;"""
    source = [11, 22, 33, 0xFFFF_FFF0]
    run = run_ptx(kernel(body), {"in": source, "out": [0] * 8}, ["in", "out"], block=1)
    assert run.words["out"] == [0xFFFF_FFF0, 33, 22, 11, 33, 22, 0xFFFF_FFF0, M32]


def test_loading_into_the_address_register_follows_the_pointer():
    body = """\
    ld.global.u64 %rd2, [%rd0];
    ld.global.u64 %rd2, [%rd2];
    ld.global.u32 %x0, [%rd2];
    st.global.u32 [%rd1], %x0;"""
    # in[0..1] = pointer to in[2]; in[2..3] = pointer to in[4]; in[4] = 99
    run = run_ptx(kernel(body), {"in": [8, 0, 16, 0, 99], "out": [0]}, ["in", "out"], block=1)
    assert run.words["out"] == [99]


def test_a_guarded_load_does_not_fault_in_lanes_that_skip_it():
    body = """\
    setp.lt.u32 %p1, %t, 1;
    mul.wide.u32 %rd2, %t, 1000;
    add.s64 %rd3, %rd0, %rd2;
    mov.u32 %x0, -1;
    @%p1 ld.global.u32 %x0, [%rd3];
    mul.wide.u32 %rd4, %t, 4;
    add.s64 %rd5, %rd1, %rd4;
    st.global.u32 [%rd5], %x0;"""
    run = run_ptx(kernel(body), {"in": [7], "out": [0] * 4}, ["in", "out"])
    assert run.result.trap is None
    assert run.words["out"] == [7, M32, M32, M32]


def test_an_out_of_range_store_traps_and_writes_nothing():
    body = """\
    mul.wide.u32 %rd2, %t, 1000;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %t;"""
    run = run_ptx(kernel(body), {"in": [0], "out": [5]}, ["in", "out"])
    trap = run.result.trap
    assert trap.kind == "address out of range" and trap.lane == 1 and trap.warp == 0
    assert "byte address 1004 is word 251, past the 126 words of memory" in trap.message
    assert "warp 0, lane 1 (block 0, thread 1)" in trap.message
    assert run.words["out"] == [5]
    assert trap.ptx_text == "st.global.u32 [%rd3], %t;"


def test_parameters_scalars_pointers_structs_and_64_bit_integers():
    params = (".param .u64 k_in, .param .u64 k_out, .param .s32 k_s, "
              ".param .align 4 .b8 k_pair[8], .param .u64 k_wide")
    body = """\
    ld.param.s32 %rd2, [k_s];
    ld.param.u32 %x0, [k_pair+4];
    ld.param.u32 %x1, [k_pair];
    ld.param.u64 %rd3, [k_wide];
    ld.param.u8 %x2, [k_pair+1];
    st.global.u64 [%rd1], %rd2;
    st.global.u32 [%rd1+8], %x0;
    st.global.u32 [%rd1+12], %x1;
    st.global.u64 [%rd1+16], %rd3;
    st.global.u32 [%rd1+24], %x2;
    cvt.u32.u64 %x3, %rd0;
    st.global.u32 [%rd1+28], %x3;"""
    run = run_ptx(kernel(body, params), {"in": [1, 2, 3], "out": [0] * 8},
                  ["in", "out", -3, [0x1234, -1], -2], block=1)
    assert run.words["out"] == [M32 - 2, M32, M32, 0x1234, M32 - 1, M32, 0x12, 0]
    # `out` at byte 16, not 12: a kernel with 8-byte accesses has its buffers 8-byte aligned
    assert run.result.launch.params == [0, 16, M32 - 2, 0x1234, M32, M32 - 1, M32, 0]


def test_branch_to_the_next_instruction_is_dropped_and_loops_run():
    body = """\
    mov.u32 %x0, 0;
    mov.u32 %x1, 0;
$L_loop:
    add.s32 %x0, %x0, %x1;
    add.s32 %x1, %x1, 1;
    setp.le.u32 %p1, %x1, %t;
    @%p1 bra.uni $L_loop;
    bra.uni $L_next;
$L_next:
    mul.wide.u32 %rd2, %t, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %x0;"""
    ptx = kernel(body)
    run = run_ptx(ptx, {"in": [0], "out": [0] * 8}, ["in", "out"], block=8)
    assert run.words["out"] == [t * (t + 1) // 2 for t in range(8)]
    ops = [str(ins) for ins in run.result.launch.instructions]
    assert sum(text.startswith(("bra", "@")) for text in ops) == 1
