"""Helpers for the tests of the QwenGPU v1 machine: run assembly, read words back.

Expected values in the tests are computed by plain Python per thread, never by the machine.
"""

from __future__ import annotations

from qwengpu.isa.asm import assemble
from qwengpu.runtime.machine_state import MachineRun, load_machine, run

MASK32 = 0xFFFF_FFFF
INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1


def u32(value: int) -> int:
    return value & MASK32


def s32(value: int) -> int:
    value &= MASK32
    return value - (1 << 32) if value >> 31 else value


def launch(source: str, overrides: dict[str, int] | None = None,
           max_records: int = 100_000) -> MachineRun:
    """Assemble `source` and run it to the end on the default spec (with overrides)."""
    program = assemble(source, "test.s")
    machine = load_machine(None, overrides)
    return run(machine, program.instructions, program.memory, program.params, program.grid,
               program.block, max_records)


def mem_line(address: int, values: list[int]) -> str:
    """A `.mem` directive for these (possibly negative) words."""
    return f".mem {address} " + " ".join(str(v) for v in values)


def signed_words(result: MachineRun, start: int, count: int) -> list[int]:
    return [s32(w) for w in result.memory[start:start + count]]


def unsigned_words(result: MachineRun, start: int, count: int) -> list[int]:
    return list(result.memory[start:start + count])
