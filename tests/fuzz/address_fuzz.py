"""Seeded random kernels whose addresses may leave 32 bits, and their differential check.

Each kernel computes one address from `in`, its launch arguments and the thread's index,
through random 32-bit arithmetic, maybe a bounds check of the index that branches around the
rest, `mul.wide` by large and negative factors, 64-bit adds, subtracts and shifts and maybe a
loop that steps the pointer, then loads through it and stores the word into `out[tid]`; a third
buffer fills the rest of the machine's memory. The arguments mix small values with ones near
2^30, 2^32 and 2^63, so many addresses land in memory, many far outside it, and some exactly
2^32 or 2^33 bytes past a word of `in`: the addresses a loader that addressed memory by the low
word would wrap. A third of the kernels load 64 bits (`ld.global.u64`, summed and stored with
`st.global.u64`), whose addresses must be multiples of 8 as well. `ptx_reference.py` faults on
every address that is not a word of memory and on every access that is not aligned to its
size, and says which; the loader's default code must trap there too, with the same kind of
trap (`qwengpu.ptx.ranges` and `qwengpu.ptx.alignment` may leave a check out only where it
cannot fire). Only instructions the reference reads are written.

`address_outcomes` runs a case both ways: from a launch file's contents (so the analysis sees
the launch's arguments, as `hdlc run` does) on the reference interpreter, and through the
reference.  Used by `test_address_fuzz.py` and `bench/soak_ptx.py --addresses`.
"""

from __future__ import annotations

import random
from pathlib import Path

import ptx_reference
from ptx_generator import FuzzCase
from qwengpu.runtime.launch import launch_from_dict, run_launch_sim

KERNEL = "addr"
IN_WORDS = 8
MEMORY_WORDS = 126                 # the default machine's
WORDS_32 = [0, 1, 2, 3, 7, 0x3FFF_FFFF, 1 << 30, (1 << 30) + 1, 0x7FFF_FFFF, 0x8000_0000,
            0xC000_0000, 0xFFFF_FFFF, 0xFFFF_FFFE, 0xFFFF_FFFC]
WORDS_64 = [0, 4, 8, 1 << 32, (1 << 32) - 4, (1 << 32) + 4, 1 << 33, 1 << 63,
            (1 << 64) - 4, (1 << 64) - (1 << 32), 0x7FFF_FFFF_FFFF_FFFC]
WIDE_FACTORS = [1, 4, -4, 8, 1 << 28, 1 << 30, -(1 << 30), 1 << 31]
OFFSETS = [0, 4, -4, 8, 28]
STEPS = [4, -4, 8, 1 << 30, -(1 << 30), 1 << 31]
OPS_32 = ["add.s32", "sub.s32", "mul.lo.s32", "shl.b32", "shr.u32", "shr.s32", "and.b32",
          "or.b32", "min.s32", "max.u32"]


def _source_32(rng: random.Random, defined: list[str]) -> str:
    if rng.random() < 0.3:
        return str(rng.choice([0, 1, 2, 4, 30, 31, 1 << 30, 0x7FFF_FFFF]))
    return rng.choice(defined)


def generate_address_case(seed: int) -> FuzzCase:
    rng = random.Random(seed)
    lines = [f".visible .entry {KERNEL}(.param .u64 {KERNEL}_in, .param .u64 {KERNEL}_out,",
             f"    .param .u32 {KERNEL}_a, .param .u32 {KERNEL}_b, .param .u64 {KERNEL}_c)",
             "{", "\t.reg .pred %p<2>;", "\t.reg .b32 %r<9>;", "\t.reg .b64 %rd<12>;",
             f"\tld.param.u64 %rd0, [{KERNEL}_in];", f"\tld.param.u64 %rd1, [{KERNEL}_out];",
             f"\tld.param.u32 %r0, [{KERNEL}_a];", f"\tld.param.u32 %r1, [{KERNEL}_b];",
             f"\tld.param.u64 %rd2, [{KERNEL}_c];", "\tcvta.to.global.u64 %rd0, %rd0;",
             "\tcvta.to.global.u64 %rd1, %rd1;", "\tmov.u32 %r2, %tid.x;"]
    defined_32 = ["%r0", "%r1", "%r2"]
    for target in ("%r3", "%r4", "%r5")[:rng.randint(0, 3)]:
        op = rng.choice(OPS_32)
        lines.append(f"\t{op} {target}, {rng.choice(defined_32)}, {_source_32(rng, defined_32)};")
        defined_32.append(target)
    index = rng.choice(defined_32)
    double = rng.random() < 0.33         # 64-bit loads: the address must be a multiple of 8
    value, width = ("%rd9", 64) if double else ("%r6", 32)
    guarded = rng.random() < 0.4
    if guarded:        # a bounds check first, as CUDA code writes one (the analysis narrows)
        compare = rng.choice(["lt.s32", "lt.u32", "lo.u32", "le.s32", "gt.s32", "ge.u32",
                              "eq.s32", "ne.u32"])
        bound = rng.choice(["8", "0", "3", "%r0", "%r1", "2147483647"])
        lines.append(f"\tmov.u{width} {value}, 0;")
        if rng.random() < 0.5:
            lines += [f"\tsetp.{compare} %p0, {index}, {bound};",
                      f"\t@{rng.choice(['', '!'])}%p0 bra $L_skip;"]
        else:          # both ends, joined as nvcc joins `j >= 0 && j < n`
            low, high = rng.choice([("lt.s32", "ge.s32"), ("ge.s32", "lt.s32"),
                                    ("lt.s32", "gt.u32")])
            lines += [f"\tsetp.{low} %p0, {index}, 0;", f"\tsetp.{high} %p1, {index}, {bound};",
                      f"\t{rng.choice(['or', 'and'])}.pred %p0, %p0, %p1;",
                      f"\t@{rng.choice(['', '!'])}%p0 bra $L_skip;"]
    lines.append(f"\tmul.wide.{rng.choice('su')}32 %rd3, {index}, {rng.choice(WIDE_FACTORS)};")
    offset_64 = "%rd3"
    if rng.random() < 0.5:
        lines.append(f"\t{rng.choice(['add.s64', 'sub.s64'])} %rd4, %rd3, %rd2;")
        offset_64 = "%rd4"
    if rng.random() < 0.3:
        lines.append(f"\tshl.b64 %rd5, {offset_64}, {rng.choice([1, 2, 31, 32])};")
        offset_64 = "%rd5"
    lines.append(f"\tadd.s64 %rd6, %rd0, {offset_64};")
    offset = rng.choice(OFFSETS)
    load = f"\tld.global.u{width} {value}, [%rd6+{offset}];"     # nvcc's spelling: [%rd6+-4]
    if rng.random() < 0.4:
        trips = rng.randint(1, 3)
        total = "%rd10" if double else "%r8"
        lines += ["\tmov.u32 %r7, 0;", f"\tmov.u{width} {total}, 0;", "$L_loop:", load,
                  f"\tadd.s{width} {total}, {total}, {value};",
                  f"\tadd.s64 %rd6, %rd6, {rng.choice(STEPS)};",
                  "\tadd.s32 %r7, %r7, 1;", f"\tsetp.lt.u32 %p1, %r7, {trips};",
                  "\t@%p1 bra $L_loop;", f"\tmov.u{width} {value}, {total};"]
    else:
        lines.append(load)
    if guarded:
        lines.append("$L_skip:")
    lines += [f"\tmul.wide.u32 %rd7, %r2, {width // 8};", "\tadd.s64 %rd8, %rd1, %rd7;",
              f"\tst.global.u{width} [%rd8], {value};", "\tret;", "}"]
    block = 1        # one thread: with more, a read of `out` would race the others' stores
    out_words = block * width // 32
    def word_32() -> int:                    # half of them small, as most indices are
        if rng.random() < 0.5:
            return rng.randrange(-IN_WORDS, IN_WORDS) & 0xFFFF_FFFF
        return rng.choice(WORDS_32)

    args = ["in", "out", word_32(), word_32(),
            rng.choice(WORDS_64[:3]) if rng.random() < 0.5 else rng.choice(WORDS_64)]
    # `rest` fills the memory the buffers leave, so that every word of the machine's memory
    # is a word of the reference's too, and only an address outside it faults there
    # (with no gaps between them: even sizes keep a 64-bit kernel's 8-byte alignment)
    buffers = {"in": [rng.randrange(1 << 32) for _ in range(IN_WORDS)], "out": [0] * out_words,
               "rest": [rng.randrange(1 << 32)
                        for _ in range(MEMORY_WORDS - IN_WORDS - out_words)]}
    text = ".version 9.0\n.target sm_80\n.address_size 64\n\n" + "\n".join(lines) + "\n"
    return FuzzCase(seed=seed, ptx=text, grid=1, block=block, buffers=buffers, args=args)


Outcome = dict[str, list[int]] | str      # the buffers, or the kind of fault / trap
MISALIGNED, OUT_OF_RANGE = "misaligned address", "address out of range"   # the machine's words


def address_outcomes(case: FuzzCase, folder: Path, check: bool = True
                     ) -> tuple[Outcome, Outcome, bool]:
    """(the reference's buffers or the kind of its fault, the machine's buffers or the kind
    of its trap, whether the loader proved every access: its code is the code without
    checks)."""
    try:
        expected = ptx_reference.run_ptx(case.ptx, case.grid, case.block, case.buffers,
                                         case.args)
    except ptx_reference.PtxReferenceError as error:
        if "is not a multiple of" in str(error):
            expected = MISALIGNED
        elif "is not a word of memory" in str(error):
            expected = OUT_OF_RANGE
        else:
            raise
    (folder / f"{KERNEL}.ptx").write_text(case.ptx)
    launch = _launch(case, folder, check)
    proven = _code(launch) == _code(_launch(case, folder, not check))
    result = run_launch_sim(launch)
    if result.trap is not None:
        return expected, result.trap.kind, proven
    got = {name: [word & 0xFFFF_FFFF for word in words]
           for name, words in result.as_json()["buffers"].items()}
    return expected, got, proven


def describe_disagreement(case: FuzzCase, expected: Outcome, got: Outcome) -> str:
    return (f"seed {case.seed}: reference "
            f"{f'faults: {expected}' if isinstance(expected, str) else expected}, machine "
            f"{f'traps: {got}' if isinstance(got, str) else got}\n{case.ptx}args {case.args}")


def _launch(case: FuzzCase, folder: Path, check: bool):
    return launch_from_dict({**case.launch_json(f"{KERNEL}.ptx"), "kernel": KERNEL,
                             "check_addresses": check}, base_dir=str(folder))


def _code(launch) -> list:
    return [slot.instruction for slot in launch.program.slots]
