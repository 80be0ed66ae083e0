"""Differential fuzzing of threads that cooperate: shared memory, barriers, atomics, shuffles,
votes and sub-word stores.

Each seed gives a random kernel and launch (`cooperative_generator.py`) whose result PTX
defines; the loader compiles it and the reference interpreter runs it, and
`cooperative_reference.py`, an evaluator with its own model of warps, shared memory,
barriers, atomics and shuffles that shares no code with qwengpu, runs it again.  The final
buffers must agree word for word.  A kernel that does not fit the machine is skipped.  A
disagreement is shrunk and shown with its launch JSON: save both under
`tests/fuzz/regressions/cooperative/` (a first line `// xfail: REASON` for a bug not fixed
yet), and `test_regression` runs it from then on.  `bench/soak_ptx.py --cooperative` runs the
same check at scale.

The evaluator is held to known answers on its own: the cooperating examples' real nvcc PTX
(their `expected.json` comes from each example's own Python model) and hand-written kernels;
it refuses kernels whose result is a matter of timing; and deliberately wrong variants of it
make the comparison fail, so that the check cannot pass by comparing nothing.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

import cooperative_reference as reference
from cooperative_differential import (DoesNotFit, check_case, compare, failure_report,
                                      run_machine, run_reference, shrink_case)
from cooperative_generator import generate_case
from cooperative_launch import KERNEL, CooperativeCase
from fuzz_differential import instruction_lines
from tiers import first_by_default

FUZZ_KERNELS = 200
COVERAGE_SEEDS = 1000
ROOT = Path(__file__).resolve().parents[2]
REGRESSIONS = Path(__file__).resolve().parent / "regressions" / "cooperative"
HEADER = ".version 9.0\n.target sm_80\n.address_size 64\n\n"
M32 = 0xFFFF_FFFF


@functools.lru_cache(maxsize=None)
def machine(seed: int):
    """The loader and interpreter's run of a seed (the costly side), kept for the tests of
    the wrong evaluators below; `DoesNotFit` as a value."""
    try:
        return run_machine(generate_case(seed))
    except DoesNotFit as error:
        return error


def test_generator_is_deterministic():
    assert generate_case(7) == generate_case(7)
    assert generate_case(7).ptx != generate_case(8).ptx


@pytest.mark.parametrize("seed", first_by_default(range(FUZZ_KERNELS), FUZZ_KERNELS // 2))
def test_random_cooperative_kernel(seed):
    case = generate_case(seed)
    expected = run_reference(case)           # raises if PTX leaves the result open
    ran = machine(seed)
    if isinstance(ran, DoesNotFit):
        pytest.skip(f"does not fit the machine: {ran}")
    difference = compare(expected, *ran)
    if difference is not None:
        pytest.fail(failure_report(case, difference), pytrace=False)


FAMILIES = [f"atom.{space}.{op}" for space in ("global", "shared") for op in
            ("add", "min", "max", "inc", "dec", "exch", "cas", "and", "or", "xor")] + \
    [f"red.{space}.{op}" for space in ("global", "shared") for op in ("add", "min", "max",
                                                                        "and", "or", "xor")] + \
    [f"shfl.sync.{mode}" for mode in ("up", "down", "bfly", "idx")] + \
    [f"vote.sync.{mode}" for mode in ("ballot", "any", "all", "uni")] + \
    ["activemask", "bar.sync", "barrier.sync", "popc", "st.shared.u8", "st.shared.u16",
     "st.global.u8", "st.global.u16", "ld.shared.u32", "ld.shared.u8", "ld.shared.s8",
     "ld.shared.u16", "ld.shared.s16", "st.shared.u32", "cvta.shared", "st.u32", "ld.u32",
     "st.u8", "st.u16", "cvt.s32.s16"] + [f"atom.{op}" for op in ("add", "min", "max", "and",
                                                                  "or", "xor", "exch", "cas")]


def families(ptx: str) -> set[str]:
    """The instruction families of a kernel, read from its text, and a few shapes."""
    found = set()
    for line in ptx.split("\n"):
        match = re.match(r"\t(@!?%p\d+ )?([a-z][\w.]*) ?(.*);$", line)
        if not match:
            continue
        guard, opcode, operands = match.groups()
        parts = opcode.split(".")
        found.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
        if guard and parts[0] in ("atom", "red"):
            found.add("guarded atomic")
        if parts[0] == "shfl" and "|" in operands:
            found.add("shuffle predicate")
        if parts[0] == "shfl" and operands.split(", ")[3].startswith("%"):
            found.add("shuffle clamp in a register")
    if re.search(r"\$L__tree_\d+:", ptx):
        found.add("barrier in a loop")
    if re.search(r"\$L__other_side_\d+:", ptx):
        found.add("barriers on both sides of a branch")
    if re.search(r"@%p3 ret;\n(.*\n)*\t(bar|barrier)\.sync", ptx):
        found.add("a return before a barrier")
    if re.search(r"\$L__loop_\d+:\n(.*\n){0,12}\t(@!?%p\d+ )?(atom|red|vote|activemask)", ptx):
        found.add("a warp operation in a loop lanes leave apart")
    if re.search(r"st(\.shared)?\.u(8|16) \[[^]]+\], %h0", ptx):
        found.add("a 16-bit register stored")
    if re.search(r"activemask\.b32 (%k2);(\n.*){0,4}vote\.sync\.\w+\.\w+ [^,]+, [^,]+, \1", ptx):
        found.add("vote in a branch")
    return found


def test_the_generator_covers_every_family():
    """Over a thousand seeds (generating is cheap); the 200 the tests run (100 by default,
    the rest in the extra tier) miss at most a few rare ones (generic atom.exch, say)."""
    seen: set[str] = set()
    single_warp_kernels = 0
    for seed in range(COVERAGE_SEEDS):
        case = generate_case(seed)
        seen |= families(case.ptx)
        single_warp_kernels += case.grid == 1 and case.block <= 4
    wanted = set(FAMILIES) | {"guarded atomic", "shuffle predicate", "barrier in a loop",
                              "vote in a branch", "shuffle clamp in a register",
                              "barriers on both sides of a branch", "a return before a barrier",
                              "a warp operation in a loop lanes leave apart",
                              "a 16-bit register stored"}
    assert wanted - seen == set()
    assert single_warp_kernels >= COVERAGE_SEEDS // 10     # where old values are read


# regressions ---------------------------------------------------------------------------------

def regression_case(ptx_path: Path) -> CooperativeCase:
    launch = json.loads(ptx_path.with_suffix(".json").read_text())
    return CooperativeCase(-1, ptx_path.read_text(), launch["grid"], launch["block"],
                           launch["buffers"], launch["args"])


def regression_params() -> list:
    params = []
    for path in sorted(REGRESSIONS.glob("*.ptx")):
        first = path.read_text().split("\n", 1)[0]
        reason = first.split("xfail:", 1)[1].strip() if first.startswith("// xfail:") else None
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


@pytest.mark.parametrize("ptx_path", regression_params())
def test_regression(ptx_path):
    assert check_case(regression_case(ptx_path)) is None


# the evaluator on real nvcc output ------------------------------------------------------------

EXAMPLES = ["shared_reduce", "histogram", "warp_reduce", "inclusive_scan", "tiled_transpose",
            "warp_vote", "atomic_order", "byte_stores", "warp_ops", "multi_block"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_reference_runs_the_cooperating_examples(name):
    folder = ROOT / "examples" / name
    launch = json.loads((folder / "launch.json").read_text())
    expected = json.loads((folder / "expected.json").read_text())["buffers"]
    got = reference.run_ptx((folder / "kernel.ptx").read_text(), launch["grid"],
                            launch["block"], launch["buffers"], launch["args"])
    assert {name: got[name] for name in expected} == \
        {name: [word & M32 for word in words] for name, words in expected.items()}


# the evaluator on hand-written kernels ------------------------------------------------------

def kernel(body: str, row_out: int = 1, shared: str = "") -> str:
    """Thread t reads in[t] into %r1 and has its row of `out` at %rd4 (`row_out` words)."""
    return HEADER + f""".visible .entry {KERNEL}(.param .u64 in_ptr, .param .u64 out_ptr)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    .shared .align 4 .b8 s[32];
    .shared .align 4 .b8 u[16];{shared}
    ld.param.u64 %rd0, [in_ptr];
    ld.param.u64 %rd1, [out_ptr];
    cvta.to.global.u64 %rd0, %rd0;
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd2, %r0, 4;
    add.s64 %rd3, %rd0, %rd2;
    ld.global.u32 %r1, [%rd3];
    mul.wide.u32 %rd2, %r0, {4 * row_out};
    add.s64 %rd4, %rd1, %rd2;
{body}
    ret;
}}
"""


def run_both(ptx: str, block: int, inputs: list[int], row_out: int = 1) -> list[list[int]]:
    """The rows of `out` by the evaluator, after checking that the machine agrees."""
    buffers = {"in": inputs, "out": [0] * (block * row_out)}
    case = CooperativeCase(-1, ptx, 1, block, buffers, ["in", "out"])
    assert check_case(case) is None
    out = reference.run_ptx(ptx, 1, block, buffers, ["in", "out"])["out"]
    return [out[row_out * t:row_out * (t + 1)] for t in range(block)]


def shuffle_word(mode: str, b: int, c: int) -> str:
    """d + 1000 * p of one shuffle of %r1, into %r2."""
    return f"""    shfl.sync.{mode}.b32 %r2|%p1, %r1, {b}, {c}, -1;
    selp.u32 %r3, 1000, 0, %p1;
    add.s32 %r2, %r2, %r3;"""


SHUFFLES = [  # (mode, b, c), then per lane d + 1000 * p for in = 10, 20, 30, 40
    (("down", 1, 31), [1020, 1030, 1040, 40]),       # lane 3 + 1 is past the warp's 4 lanes
    (("up", 2, 0), [10, 20, 1010, 1020]),
    (("bfly", 3, 31), [1040, 1030, 1020, 1010]),
    (("idx", 5, 31), [10, 20, 30, 40]),               # lane 5: out of range, its own value
    (("idx", 1, 0x1E1F), [1020, 1020, 1040, 1040]),   # width 2: lane 1 of each pair
    (("down", 1, 0x1E1F), [1020, 20, 1040, 40]),      # width 2: past the pair is out of range
    (("up", 1, 0x1E00), [10, 1010, 30, 1030]),
    (("down", 33, 2), [1020, 1030, 30, 40]),          # b is b[4:0]; clamp 2 stops lane 2
]


def test_reference_shuffles():
    stores = "\n".join(shuffle_word(*shape) + f"\n    st.global.u32 [%rd4+{4 * i}], %r2;"
                       for i, (shape, _) in enumerate(SHUFFLES))
    rows = run_both(kernel(stores, len(SHUFFLES)), 4, [10, 20, 30, 40], len(SHUFFLES))
    assert [list(column) for column in zip(*rows)] == [lanes for _, lanes in SHUFFLES]


TICKETS = """
    setp.eq.u32 %p0, %r0, 0;
    mov.u32 %r2, 0;
    @%p0 st.shared.u32 [s], %r2;
    bar.sync 0;
    atom.shared.add.u32 %r3, [s], %r1;
    st.global.u32 [%rd4], %r3;"""


def test_reference_atomics_of_a_warp_go_in_lane_order():
    assert run_both(kernel(TICKETS), 4, [5, 6, 7, 8]) == [[0], [5], [11], [18]]


SHARED_BYTES = kernel("""
    mov.u32 %r2, u;
    add.s32 %r3, %r2, %r0;
    add.s32 %r4, %r1, 0x10;
    st.shared.u8 [%r3], %r4;
    setp.lt.u32 %p0, %r0, 2;
    shl.b32 %r5, %r0, 1;
    add.s32 %r5, %r2, %r5;
    @%p0 st.shared.u16 [%r5+4], %r1;
    bar.sync 0;
    ld.shared.u32 %r6, [u];
    ld.shared.s16 %r7, [u+2];
    xor.b32 %r6, %r6, %r7;
    st.global.u32 [%rd4], %r6;
    @%p0 ld.shared.u32 %r8, [u+4];
    @%p0 st.global.u32 [%rd4+4], %r8;""", 2)


def test_reference_byte_and_halfword_stores_merge_into_words():
    # bytes 0x11, 0x12, 0x03 (0xF3 + 0x10 keeps its low byte), 0x80: the word 0x80031211;
    # its high halfword read as .s16 is 0xFFFF8003; halfwords 1 and 2 make word 1
    rows = run_both(SHARED_BYTES, 4, [1, 2, 0xF3, 0x70], 2)
    combined = 0x8003_1211 ^ 0xFFFF_8003
    assert rows == [[combined, 0x0002_0001]] * 2 + [[combined, 0]] * 2


@pytest.mark.parametrize("block, body, message", [
    (2, "    st.shared.u32 [s], %r1;", "a race: thread 1 of block 0 writes s\\[0\\]"),
    (2, """    setp.eq.u32 %p0, %r0, 0;
    @%p0 st.shared.u32 [s], %r1;
    ld.shared.u32 %r2, [s];""", "a race: thread 1 .* reads s\\[0\\]"),
    (1, "    ld.shared.u32 %r2, [s];\n    st.global.u32 [%rd4], %r2;", "undefined value"),
    (8, """    setp.eq.u32 %p0, %r0, 0;
    @%p0 st.shared.u32 [s+4], %r1;
    @!%p0 atom.shared.add.u32 %r2, [s+4], 1;""", "a race: thread 1 .* updates atomically s\\[1\\]"),
    (8, """    setp.eq.u32 %p0, %r0, 0;
    @%p0 st.shared.u32 [s], %r1;
    bar.sync 0;
    atom.shared.exch.b32 %r2, [s], %r0;""", "depends on their order"),
    (8, """    setp.eq.u32 %p0, %r0, 0;
    @%p0 st.shared.u32 [s], %r1;
    bar.sync 0;
    setp.lt.u32 %p1, %r0, 4;
    @%p1 red.shared.add.u32 [s], %r0;
    @!%p1 red.shared.max.u32 [s], %r0;""", "depends on their order"),
    (8, TICKETS, "old value of an atom.add .* is read"),
    (4, """    setp.eq.u32 %p0, %r0, 0;
    @%p0 bra $L__skip;
    bar.sync 0;
$L__skip:""", "only some lanes of warp 0"),
    (4, """    setp.eq.u32 %p0, %r0, 0;
    @%p0 bra $L__skip;
    activemask.b32 %r3;
    shfl.sync.idx.b32 %r2, %r1, 0, 31, %r3;
    st.global.u32 [%rd4], %r2;
$L__skip:""", "undefined value"),
    (4, """    setp.eq.u32 %p0, %r0, 0;
    @%p0 bra $L__skip;
    vote.sync.ballot.b32 %r2, %p0, -1;
$L__skip:""", "not converged"),
    (4, "    shfl.sync.idx.b32 %r2, %r1, 0, 31, 1;", "leaves out its lane"),
    (1, "    ld.shared.u32 %r2, [s+32];", "in no buffer or variable"),
])
def test_reference_refuses_what_ptx_leaves_open(block, body, message):
    with pytest.raises(reference.PtxReferenceError, match=message):
        reference.run_ptx(kernel(body), 1, block, {"in": list(range(block)),
                                                   "out": [0] * block}, ["in", "out"])


def test_reference_accepts_commuting_atomics_of_many_warps():
    body = """    setp.eq.u32 %p0, %r0, 0;
    @%p0 st.shared.u32 [s], %r1;
    bar.sync 0;
    atom.shared.max.s32 %r2, [s], %r1;
    red.shared.max.s32 [s], %r0;
    bar.sync 0;
    ld.shared.u32 %r3, [s];
    st.global.u32 [%rd4], %r3;"""
    assert run_both(kernel(body), 8, [3, -9, 4, 1, 0, 2, 6, -1]) == [[7]] * 8


def test_reference_barriers_wait_for_threads_that_have_not_exited():
    """Threads 5..7 return first; warps 0 and 1 meet at two different `bar.sync 0`s."""
    body = """    setp.ge.u32 %p0, %r0, 5;
    @%p0 ret;
    mov.u32 %r2, s;
    shl.b32 %r3, %r0, 2;
    add.s32 %r3, %r2, %r3;
    st.shared.u32 [%r3], %r1;
    setp.lt.u32 %p1, %r0, 4;
    @%p1 bra $L__first;
    bar.sync 0;
    bra $L__end;
$L__first:
    bar.sync 0;
$L__end:
    sub.s32 %r4, 4, %r0;
    shl.b32 %r4, %r4, 2;
    add.s32 %r4, %r2, %r4;
    ld.shared.u32 %r5, [%r4];
    st.global.u32 [%rd4], %r5;"""
    assert run_both(kernel(body), 8, [10, 11, 12, 13, 14, 15, 16, 17]) == \
        [[14], [13], [12], [11], [10], [0], [0], [0]]


# wrong evaluators make the check fail ---------------------------------------------------------

def reversed_lanes(monkeypatch):
    monkeypatch.setattr(reference, "serial_order", lambda lanes: lanes[::-1])


def inc_without_wrap(monkeypatch):
    monkeypatch.setitem(reference.ATOMIC, "inc", lambda old, b, c, s: old + 1)


def unsigned_min(monkeypatch):
    monkeypatch.setitem(reference.ATOMIC, "min", lambda old, b, c, s: min(old, b))


def shuffles_wrap_around(monkeypatch):
    """A source lane past the warp's 4 lanes read as the lane it wraps to."""
    original = reference.shuffle_source

    def source(mode, lane, b, c):
        j, valid = original(mode, lane, b, c)
        return (j % reference.WARP_LANES, True) if j >= reference.WARP_LANES else (j, valid)
    monkeypatch.setattr(reference, "shuffle_source", source)


def ballot_ignores_the_predicate(monkeypatch):
    original = reference.Launch.predicate

    def predicate(self, thread, operand, ins):
        return True if ins.opcode.startswith("vote") else original(self, thread, operand, ins)
    monkeypatch.setattr(reference.Launch, "predicate", predicate)


def byte_store_writes_the_word(monkeypatch):
    original = reference.Memory.write

    def write(self, key, size, value):
        space, block, address = key
        if size < 4:
            key, size = (space, block, address & ~3), 4
        original(self, key, size, value)
    monkeypatch.setattr(reference.Memory, "write", write)


@pytest.mark.parametrize("mutate", [reversed_lanes, inc_without_wrap, unsigned_min,
                                    shuffles_wrap_around, ballot_ignores_the_predicate,
                                    byte_store_writes_the_word])
def test_a_wrong_evaluator_makes_the_check_fail(mutate, monkeypatch):
    mutate(monkeypatch)
    for seed in range(FUZZ_KERNELS):
        ran = machine(seed)
        if isinstance(ran, DoesNotFit):
            continue
        try:
            if compare(run_reference(generate_case(seed)), *ran) is not None:
                return
        except reference.PtxReferenceError:
            continue                         # the wrong evaluator may refuse a kernel
    pytest.fail(f"no kernel of seeds 0..{FUZZ_KERNELS - 1} tells {mutate.__name__}")


def test_the_shrinker_keeps_a_failure_and_drops_lines(monkeypatch):
    reversed_lanes(monkeypatch)
    case = next(case for case in map(generate_case, range(FUZZ_KERNELS))
                if case.grid == 1 and case.block <= 4 and "atom" in case.ptx and
                not isinstance(machine(case.seed), DoesNotFit) and
                compare(run_reference(case), *machine(case.seed)) is not None)
    small = shrink_case(case, tries=40)
    lines = lambda c: len(instruction_lines(c.ptx.split("\n")))  # noqa: E731
    assert check_case(small) is not None and lines(small) < lines(case)


def test_the_soak_runs_the_cooperative_fuzz(capsys):
    from bench_scripts import bench_script

    assert bench_script("soak_ptx").main(["--cooperative", "--kernels", "2"]) == 0
    assert re.search(r"checked 2 cooperative kernels \(seeds 0\.\.1\) .*: 0 mismatches",
                     capsys.readouterr().out)
