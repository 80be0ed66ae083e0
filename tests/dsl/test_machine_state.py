"""The launch glue: state filled as docs/isa.md says, capacity errors that say by how much."""

from __future__ import annotations

import pytest

from qwengpu.errors import CapacityError, HdlError, LaunchError
from qwengpu.isa import Instruction, Op, Special
from qwengpu.runtime.machine_state import (DEFAULT_SPEC, load_machine, new_simulator, run,
                                           signed_word)

EXIT = [Instruction(Op.EXIT)]


def test_default_spec_is_the_repository_spec():
    assert DEFAULT_SPEC.name == "qwengpu.hdl" and DEFAULT_SPEC.is_file()
    machine = load_machine()
    assert machine is load_machine(DEFAULT_SPEC)           # cached
    assert (machine.shape.lanes, machine.shape.warps, machine.shape.mem_words) == (4, 8, 126)


def test_state_is_filled_per_docs_isa():
    program = [Instruction(Op.S2R, d=1, imm=Special.TID), Instruction(Op.EXIT)]
    sim = new_simulator(None, program, [5, -1], [9, -2], grid=3, block=6)
    assert sim.memories["prog"][:3] == [program[0].encode(), program[1].encode(), 0]
    assert sim.memories["mem"][:3] == [5, 0xFFFF_FFFF, 0]
    assert sim.memories["params"][:3] == [9, 0xFFFF_FFFE, 0]
    # 3 blocks of 6 threads: 2 warps per block, 6 warps; the last two of 8 unused.
    assert [sim.read_memory("warp_ctaid", (w,)) for w in range(8)] == [0, 0, 1, 1, 2, 2, 0, 0]
    assert [sim.read_memory("warp_tid0", (w,)) for w in range(8)] == [0, 4, 0, 4, 0, 4, 0, 0]
    live = [[sim.read_memory("live", (w, lane)) for lane in range(4)] for w in range(8)]
    assert live == [[1, 1, 1, 1], [1, 1, 0, 0]] * 3 + [[0, 0, 0, 0]] * 2
    assert sim.registers == {"ntid": 6, "nctaid": 3, "last_warp": 7, "halted": 0, "trap": 0,
                             "shared_words": 0, "local_words": 0}
    assert [sim.read_memory("warp_block", (w,)) for w in range(8)] == [0, 0, 1, 1, 2, 2, 0, 0]
    assert not any(sim.memories["regs"]) and not any(sim.memories["pc"])


@pytest.mark.parametrize("kwargs, message", [
    (dict(program=EXIT * 129), "instructions in the program: 129, but the machine holds 128 "
                               "(PROG_WORDS); 1 too many"),
    (dict(memory=[0] * 130), "words in the memory image: 130, but the machine holds 126 "
                             "(MEM_WORDS); 4 too many"),
    (dict(params=[0] * 9), "parameter words: 9, but the machine holds 8 (PARAM_WORDS); "
                           "1 too many"),
    (dict(grid=3, block=12), "warps needed by the launch: 9 (3 blocks of 12 threads, 3 warps "
                             "of 4 lanes each), but the machine holds 8 (WARPS); 1 too many"),
])
def test_capacity_errors_say_what_and_by_how_much(kwargs, message):
    launch = dict(program=EXIT, memory=[], params=[], grid=1, block=4) | kwargs
    with pytest.raises(CapacityError) as caught:
        new_simulator(None, **launch)
    assert caught.value.message == message


def test_a_changed_spec_changes_what_fits():
    small = load_machine(None, {"WARPS": 2, "MEM_WORDS": 16})
    with pytest.raises(CapacityError, match="but the machine holds 2 \\(WARPS\\); 1 too many"):
        new_simulator(small, EXIT, [], [], grid=3, block=4)
    with pytest.raises(CapacityError, match="holds 16 \\(MEM_WORDS\\); 1 too many"):
        new_simulator(small, EXIT, [0] * 17, [], grid=1, block=4)
    assert not run(small, EXIT, [0] * 16, [], grid=2, block=4).trapped


def test_bad_grid_or_block():
    with pytest.raises(LaunchError, match="at least 1"):
        new_simulator(None, EXIT, [], [], grid=0, block=4)


def test_endless_loop_is_reported():
    """It names the warps the last records ran, their live lanes and the pcs they went round."""
    program = [Instruction(Op.S2R, d=1, imm=Special.TID), Instruction(Op.BRA, imm=2),
               Instruction(Op.BRA, imm=1)]
    with pytest.raises(LaunchError, match=r"did not finish within 50 records \(an endless "
                                          r"loop\?\); its last 50 records ran warp 0 \(lanes "
                                          r"0,1,2,3\) at pcs 0, 1, 2; warp 1 \(lanes 0,1\) at "
                                          r"pcs 0, 1, 2$"):
        run(None, program, [], [], grid=1, block=6, max_records=50)


def test_a_spec_that_is_not_a_qwengpu_machine_is_rejected(tmp_path):
    counter = DEFAULT_SPEC.with_name("counter.hdl")
    with pytest.raises(HdlError, match="not a QwenGPU machine"):
        load_machine(counter)


def test_run_returns_records_memory_and_trap():
    program = [Instruction(Op.S2R, d=1, imm=Special.TID),
               Instruction(Op.SHL, d=2, a=1, bimm=True, imm=2),
               Instruction(Op.SUB, d=3, a=15, b=1),
               Instruction(Op.ST, a=2, b=3), Instruction(Op.EXIT)]
    result = run(None, program, [], [], grid=1, block=8)
    assert [signed_word(w) for w in result.memory[:8]] == [-t for t in range(8)]
    assert len(result.records) == 10 and not result.trapped and result.trap_record is None


@pytest.mark.parametrize("emit,missing", [
    ("emit mwen, maddr when mwen, mval when mwen;\n    emit (trap = trap_code, released);",
     "lacks trap_lane:"),
    ("emit mwen, maddr when mwen;\n    emit (trap = trap_code, released), trap_lane when trap;",
     "lacks mval0, mval1, mval2, mval3:")])
def test_a_spec_that_leaves_out_a_record_field_the_runtime_reads_is_rejected(tmp_path, emit,
                                                                             missing):
    """A spec whose emit statements lack a field of docs/isa.md's record table is refused
    when it is loaded (naming the fields and the spec's last emitted field's line), not with
    a KeyError when a trace or a trap first reads it."""
    text = DEFAULT_SPEC.read_text()
    original = ("emit mwen, maddr when mwen, mval when mwen;\n"
                "    emit (trap = trap_code, released), trap_lane when trap;")
    assert original in text
    spec = tmp_path / "short_record.hdl"
    spec.write_text(text.replace(original, emit))
    with pytest.raises(HdlError, match=missing) as caught:
        load_machine(spec)
    assert caught.value.loc.file == str(spec) and caught.value.loc.line > 1
