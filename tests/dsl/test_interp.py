"""The reference interpreter: small machines with known behaviour, step semantics, and the
compiled step checked against a plain netlist walker on the whole v1 machine."""

from __future__ import annotations

from math import prod
from pathlib import Path

import pytest

from qwengpu.dsl import semantics
from qwengpu.dsl.elaborate import elaborate_source, load_design
from qwengpu.dsl.interp import Simulator
from qwengpu.isa.asm import assemble
from qwengpu.runtime.machine_state import load_machine, new_simulator

SPECS = Path(__file__).resolve().parents[2] / "specs"
PROGRAMS = Path(__file__).with_name("programs")


def test_counter_counts_to_its_limit_and_stops():
    sim = Simulator(load_design(SPECS / "counter.hdl", {"LIMIT": 5}))
    assert [r["count"] for r in sim.run(100)] == [0, 1, 2, 3, 4, 5]
    assert sim.step() is None
    assert sim.registers == {"count": 6, "done": 1}


def tiny_word(op: int, rd: int = 0, rs: int = 0, imm: int = 0) -> int:
    return op << 14 | rd << 12 | rs << 10 | imm


def test_tiny_register_machine_sums_a_countdown():
    sim = Simulator(load_design(SPECS / "tiny.hdl"))
    halt, loadi, add, jnz = range(4)
    program = [tiny_word(loadi, 0, imm=5), tiny_word(loadi, 1, imm=0),
               tiny_word(loadi, 2, imm=255),
               tiny_word(add, 1, 0), tiny_word(add, 0, 2), tiny_word(jnz, 0, imm=3),
               tiny_word(halt)]
    sim.load_memory("prog", program)
    records = sim.run(1000)
    assert sim.memories["regs"][:2] == [0, 5 + 4 + 3 + 2 + 1]
    assert [r["pc"] for r in records[:8]] == [0, 1, 2, 3, 4, 5, 3, 4]
    assert records[-1]["op"] == halt and sim.step() is None


def test_reads_see_the_state_from_before_the_step():
    sim = Simulator(elaborate_source("""
register a : u8 = 1;
register b : u8 = 2;
memory m[2] : u8;
stage s {
    a <= b;
    b <= a;
    m[0] <= m[1] + 1;
    m[1] <= m[0] + 10;
    emit a, b, m0 = m[0];
}
"""))
    assert sim.step() == {"a": 1, "b": 2, "m0": 0}
    assert sim.registers == {"a": 2, "b": 1} and sim.memories["m"] == [1, 10]
    assert sim.step() == {"a": 2, "b": 1, "m0": 1}
    assert sim.memories["m"] == [11, 11]


def test_out_of_range_reads_give_zero_and_writes_are_dropped_later_write_wins():
    sim = Simulator(elaborate_source("""
memory m[3] : u8;
register i : u2;
stage s {
    m[i] <= 40 + zext(i, 8);  // i = 3 is out of range: dropped
    m[0] <= 1 when i == 1;
    m[0] <= 2 when i == 1;  // the later write to one element wins
    emit seen = m[i];
    i <= i + 1;
}
"""))
    sim.load_memory("m", [7, 8, 9])
    assert [sim.step()["seen"] for _ in range(4)] == [7, 8, 9, 0]
    assert sim.memories["m"] == [2, 41, 42]       # m[0]: 40 at i = 0, then 2 (not 1)


def test_a_stopped_step_changes_nothing():
    sim = Simulator(elaborate_source("""
register n : u4;
stage s { stop when n == 3; n <= n + 1; emit n; }
"""))
    assert [r["n"] for r in sim.run(10)] == [0, 1, 2]
    assert sim.step() is None and sim.registers["n"] == 3 and sim.steps == 3


def test_state_access_checks_indices_and_names():
    sim = Simulator(load_design(SPECS / "qwengpu.hdl"))
    sim.write_memory("regs", (7, 3, 14), -1)
    assert sim.read_memory("regs", (7, 3, 14)) == 0xFFFF_FFFF
    with pytest.raises(IndexError):
        sim.write_memory("regs", (8, 0, 0), 1)
    with pytest.raises(IndexError):
        sim.read_memory("regs", (0, 0))
    with pytest.raises(KeyError):
        sim.set_register("nope", 1)
    with pytest.raises(IndexError):
        sim.load_memory("mem", [0] * 127)
    sim.set_register("last_warp", 9)
    assert sim.registers["last_warp"] == 1


class NetlistWalker:
    """A second, deliberately plain simulator: evaluates node after node of the netlist with
    `semantics.evaluate`, without any of the interpreter's compilation."""

    def __init__(self, design, memories, registers):
        self.design = design
        self.memories = {name: list(values) for name, values in memories.items()}
        self.registers = dict(registers)

    def _offset(self, memory, index):
        if not all(0 <= i < n for i, n in zip(index, memory.shape)):
            return None
        offset = 0
        for i, n in zip(index, memory.shape):
            offset = offset * n + i
        return offset

    def step(self):
        values = []
        for node in self.design.nodes:
            args = [values[a] for a in node.args]
            if node.op == "const":
                value = node.value
            elif node.op == "register":
                value = self.registers[node.state]
            elif node.op == "read":
                memory = self.design.memories[node.state]
                offset = self._offset(memory, args)
                value = 0 if offset is None else self.memories[node.state][offset]
            else:
                widths = [self.design.nodes[a].width for a in node.args]
                value = semantics.evaluate(node.op, args, widths, node.width, node.low)
            values.append(value)
        if self.design.stop is not None and values[self.design.stop]:
            return None
        record = {f.name: values[f.node] for f in self.design.record}
        for write in self.design.writes:
            if not values[write.enable]:
                continue
            if write.state in self.design.registers:
                self.registers[write.state] = values[write.data]
                continue
            memory = self.design.memories[write.state]
            offset = self._offset(memory, [values[i] for i in write.index])
            if offset is not None:
                self.memories[write.state][offset] = values[write.data]
        return record


@pytest.mark.parametrize("program", [
    Path(__file__).parents[2] / "examples" / "asm" / "divergent_loop.s",
    PROGRAMS / "traps_at_the_end.s"], ids=lambda path: path.name)
def test_compiled_step_agrees_with_a_netlist_walk(program):
    source = program.read_text()
    asm = assemble(source, program.name)
    sim = new_simulator(load_machine(), asm.instructions, asm.memory, asm.params, asm.grid,
                        asm.block)
    walker = NetlistWalker(sim.design, sim.memories, sim.registers)
    steps = 0
    while True:
        expected = walker.step()
        got = sim.step()
        assert got == expected, f"step {steps}"
        assert sim.memories == walker.memories and sim.registers == walker.registers
        if got is None:
            break
        steps += 1
    assert steps > 20
    assert prod(sim.design.memories["regs"].shape) == 480
