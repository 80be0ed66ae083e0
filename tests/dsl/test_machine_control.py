"""QwenGPU v1 control flow: warps, blocks, special registers, divergence and reconvergence.

Expected results come from per-thread Python models of what each program computes; the
expected scheduling order is written out by hand from docs/isa.md (round-robin, min-PC).
"""

from __future__ import annotations

from pathlib import Path

from machine_harness import launch, mem_line, s32, signed_words

PROGRAMS = Path(__file__).with_name("programs")
EXAMPLE_PROGRAM = Path(__file__).parents[2] / "examples" / "asm" / "divergent_loop.s"


def test_warps_interleave_round_robin_and_skip_finished_warps():
    result = launch("""
.block 8
    s2r r0, tid
    setp.ge p0, r0, 4
    @p0 exit            ; warp 1 (threads 4..7) finishes here
    nop
    exit
""")
    assert [r["warp"] for r in result.records] == [0, 1, 0, 1, 0, 1, 0, 0]
    assert [r["pc"] for r in result.records] == [0, 0, 1, 1, 2, 2, 3, 4]
    assert [r["exited"] for r in result.records] == [0, 0, 0, 0, 0, 0b1111, 0, 0b1111]
    assert [r["exec"] for r in result.records][4:6] == [0, 0b1111]
    nop = result.records[6]
    assert (nop["rwen"], nop["pwen"], nop["mwen"], nop["taken"]) == (0, 0, 0, 0)


def test_round_robin_over_three_warps():
    result = launch(".block 12\n    nop\n    nop\n    exit\n")
    assert [r["warp"] for r in result.records] == [0, 1, 2] * 3
    assert [r["pc"] for r in result.records] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_special_registers_over_blocks_with_a_partial_warp():
    # 2 blocks of 6 threads: 2 warps per block, the second with lanes 2 and 3 not live.
    result = launch("""
.grid 2
.block 6
    s2r r0, ctaid
    s2r r1, ntid
    s2r r2, tid
    mad r3, r0, r1, r2      ; global thread index
    mul r3, r3, 24          ; 6 words per thread
    st [r3+0], r2
    st [r3+4], r1
    s2r r4, ctaid
    st [r3+8], r4
    s2r r4, nctaid
    st [r3+12], r4
    s2r r4, laneid
    st [r3+16], r4
    s2r r4, warpid
    st [r3+20], r4
    exit
""")
    assert not result.trapped
    for block in range(2):
        for tid in range(6):
            base = (block * 6 + tid) * 6
            assert signed_words(result, base, 6) == [tid, 6, block, 2, tid % 4, tid // 4]
    first_warp_of_block = [r for r in result.records if r["pc"] == 0]
    assert [r["active"] for r in first_warp_of_block] == [0b1111, 0b0011, 0b1111, 0b0011]


def test_kernel_parameters():
    result = launch("""
.param 0 40
.param 1 -7
.param 7 0x7fffffff
    ldp r1, 0
    ldp r2, 1
    ldp r3, 7
    ldp r4, 5              ; never set: 0
    st [r1+0], r2
    st [r1+4], r3
    st [r1+8], r4
    exit
""")
    assert signed_words(result, 10, 3) == [-7, 0x7FFF_FFFF, 0]


def test_vector_add_over_several_blocks():
    # c[i] = a[i] + b[i] for i < n, with 3 blocks of 4 threads covering n = 10.
    a = [5, -3, 100, 7, 0, -(1 << 31), 9, 1, 2, 3]
    b = [1, 2, 3, 4, 5, -1, -9, 10, 20, 30]
    result = launch(f"""
.grid 3
.block 4
.param 0 0        ; a
.param 1 40       ; b
.param 2 80       ; c
.param 3 10       ; n
{mem_line(0, a)}
{mem_line(10, b)}
    s2r r0, ctaid
    s2r r1, ntid
    s2r r2, tid
    mad r3, r0, r1, r2
    ldp r4, 3
    setp.ge p0, r3, r4
    @p0 exit
    shl r5, r3, 2
    ldp r6, 0
    add r6, r6, r5
    ld r7, [r6+0]
    ldp r6, 1
    add r6, r6, r5
    ld r8, [r6+0]
    add r9, r7, r8
    ldp r6, 2
    add r6, r6, r5
    st [r6+0], r9
    exit
""")
    assert signed_words(result, 20, 12) == [s32(x + y) for x, y in zip(a, b)] + [0, 0]


def test_if_else_diverges_and_reconverges_at_the_join():
    result = launch("""
.block 8
    s2r r0, tid
    and r1, r0, 1
    setp.eq p0, r1, 0
    @p0 bra even
    mul r2, r0, 10          ; odd threads
    bra join
even:
    add r2, r0, 100         ; even threads
join:
    add r2, r2, 1           ; everyone again
    shl r3, r0, 2
    st [r3+0], r2
    exit
""")
    assert signed_words(result, 0, 8) == [t + 101 if t % 2 == 0 else 10 * t + 1
                                          for t in range(8)]
    join_pc = 7
    for warp in (0, 1):
        at_join = [r for r in result.records if r["warp"] == warp and r["pc"] == join_pc]
        assert [r["active"] for r in at_join] == [0b1111]          # once, all lanes together
        odd_side = [r for r in result.records if r["warp"] == warp and r["pc"] == 4]
        even_side = [r for r in result.records if r["warp"] == warp and r["pc"] == 6]
        assert [r["active"] for r in odd_side] == [0b1010]
        assert [r["active"] for r in even_side] == [0b0101]


def test_loop_with_lane_dependent_trip_count():
    result = launch((EXAMPLE_PROGRAM).read_text())
    assert signed_words(result, 0, 8) == [t * (t + 1) // 2 for t in range(8)]
    # Lanes leave the loop at different times but store together once per warp.
    stores = [r for r in result.records if r["mwen"]]
    assert [(r["warp"], r["active"]) for r in stores] == [(0, 0b1111), (1, 0b1111)]


def test_nested_loops_and_an_early_exit_inside_a_loop():
    # Thread t counts pairs j < i < t; thread 3 exits inside the outer loop and writes nothing.
    result = launch("""
.block 8
.mem 0 -1 -1 -1 -1 -1 -1 -1 -1
    s2r r0, tid
    add r1, rz, 0           ; count
    add r2, rz, 0           ; i
outer:
    setp.ge p0, r2, r0
    @p0 bra done
    setp.eq p1, r0, 3
    @p1 exit
    add r3, rz, 0           ; j
inner:
    setp.ge p2, r3, r2
    @p2 bra next
    add r1, r1, 1
    add r3, r3, 1
    bra inner
next:
    add r2, r2, 1
    bra outer
done:
    shl r4, r0, 2
    st [r4+0], r1
    exit
""")
    assert not result.trapped
    expected = [t * (t - 1) // 2 if t != 3 else -1 for t in range(8)]
    assert signed_words(result, 0, 8) == expected


def test_several_lanes_storing_to_one_word_highest_lane_wins():
    result = launch("""
.block 8
    s2r r0, tid
    add r1, r0, 50
    st [rz+12], r1          ; every thread stores to word 3
    and r2, r0, 1
    shl r2, r2, 2
    st [r2+32], r0          ; even threads to word 8, odd ones to word 9
    exit
""")
    assert signed_words(result, 3, 1) == [57]        # warp 1 ran last; its lane 3 is tid 7
    assert signed_words(result, 8, 2) == [6, 7]
    first_store = next(r for r in result.records if r["mwen"])
    assert first_store["mwen"] == 0b1111
    assert [first_store[f"maddr{lane}"] for lane in range(4)] == [3, 3, 3, 3]
    assert [first_store[f"mval{lane}"] for lane in range(4)] == [50, 51, 52, 53]


def test_guarded_exit_then_branch_back_keeps_exited_lanes_out():
    # Lanes exit one per iteration; the record of each exit names exactly the exiting lane.
    result = launch("""
.block 4
    s2r r0, tid
    add r1, rz, 0
again:
    setp.eq p0, r0, r1
    @p0 exit
    add r1, r1, 1
    bra again
""")
    exits = [r["exited"] for r in result.records if r["exited"]]
    assert exits == [0b0001, 0b0010, 0b0100, 0b1000]
    assert result.records[-1]["active"] == 0b1000


def test_a_machine_with_other_parameters():
    # The same program on an 8-lane, 2-warp machine: the spec's parameters decide.
    result = launch("""
.block 16
    s2r r0, tid
    s2r r1, laneid
    s2r r2, warpid
    shl r3, r0, 3
    st [r3+0], r1
    st [r3+4], r2
    exit
""", overrides={"LANES": 8, "WARPS": 2})
    for tid in range(16):
        assert signed_words(result, 2 * tid, 2) == [tid % 8, tid // 8]
    assert result.records[0]["active"] == 0xFF
    assert "rval7" in result.records[0]
