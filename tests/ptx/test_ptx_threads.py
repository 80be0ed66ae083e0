"""Threads that cooperate, lowered (qwengpu/ptx/select_threads.py, select_memory.py): warp
shuffles and votes, atomics, shared memory, barriers and sub-word stores, each against PTX's
meaning written here in plain Python for QwenGPU's 4-lane warps (docs/isa.md, docs/ptx.md).
Every run goes through the reference interpreter and the independent ISA model
(tests/ptx/ptx_isa_model.py), which must agree first (`run_ptx`)."""

from __future__ import annotations

import random

import pytest

from ptx_harness import HEADER, M32, REGISTERS, compile_ptx, run_ptx, s32
from qwengpu.errors import CapacityError, PtxError

LANES = 4


def warp_kernel(body: str, inputs: int, outputs: int, decls: str = "") -> str:
    """A kernel whose thread t reads `inputs` words of row t into %a0.. and stores %o0.."""
    loads = "\n".join(f"    ld.global.u32 %a{j}, [%rd3+{4 * j}];" for j in range(inputs))
    stores = "\n".join(f"    st.global.u32 [%rd5+{4 * j}], %o{j};" for j in range(outputs))
    return HEADER + decls + f""".visible .entry k(.param .u64 k_in, .param .u64 k_out)
{{
{REGISTERS}    .reg .b32 %a<{max(inputs, 1)}>;
    .reg .b32 %o<{max(outputs, 1)}>;
    ld.param.u64 %rd0, [k_in];
    ld.param.u64 %rd1, [k_out];
    mov.u32 %t, %tid.x;
    mul.wide.u32 %rd2, %t, {4 * inputs};
    add.s64 %rd3, %rd0, %rd2;
{loads}
{body}
    mul.wide.u32 %rd4, %t, {4 * outputs};
    add.s64 %rd5, %rd1, %rd4;
{stores}
    ret;
}}
"""


def run_rows_in_warps(body: str, rows: list[tuple], outputs: int, decls: str = ""):
    """Rows in launches of whole warps; one tuple of `outputs` words per row."""
    inputs = len(rows[0])
    per_launch = min(32, 120 // (inputs + outputs)) // LANES * LANES
    ptx = warp_kernel(body, inputs, outputs, decls)
    results = []
    for start in range(0, len(rows), per_launch):
        chunk = rows[start:start + per_launch]
        flat = [word & M32 for row in chunk for word in row]
        run = run_ptx(ptx, {"in": flat, "out": [0] * (outputs * len(chunk))}, ["in", "out"],
                      block=len(chunk))
        assert run.result.trap is None, run.result.trap.message
        out = run.words["out"]
        results += [tuple(out[outputs * i:outputs * (i + 1)]) for i in range(len(chunk))]
    return results


# ---- shuffles -----------------------------------------------------------------------------------

def shuffle_reference(mode: str, values: list[int], bs: list[int], cs: list[int]):
    """PTX's shfl.sync for one warp (ISA manual's pseudo-code), lanes past the warp's 4 out of
    range: (d, p) per lane."""
    result = []
    for lane in range(LANES):
        b, c = bs[lane] & 0x1F, cs[lane]
        clamp, segments = c & 0x1F, (c >> 8) & 0x1F
        last = (lane & segments) | (clamp & ~segments)
        first = lane & segments
        if mode == "up":
            j = lane - b
            valid = j >= last
        else:
            j = {"down": lane + b, "bfly": lane ^ b, "idx": first | (b & ~segments)}[mode]
            valid = j <= last and j < LANES
        result.append((values[j] if valid else values[lane], int(valid)))
    return result


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
@pytest.mark.parametrize("operands", ["registers", "immediates"])
def test_shuffles(mode, operands):
    rng = random.Random(mode)
    widths = (1, 2, 4, 32)
    warps = []
    for width in widths:
        for b in (0, 1, 2, 3, 5):
            c = ((32 - width) << 8) | (0 if mode == "up" else 0x1F)
            values = [rng.getrandbits(32) for _ in range(LANES)]
            bs = [b] * LANES if operands == "immediates" else \
                [rng.choice((b, rng.randrange(8))) for _ in range(LANES)]
            warps.append((values, bs, [c] * LANES))
    if operands == "registers":
        body = f"""    shfl.sync.{mode}.b32 %o0|%p1, %a0, %a1, %a2, -1;
    selp.u32 %o1, 1, 0, %p1;"""
        rows = [(v, b, c) for values, bs, cs in warps for v, b, c in zip(values, bs, cs)]
        got = run_rows_in_warps(body, rows, 2)
        expected = [row for values, bs, cs in warps
                    for row in shuffle_reference(mode, values, bs, cs)]
        assert got == expected
    else:
        for values, bs, cs in warps:
            body = f"""    shfl.sync.{mode}.b32 %o0|%p1, %a0, {bs[0]}, {cs[0]}, 0xffffffff;
    selp.u32 %o1, 1, 0, %p1;"""
            got = run_rows_in_warps(body, [(v,) for v in values], 2)
            assert got == shuffle_reference(mode, values, bs, cs), (bs[0], hex(cs[0]))


def test_a_shuffle_by_known_operands_is_short():
    """nvcc's `mov` of the clamp and mask into registers folds: __shfl_down_sync(m, v, 1) is
    s2r, add, setp, selp, shfl."""
    body = """    mov.u32 %x1, 31;
    mov.u32 %x2, -1;
    shfl.sync.down.b32 %o0|%p1, %a0, 1, %x1, %x2;"""
    program = compile_ptx(warp_kernel(body, 1, 1))
    shuffle = [slot for slot in program.slots if "shfl" in slot.ptx_text]
    assert [str(slot.instruction).split()[0] for slot in shuffle] == \
        ["s2r", "add", "setp.ls", "selp", "shfl"]


# ---- votes ------------------------------------------------------------------------------------

def test_votes():
    """ballot, any, all, uni of `a0 & 1` over warps whose lanes all run, and the same inside
    a branch only some lanes take (the others do not vote)."""
    rng = random.Random(3)
    warps = [[rng.getrandbits(3) for _ in range(LANES)] for _ in range(8)] + \
        [[1, 1, 1, 1], [0, 0, 0, 0], [2, 3, 2, 3]]
    body = """    and.b32 %x1, %a0, 1;
    setp.ne.u32 %p1, %x1, 0;
    vote.sync.ballot.b32 %o0, %p1, -1;
    vote.sync.any.pred %p2, %p1, -1;
    vote.sync.all.pred %p3, %p1, -1;
    vote.sync.uni.pred %p4, %p1, -1;
    selp.u32 %x2, 1, 0, %p2;
    selp.u32 %x3, 2, 0, %p3;
    selp.u32 %x4, 4, 0, %p4;
    or.b32 %x5, %x2, %x3;
    or.b32 %o1, %x5, %x4;
    mov.u32 %o2, 0;
    setp.lt.u32 %p5, %a0, 4;
    @!%p5 bra DONE;
    activemask.b32 %o2;
    vote.sync.ballot.b32 %x6, %p1, 3;
    add.s32 %o2, %o2, %x6;
    shl.b32 %x7, %x6, 8;
    add.s32 %o2, %o2, %x7;
DONE:"""
    rows = [(v,) for warp in warps for v in warp]
    got = run_rows_in_warps(body, rows, 3)
    expected = []
    for warp in warps:
        bits = [v & 1 for v in warp]
        ballot = sum(bit << lane for lane, bit in enumerate(bits))
        flags = int(any(bits)) + 2 * int(all(bits)) + 4 * int(len(set(bits)) == 1)
        runs = [v < 4 for v in warp]
        active = sum(1 << lane for lane, r in enumerate(runs) if r)
        low = sum(1 << lane for lane in range(2) if runs[lane] and bits[lane])
        for lane in range(LANES):
            expected.append((ballot, flags, active + low + (low << 8) if runs[lane] else 0))
    assert got == expected


# ---- atomics ----------------------------------------------------------------------------------

ATOMICS = {
    "add.u32": lambda w, b, c: w + b,
    "min.s32": lambda w, b, c: min(s32(w), s32(b)),
    "min.u32": lambda w, b, c: min(w, b),
    "max.s32": lambda w, b, c: max(s32(w), s32(b)),
    "max.u32": lambda w, b, c: max(w, b),
    "and.b32": lambda w, b, c: w & b,
    "or.b32": lambda w, b, c: w | b,
    "xor.b32": lambda w, b, c: w ^ b,
    "exch.b32": lambda w, b, c: b,
    "cas.b32": lambda w, b, c: c if w == b else w,
    "inc.u32": lambda w, b, c: 0 if w >= b else w + 1,
    "dec.u32": lambda w, b, c: b if w == 0 or w > b else w - 1,
}


@pytest.mark.parametrize("op", sorted(ATOMICS))
@pytest.mark.parametrize("space", ["global", "shared"])
def test_atomics_apply_lane_by_lane(op, space):
    """Four lanes (one warp) on two words: lanes 0, 2 on word 0 and 1, 3 on word 1; each lane
    gets the word before its own update, in lane order (docs/isa.md "Serial instructions")."""
    rng = random.Random(op)
    start = [rng.choice((0, 1, 5, 0x8000_0000, M32, rng.getrandbits(32))) for _ in range(2)]
    bs = [rng.choice((0, 1, 3, 5, M32, rng.getrandbits(32), start[lane % 2])) for lane in
          range(LANES)]
    cs = [rng.getrandbits(32) for _ in range(LANES)]
    operands = "%x3, %x4, %x5" if op.startswith("cas") else "%x3, %x4"
    decls = ".shared .align 4 .b8 words[8];\n" if space == "shared" else ""
    if space == "shared":
        address = """    and.b32 %x1, %t, 1;
    shl.b32 %x2, %x1, 2;
    mov.u32 %x6, words;
    add.s32 %x3, %x6, %x2;
    setp.ne.u32 %p1, %t, 0;
    @%p1 bra START;
    ld.global.u32 %x7, [%rd1+16];
    st.shared.u32 [words], %x7;
    ld.global.u32 %x7, [%rd1+20];
    st.shared.u32 [words+4], %x7;
START:
    bar.sync 0;"""
        back = """    bar.sync 0;
    setp.ne.u32 %p1, %t, 0;
    @%p1 bra END;
    ld.shared.u32 %x7, [words];
    st.global.u32 [%rd1+16], %x7;
    ld.shared.u32 %x7, [words+4];
    st.global.u32 [%rd1+20], %x7;
END:"""
        access = f"    atom.shared.{op} %o0, [{operands.split(',')[0]}], " + \
            ", ".join(operands.split(", ")[1:]) + ";"
    else:
        address = """    and.b32 %x1, %t, 1;
    mul.wide.u32 %rd6, %x1, 4;
    add.s64 %rd7, %rd1, %rd6;
    add.s64 %rd7, %rd7, 16;"""
        back = ""
        access = f"    atom.global.{op} %o0, [%rd7], " + ", ".join(operands.split(", ")[1:]) + ";"
    body = f"""    mov.u32 %x4, %a0;
    mov.u32 %x5, %a1;
{address}
{access}
{back}"""
    ptx = warp_kernel(body, 2, 1, decls)
    out = [0] * LANES + start
    run = run_ptx(ptx, {"in": [w for lane in range(LANES) for w in (bs[lane], cs[lane])],
                        "out": out}, ["in", "out"])
    assert run.result.trap is None
    words, found = list(start), []
    for lane in range(LANES):
        word = lane % 2
        found.append(words[word])
        words[word] = ATOMICS[op](words[word], bs[lane], cs[lane]) & M32
    assert run.words["out"] == found + words


def test_red_and_a_guarded_atomic():
    """`red` keeps no result; lanes whose guard fails do not run the atomic."""
    body = """    setp.ne.u32 %p1, %t, 2;
    @%p1 red.global.add.u32 [%rd1+16], %a0;
    mov.u32 %o0, 0;"""
    run = run_ptx(warp_kernel(body, 1, 1), {"in": [1, 10, 100, 1000], "out": [0] * 5},
                  ["in", "out"])
    assert run.words["out"][4] == 1 + 10 + 1000


# ---- shared memory ----------------------------------------------------------------------------

SHARED_COPY = HEADER + """.visible .entry k(.param .u64 k_out)
{
""" + REGISTERS + """    .shared .align 4 .b8 first[8];
    .shared .align 8 .b8 second[12];
    ld.param.u64 %rd0, [k_out];
    mov.u32 %t, %tid.x;
    mov.u32 %x1, %ctaid.x;
    mad.lo.s32 %x2, %x1, 100, %t;
    shl.b32 %x3, %t, 2;
    mov.u32 %x4, second;
    add.s32 %x5, %x4, %x3;
    st.shared.u32 [%x5], %x2;
    bar.sync 0;
    sub.s32 %x6, 2, %t;
    shl.b32 %x7, %x6, 2;
    add.s32 %x8, %x4, %x7;
    ld.shared.u32 %x9, [%x8];
    mov.u64 %rd2, second;
    cvta.shared.u64 %rd3, %rd2;
    cvta.to.shared.u64 %rd4, %rd3;
    cvt.u32.u64 %x10, %rd4;
    mad.lo.s32 %x11, %x1, 3, %t;
    mul.wide.u32 %rd5, %x11, 8;
    add.s64 %rd6, %rd0, %rd5;
    st.global.u32 [%rd6], %x9;
    ld.u32 %x12, [%rd3];
    st.global.u32 [%rd6+4], %x10;
    ret;
}
"""


def test_each_block_has_its_own_shared_memory():
    """Two blocks of 3 threads write 100 b + t into `second` (after `first`, at its .align of
    8: offset 8), wait, and read it back reversed; cvta.shared and back gives the offset."""
    run = run_ptx(SHARED_COPY, {"out": [0] * 12}, ["out"], grid=2, block=3)
    assert run.result.trap is None, run.result.trap.message
    out = run.words["out"]
    assert out[0::2] == [100 * b + 2 - t for b in range(2) for t in range(3)]
    assert out[1::2] == [8] * 6                        # second's offset in the window
    program = compile_ptx(SHARED_COPY)
    assert program.shared_bytes == 20 and not program.dynamic_shared


def test_a_shared_access_past_its_window_traps():
    body = """    shl.b32 %x1, %a0, 2;
    mov.u32 %x2, buf;
    add.s32 %x3, %x2, %x1;
    st.shared.u32 [%x3], %a0;
    mov.u32 %o0, 0;"""
    ptx = warp_kernel(body, 1, 1, ".shared .align 4 .b8 buf[16];\n")
    fine = run_ptx(ptx, {"in": [0, 1, 2, 3], "out": [0] * 4}, ["in", "out"])
    assert fine.result.trap is None
    past = run_ptx(ptx, {"in": [0, 1, 4, 3], "out": [0] * 4}, ["in", "out"])
    assert past.result.trap.kind == "address out of range" and past.result.trap.lane == 2
    assert "shared address 16 (word 4) is past the 4 words of the block's shared memory" in \
        past.result.trap.message


def test_extern_shared_memory_takes_its_size_from_the_launch():
    decls = ".extern .shared .align 4 .b8 dyn[];\n"
    body = """    shl.b32 %x1, %t, 2;
    mov.u32 %x2, dyn;
    add.s32 %x3, %x2, %x1;
    st.shared.u32 [%x3], %a0;
    bar.sync 0;
    xor.b32 %x4, %x1, 4;
    add.s32 %x5, %x2, %x4;
    ld.shared.u32 %o0, [%x5];"""
    ptx = warp_kernel(body, 1, 1, decls)
    run = run_ptx(ptx, {"in": [10, 11, 12, 13], "out": [0] * 4}, ["in", "out"],
                  shared_bytes=16)
    assert run.words["out"] == [11, 10, 13, 12]
    assert compile_ptx(ptx).dynamic_shared
    none = run_ptx(ptx, {"in": [10, 11, 12, 13], "out": [0] * 4}, ["in", "out"])
    assert none.result.trap.kind == "address out of range"


def test_too_much_shared_memory_is_refused():
    ptx = warp_kernel("    mov.u32 %o0, big;", 0, 1, ".shared .align 4 .b8 big[400];\n")
    with pytest.raises(CapacityError, match=r"400 bytes of shared memory \(100 words\), but a "
                                            r"block of QwenGPU may have 64 words "
                                            r"\(SHARED_WORDS\); 36 too many"):
        compile_ptx(ptx)


# ---- barriers ---------------------------------------------------------------------------------

BARRIER = HEADER + """.visible .entry k(.param .u64 k_out)
{
""" + REGISTERS + """    .shared .align 4 .b8 slots[32];
    ld.param.u64 %rd0, [k_out];
    mov.u32 %t, %tid.x;
    mov.u32 %x1, slots;
    shl.b32 %x2, %t, 2;
    add.s32 %x3, %x1, %x2;
    EARLY
    mad.lo.s32 %x4, %t, 7, 1;
    st.shared.u32 [%x3], %x4;
    bar.sync 0;
    sub.s32 %x5, 7, %t;
    shl.b32 %x6, %x5, 2;
    add.s32 %x7, %x1, %x6;
    ld.shared.u32 %x8, [%x7];
    mul.wide.u32 %rd1, %t, 4;
    add.s64 %rd2, %rd0, %rd1;
    st.global.u32 [%rd2], %x8;
DONE:
    ret;
}
"""


def test_a_barrier_orders_the_warps_of_a_block():
    """Two warps: each thread writes its slot, waits, then reads the mirrored one (the other
    warp's), which must have been written."""
    run = run_ptx(BARRIER.replace("EARLY", ""), {"out": [0] * 8}, ["out"], block=8)
    assert run.words["out"] == [(7 - t) * 7 + 1 for t in range(8)]
    assert sum(1 for r in run.result.records if r.get("released")) == 1


def test_a_warp_that_exits_counts_as_arrived():
    """The second warp's threads leave before the barrier: the first warp is not held."""
    early = """setp.gt.u32 %p1, %t, 3;
    @%p1 bra DONE;"""
    run = run_ptx(BARRIER.replace("EARLY", early), {"out": [0] * 8}, ["out"], block=8)
    assert run.result.trap is None
    assert run.words["out"][:4] == [0, 0, 0, 0]     # slots 4..7 were never written


def test_a_barrier_only_some_lanes_reach_traps():
    early = """setp.gt.u32 %p1, %t, 1;
    @%p1 bra DONE;"""
    run = run_ptx(BARRIER.replace("EARLY", early), {"out": [0] * 4}, ["out"], block=4)
    assert run.result.trap.kind == "barrier reached by only some lanes of a warp"


@pytest.mark.parametrize("text, message", [
    ("bar.sync 1;", "named barriers"), ("bar.sync 0, 32;", "a number of threads"),
    ("bar.red.popc.u32 %x1, 0, %p1;", "only bar.sync")])
def test_barriers_the_machine_does_not_have_are_refused(text, message):
    with pytest.raises(PtxError, match=message):
        compile_ptx(warp_kernel(f"    {text}\n    mov.u32 %o0, 0;", 0, 1))


def test_syncwarp_is_nothing():
    program = compile_ptx(warp_kernel("    bar.warp.sync -1;\n    mov.u32 %o0, %a0;", 1, 1))
    assert not any("bar" in str(slot.instruction) for slot in program.slots)


# ---- sub-word stores --------------------------------------------------------------------------

def test_lanes_store_bytes_and_halves_of_one_word():
    body = """    shl.b32 %x1, %t, 8;
    or.b32 %x2, %x1, %a0;
    cvt.u64.u32 %rd6, %t;
    add.s64 %rd7, %rd1, %rd6;
    st.global.u8 [%rd7+16], %x2;
    shl.b64 %y8, %rd6, 1;
    add.s64 %y9, %rd1, %y8;
    st.global.u16 [%y9+20], %x2;
    mov.u32 %o0, 0;"""
    run = run_ptx(warp_kernel(body, 1, 1), {"in": [0x11, 0x22, 0x33, 0x44], "out": [M32] * 7},
                  ["in", "out"])
    out = run.words["out"]
    assert out[4] == 0x44332211
    assert out[5:7] == [0x0122_0011, 0x0344_0233]


def test_a_halfword_store_at_an_odd_address_traps():
    body = """    cvt.u64.u32 %rd6, %t;
    add.s64 %rd7, %rd1, %rd6;
    st.global.u16 [%rd7+16], %a0;
    mov.u32 %o0, 0;"""
    run = run_ptx(warp_kernel(body, 1, 1), {"in": [1, 2, 3, 4], "out": [0] * 6}, ["in", "out"])
    assert run.result.trap.kind == "misaligned address" and run.result.trap.lane == 1


def test_signed_division_by_a_power_of_two_rounds_towards_zero():
    values = [0, 1, -1, 7, -7, 8, -8, 123457, -123457, 0x7FFF_FFFF, -0x8000_0000, -0x7FFF_FFFF]
    body = """    div.s32 %o0, %a0, 8;
    rem.s32 %o1, %a0, 8;
    mov.u32 %x1, WARP_SZ;
    div.s32 %o2, %a0, %x1;"""
    got = run_rows_in_warps(body, [(v & M32,) for v in values], 3)

    def c_div(a, b):
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    assert got == [(c_div(v, 8) & M32, (v - 8 * c_div(v, 8)) & M32, c_div(v, 4) & M32)
                   for v in values]
