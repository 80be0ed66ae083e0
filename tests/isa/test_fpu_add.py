"""The FPU's add on the reference interpreter, against numpy's float32 addition.

`fadd.s1 r3, r1, r2` then `fadd.s2 r4, r1, r2, r3` must leave in r4 the binary32 sum of r1 and
r2, rounded to nearest even, subnormals kept, NaN results canonical (0x7FFFFFFF): checked on
10^5 operand pairs, 10^6 in the extra tier (tests/fpu_helpers.py: uniform bit patterns,
specials, subnormals, cancellation, rounding ties, overflow) on an instance of
specs/qwengpu.hdl with 32 lanes (the FPU is per lane; more lanes only check more pairs a
step), and on hand-picked edge cases on the default machine.  The loader's constant folding
(`qwengpu.ptx.fold`) runs the same spec.
"""

from __future__ import annotations

import numpy as np
import pytest

from qwengpu.dsl.elaborate import load_design
from qwengpu.dsl.interp import Simulator
from qwengpu.isa import Instruction, Op
from qwengpu.ptx import fold
from fpu_helpers import SPEC, operand_pairs, reference_add
from tiers import first_by_default

WIDE = 32
PROGRAM = [Instruction(Op.FADD1, d=3, a=1, b=2), Instruction(Op.FADD2, d=4, a=1, b=2, c=3)]


def machine(lanes: int) -> Simulator:
    return Simulator(load_design(str(SPEC), {"LANES": lanes, "WARPS": 1}))


def interpreter_sums(sim: Simulator, lanes: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """r4 after the two instructions, for each pair, `lanes` pairs a launch."""
    out = np.empty_like(a)
    for start in range(0, len(a), lanes):
        sim.reset()
        for slot, instruction in enumerate(PROGRAM):
            sim.write_memory("prog", [slot], instruction.encode())
        for lane in range(lanes):
            sim.write_memory("regs", [0, lane, 1], int(a[start + lane]))
            sim.write_memory("regs", [0, lane, 2], int(b[start + lane]))
            sim.write_memory("live", [0, lane], 1)
        first, second = sim.step(), sim.step()
        assert first["op"] == Op.FADD1 and second["op"] == Op.FADD2
        out[start:start + lanes] = [second[f"rval{lane}"] for lane in range(lanes)]
    return out


def first_difference(a, b, got, want) -> str:
    index = int(np.flatnonzero(got != want)[0])
    return (f"{int((got != want).sum())} of {len(a)} differ; first: {a[index]:#010x} + "
            f"{b[index]:#010x} gave {got[index]:#010x}, numpy {want[index]:#010x}")


@pytest.mark.parametrize("pairs", first_by_default([100_000, 1_000_000]))
def test_the_pairs_match_numpy(pairs):
    a, b = operand_pairs(np.random.default_rng(2026), pairs)
    got = interpreter_sums(machine(WIDE), WIDE, a, b)
    want = reference_add(a, b)
    assert np.array_equal(got, want), first_difference(a, b, got, want)


EDGES = [  # (a, b, a + b) as bits
    (0x3FC00000, 0x40100000, 0x40700000),      # 1.5 + 2.25 = 3.75
    (0x3F800000, 0x33800000, 0x3F800000),      # 1 + 2^-24: a tie, to even (down)
    (0x3F800001, 0x33800000, 0x3F800002),      # 1+ulp + 2^-24: a tie, to even (up)
    (0x4B800000, 0x3F800000, 0x4B800000),      # 2^24 + 1: a tie, 2^24
    (0x40400000, 0xC0400000, 0x00000000),      # 3 + -3 = +0
    (0x80000000, 0x80000000, 0x80000000),      # -0 + -0 = -0
    (0x80000000, 0x00000000, 0x00000000),      # -0 + +0 = +0
    (0x00000001, 0x00000001, 0x00000002),      # subnormals add exactly
    (0x00800000, 0x807FFFFF, 0x00000001),      # normal - subnormal = the least subnormal
    (0x7F7FFFFF, 0x7F7FFFFF, 0x7F800000),      # overflow to +inf
    (0x7F7FFFFF, 0x73000000, 0x7F800000),      # rounds up into +inf (a tie, odd)
    (0x7F800000, 0xFF800000, 0x7FFFFFFF),      # inf - inf: the canonical NaN
    (0xFF800000, 0x3F800000, 0xFF800000),      # -inf + 1
    (0xFFC00001, 0x3F800000, 0x7FFFFFFF),      # a NaN's payload is not kept
]


@pytest.mark.parametrize("a, b, expected", EDGES, ids=[f"{a:08x}+{b:08x}" for a, b, _ in EDGES])
def test_edge_cases_on_the_default_machine(a, b, expected):
    want = reference_add(np.array([a], np.uint32), np.array([b], np.uint32))[0]
    assert want == expected, "the table itself is wrong"
    got = interpreter_sums(machine(4), 4, np.array([a, b, b, a], np.uint32),
                           np.array([b, a, a, b], np.uint32))
    assert list(got) == [expected] * 4


def test_folding_adds_known_operands_with_the_spec():
    a, b = operand_pairs(np.random.default_rng(7), 200)
    got = [fold.fold(Op.FADD2, int(x), int(y), fold.fold(Op.FADD1, int(x), int(y)))
           for x, y in zip(a, b)]
    assert got == list(reference_add(a, b))
