"""The range analysis that lets the loader leave out address checks (`qwengpu.ptx.ranges`,
docs/ptx.md "Memory"): its interval arithmetic on wrapping bits, the loops it bounds and the
ones it must not, the records bound it rests on, and what it is for: every launch of the
example corpus compiles to the same code with the checks as without them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptx_harness import HEADER
from qwengpu.cli import main
from qwengpu.errors import CapacityError
from qwengpu.isa import MAX_LAUNCH_RECORDS
from qwengpu.ptx.cfg import Block, loops
from qwengpu.ptx.parser import parse_ptx
from qwengpu.ptx.program import MachineLimits
from qwengpu.ptx.ranges import default_facts, fit, join, proven_accesses, signed_view, unsigned_view
from qwengpu.runtime.launch import launch_from_dict, run_launch_sim

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_ranges_wrap_like_the_bits_they_stand_for():
    assert fit(-1, 0, 32) == ((1 << 32) - 1, 1 << 32)           # -1..0: two values
    assert signed_view(fit(-1, 0, 32), 32) == (-1, 0)
    assert unsigned_view(fit(-1, 0, 32), 32) == (0, (1 << 32) - 1)   # 0xFFFFFFFF..0: all
    assert fit(0, (1 << 32) - 1, 32) is None                    # every bit pattern
    assert fit(5, 7, 8) == (5, 7) and fit(261, 263, 8) == (5, 7)
    assert join((0, 0), fit(-1, -1, 32), 32) == fit(-1, 0, 32)   # not 0..0xFFFFFFFF
    assert join((0, 3), (10, 12), 32) == (0, 12)
    assert join(None, (1, 1), 32) is None
    assert signed_view((0x8000_0000, 0x8000_0001), 32) == (-(1 << 31), -(1 << 31) + 1)
    assert signed_view((0x7FFF_FFFF, 0x8000_0000), 32) == (-(1 << 31), (1 << 31) - 1)


def test_loops_dominators_and_cycles_entered_midway():
    """Block graphs drawn by hand: 0 -> 1 -> 2 -> 3 with 2 looping on itself and 3 back to 1
    (nested natural loops), and 0 branching into both 1 and 2 of a 1 <-> 2 cycle (no head
    dominates it: every block of it must widen)."""
    nested = [Block([], [1]), Block([], [2]), Block([], [2, 3]), Block([], [1, 4]), Block([], [])]
    natural, heads, dominators = loops(nested)
    assert natural == {1: {1, 2, 3}, 2: {2}} and heads == {1, 2}
    assert dominators[4] == {0, 1, 2, 3, 4}
    midway = [Block([], [1, 2]), Block([], [2]), Block([], [1, 3]), Block([], [])]
    natural, heads, dominators = loops(midway)
    assert natural == {} and heads == {1, 2} and dominators[2] == {0, 2}


def test_a_pointer_stepped_round_a_cycle_entered_midway_keeps_its_check():
    text = _loop("add.s64 %rd1, %rd1, 4;").replace(
        "    mov.u32 %r3, 0;\n", "    mov.u32 %r3, 0;\n    setp.eq.u32 %p1, %r2, 0;\n"
        "    @%p1 bra $L_middle;\n").replace("    add.s32 %r3, %r3, %r4;\n",
                                            "$L_middle:\n    add.s32 %r3, %r3, %r4;\n")
    assert "$L_middle:" in text and "@%p1 bra $L_middle;" in text
    assert _proven(text) == ["st.global.u32 [%rd2], %r3;"]


def _loop(step_pointer: str, step_counter: str = "add.s32 %r1, %r1, 1;") -> str:
    """One thread sums `in` through a pointer it steps, counting to the u32 parameter n."""
    return HEADER + f""".visible .entry k(.param .u64 k_in, .param .u64 k_out, .param .u32 k_n)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [k_in];
    ld.param.u64 %rd2, [k_out];
    ld.param.u32 %r2, [k_n];
    mov.u32 %r1, 1;
    mov.u32 %r3, 0;
$L_loop:
    ld.global.u32 %r4, [%rd1];
    add.s32 %r3, %r3, %r4;
    {step_pointer}
    {step_counter}
    setp.lt.s32 %p1, %r1, %r2;
    @%p1 bra $L_loop;
    st.global.u32 [%rd2], %r3;
    ret;
}}
"""


def _proven(text: str) -> list[str]:
    """The accesses (PTX text) whose address the analysis proves, under any launch's facts."""
    module = parse_ptx(text, "k.ptx")
    kernel = module.kernels["k"]
    proven, _ = proven_accesses(kernel, default_facts(kernel, MachineLimits(), 8), set())
    return [ins.text for ins in kernel.body if id(ins) in proven]


def test_a_pointer_stepped_by_the_element_size_is_proven():
    assert _proven(_loop("add.s64 %rd1, %rd1, 4;")) == ["ld.global.u32 %r4, [%rd1];",
                                                        "st.global.u32 [%rd2], %r3;"]
    # stepped through a copy, as nvcc writes a loop that counts down
    copied = _loop("add.s64 %rd3, %rd1, -4;\n    mov.u64 %rd1, %rd3;")
    assert "ld.global.u32 %r4, [%rd1];" in _proven(copied)


@pytest.mark.parametrize("step", [
    "add.s64 %rd1, %rd1, 1024;",                 # 2^24 records x 1024 bytes reach 2^34
    "add.s64 %rd1, %rd1, %rd1;",                 # doubles: no step bound
    "add.s64 %rd1, %rd1, %rd4;\n    cvt.u64.u32 %rd4, %r4;",   # a step the loop changes
    "@%p1 add.s64 %rd3, %rd1, 4;\n    mov.u64 %rd1, %rd3;",    # a copy of a maybe-stale sum
    "add.s64 %rd3, %rd1, 4;\n    mov.u64 %rd1, %rd3;\n    mov.u64 %rd3, 0;",
])
def test_a_pointer_the_analysis_cannot_bound_keeps_its_check(step):
    assert _proven(_loop(step)) == ["st.global.u32 [%rd2], %r3;"]


def _gather(check: str) -> str:
    """One thread loads an index from `in` and, past a bounds check, `in[index]`."""
    return HEADER + f""".visible .entry k(.param .u64 k_in, .param .u64 k_out)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [k_in];
    ld.param.u64 %rd2, [k_out];
    mov.u32 %r2, 0;
    ld.global.u32 %r1, [%rd1];
    {check}
    mul.wide.s32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r2, [%rd4];
$L_out:
    st.global.u32 [%rd2], %r2;
    ret;
}}
"""


GATHER = "ld.global.u32 %r2, [%rd4];"


def test_a_bounds_check_before_an_access_proves_it():
    assert GATHER in _proven(_gather("setp.ge.u32 %p1, %r1, 8;\n    @%p1 bra $L_out;"))
    assert GATHER in _proven(_gather("setp.lo.u32 %p1, %r1, 8;\n    @!%p1 bra $L_out;"))
    # both signed halves, as `if (i >= 0 && i < 8)` compiles without the unsigned trick
    both = "setp.lt.s32 %p1, %r1, 0;\n    @%p1 bra $L_out;\n    setp.gt.s32 %p1, %r1, 7;" \
           "\n    @%p1 bra $L_out;"
    assert GATHER in _proven(_gather(both))


@pytest.mark.parametrize("check", [
    "",                                                       # no check: any index
    "setp.ge.s32 %p1, %r1, 8;\n    @%p1 bra $L_out;",         # signed: -2^31 still passes
    "setp.ge.u32 %p1, %r1, 8;\n    @!%p1 bra $L_out;",        # the wrong way round
    # the index is loaded again between the compare and the branch: the compare is stale
    "setp.ge.u32 %p1, %r1, 8;\n    ld.global.u32 %r1, [%rd1+4];\n    @%p1 bra $L_out;",
])
def test_a_check_that_does_not_bound_the_index_proves_nothing(check):
    assert GATHER not in _proven(_gather(check))


def test_the_bound_rests_on_the_records_limit(tmp_path, capsys):
    assert MAX_LAUNCH_RECORDS == 1 << 24
    launch = tmp_path / "launch.json"
    launch.write_text(json.dumps({"source": str(EXAMPLES / "vector_add" / "kernel.ptx"),
                                  **{key: value for key, value in json.loads(
                                      (EXAMPLES / "vector_add" / "launch.json").read_text()).items()
                                     if key != "source"}}))
    assert main(["run", str(launch), "--max-records", str(MAX_LAUNCH_RECORDS + 1)]) == 1
    assert "--max-records must be 1 .. 16777216" in capsys.readouterr().err
    assert main(["run", str(launch), "--max-records", str(MAX_LAUNCH_RECORDS)]) == 0


def _example_launches() -> list[Path]:
    return sorted(path for path in EXAMPLES.rglob("launch.json"))


# Examples whose accesses the analysis does not all prove, and why (each must still differ).
NOT_ALL_PROVEN = {
    # nvcc's 4x unrolled k loop steps the b pointer by p * 4 through a chain of four adds
    # (rd22 = rd30 + s, ..., rd30 = rd24 + s); the drift bound follows one add only
    "matmul": "a pointer stepped by a chain of adds",
}


def test_every_example_compiles_to_the_same_code_with_the_checks():
    """The checks are the default because they cost the corpus nothing: every access of
    every example is proven (a change to the analysis that loses one shows here, before the
    committed results of the corpus inside the model stop matching), but those of
    NOT_ALL_PROVEN.  Each example's checked-in PTX is read, which is nvcc's output
    (tests/test_examples.py::test_checked_in_ptx_matches_source), so nvcc runs once an
    example in a test run, not twice more here."""
    compared = 0
    for path in _example_launches():
        data = json.loads(path.read_text())
        if (path.parent / "kernel.ptx").is_file():
            data["source"] = "kernel.ptx"
        codes = []
        for check in (True, False):
            try:
                launch = launch_from_dict({**data, "check_addresses": check},
                                          base_dir=str(path.parent))
            except CapacityError:
                codes.append(None)
                continue
            codes.append([slot.instruction for slot in launch.program.slots])
        if path.parent.name in NOT_ALL_PROVEN:
            assert codes[0] != codes[1], f"{path.parent.name} is proven now: drop it"
            continue
        assert codes[0] == codes[1], path.parent.name
        compared += codes[0] is not None
    assert compared >= 30


BOUNDS = Path(__file__).resolve().parent / "data" / "bounds.ptx"     # nvcc's, from bounds.cu
INDICES = [0, 3, -1, 1 << 30]


def _gather_launch(kernel: str, check: bool = True):
    args = ["idx", "a", "out", 4, 4] if kernel == "gather_checked" else ["idx", "a", "out", 4]
    return launch_from_dict({"source": str(BOUNDS), "kernel": kernel, "grid": 1, "block": 4,
                             "buffers": {"idx": INDICES, "a": [10, 11, 12, 13],
                                         "out": [0, 0, 0, 0]},
                             "args": args, "check_addresses": check})


def test_nvccs_bounds_checked_gather_needs_no_check():
    """nvcc writes `j >= 0 && j < n` as two setp and an or.pred before the branch."""
    assert "or.pred" in BOUNDS.read_text()
    launch = _gather_launch("gather_checked")
    assert [slot.instruction for slot in launch.program.slots] == \
        [slot.instruction for slot in _gather_launch("gather_checked", False).program.slots]
    result = run_launch_sim(launch)
    assert result.trap is None and result.as_json()["buffers"]["out"] == [10, 13, -1, -1]


def test_an_unchecked_gather_keeps_its_check_and_traps_past_four_gigabytes():
    launch = _gather_launch("gather_unchecked")
    assert len(launch.program.slots) > len(_gather_launch("gather_unchecked", False).program.slots)
    result = run_launch_sim(launch)
    assert result.trap is not None and "address out of range" in result.trap.message
