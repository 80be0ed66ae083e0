"""QwenGPU v1 faults: each trap code, the lowest faulting lane, and "no effect at all".

docs/isa.md, "Faults": a faulting instruction changes nothing, its record carries the trap
code and the lowest faulting lane, and the machine stops after it.
"""

from __future__ import annotations

import pytest

from machine_harness import launch, signed_words
from qwengpu.isa import Instruction, Op, Trap
from qwengpu.runtime.machine_state import load_machine, new_simulator, run_simulator


def assert_trap(result, code: Trap, lane: int, pc: int, warp: int = 0):
    assert result.trap == code
    record = result.records[-1]
    assert result.trap_record is record
    assert (record["trap"], record["trap_lane"], record["pc"], record["warp"]) == \
        (code, lane, pc, warp)
    assert (record["rwen"], record["pwen"], record["mwen"], record["taken"],
            record["exited"]) == (0, 0, 0, 0, 0)


def test_running_into_an_empty_slot_is_a_bad_opcode():
    result = launch("    add r1, rz, 1\n")            # no exit: slot 1 is empty
    assert_trap(result, Trap.BAD_OPCODE, lane=0, pc=1)
    assert len(result.records) == 2


def test_bad_opcode_traps_even_when_the_guard_is_false():
    # An empty slot decodes as guard p0; p0 is false here, and it still traps.
    result = launch("    setp.ne p0, rz, rz\n")
    assert_trap(result, Trap.BAD_OPCODE, lane=0, pc=1)


def test_invalid_instruction_reports_the_lowest_active_lane():
    result = launch("""
.block 4
    s2r r0, tid
    setp.lt p0, r0, 2
    @p0 bra park          ; lanes 0 and 1 wait further on
    invalid               ; lanes 2 and 3 issue it first
park:
    exit
""")
    assert_trap(result, Trap.BAD_OPCODE, lane=2, pc=3)


def test_unassigned_opcode_traps():
    machine = load_machine()
    sim = new_simulator(machine, [Instruction(Op.NOP)], [], [], grid=1, block=4)
    sim.write_memory("prog", (1,), 55 | (7 << 23))          # opcode 55, guard pt
    result = run_simulator(sim)
    assert_trap(result, Trap.BAD_OPCODE, lane=0, pc=1)


def test_word_address_out_of_range_on_one_lane():
    result = launch("""
.block 4
.mem 0 11 22 33 44
    s2r r0, tid
    shl r1, r0, 2
    setp.eq p0, r0, 2
    @p0 add r1, r1, 496    ; lane 2 addresses byte 504 = word 126
    ld r2, [r1+0]
    exit
""")
    assert_trap(result, Trap.ADDRESS_RANGE, lane=2, pc=4)


def test_misaligned_address_beats_a_higher_lane_out_of_range():
    result = launch("""
.block 4
    s2r r0, tid
    shl r1, r0, 2
    setp.eq p0, r0, 1
    @p0 add r1, r1, 2      ; lane 1: byte 6, misaligned
    setp.eq p1, r0, 3
    @p1 add r1, r1, 1000   ; lane 3: out of range
    st [r1+0], r0
    exit
""")
    assert_trap(result, Trap.MISALIGNED, lane=1, pc=6)
    assert signed_words(result, 0, 4) == [0, 0, 0, 0]     # no lane stored anything


def test_negative_address_is_out_of_range():
    result = launch("    ld r1, [rz-4]\n    exit\n")
    assert_trap(result, Trap.ADDRESS_RANGE, lane=0, pc=0)


def test_faulting_load_changes_no_register():
    result = launch("""
.block 4
    add r1, rz, 7
    ld r1, [rz+1000]
    exit
""")
    assert_trap(result, Trap.ADDRESS_RANGE, lane=0, pc=1)
    assert result.records[-1]["rval0"] == 0


@pytest.mark.parametrize("instruction", ["ldp r1, 8", "s2r r1, 8", "bra 128"])
def test_bad_operand(instruction):
    result = launch(f"    nop\n    {instruction}\n    exit\n")
    assert_trap(result, Trap.BAD_OPERAND, lane=0, pc=1)


def test_faults_only_count_on_lanes_whose_guard_holds():
    result = launch("""
.block 4
    setp.ne p0, rz, rz      ; false everywhere
    @p0 ld r1, [rz+1000]
    @p0 ldp r1, 99
    exit
""")
    assert not result.trapped
    assert len(result.records) == 4


def test_the_machine_stops_after_a_trap_in_another_warp():
    result = launch("""
.block 8
    s2r r0, tid
    setp.eq p0, r0, 6
    @p0 ld r1, [rz+2]       ; thread 6 = warp 1 lane 2, misaligned
    exit
""")
    assert_trap(result, Trap.MISALIGNED, lane=2, pc=2, warp=1)
    assert [r["warp"] for r in result.records] == [0, 1, 0, 1, 0, 1]
