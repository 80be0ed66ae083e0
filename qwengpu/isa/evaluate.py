"""What one instruction computes, by the spec's own semantics.

The PTX loader folds an operation whose operands are both known (`qwengpu.ptx.fold`).
Rather than a third copy of the ALU's meaning, it asks the spec: `alu_result(op, a, b)` runs
one step of the reference interpreter (`qwengpu.dsl.interp`, which compiles the spec's
netlist with the semantics table) on a one-lane, one-warp instance of specs/qwengpu.hdl
whose only instruction is `op r0, r1, r2, r3` with r1 = a, r2 = b and r3 = c, and reads the
register the record writes.  `comparison(cmp, a, b)` does the same with `setp`.  The instance is built
once per process; a step costs microseconds.
"""

from __future__ import annotations

from functools import lru_cache

from qwengpu.isa import MASK32, Cmp, Instruction, Op

SMALL = {"LANES": 1, "WARPS": 1}


@lru_cache(maxsize=1)
def _machine():
    from qwengpu.dsl.elaborate import load_design
    from qwengpu.dsl.interp import Simulator
    from qwengpu.isa.generate import DEFAULT_SPEC

    return Simulator(load_design(str(DEFAULT_SPEC), SMALL))


def _run(instruction: Instruction, a: int, b: int, c: int = 0) -> dict[str, int]:
    sim = _machine()
    sim.reset()
    sim.write_memory("prog", [0], instruction.encode())
    sim.write_memory("regs", [0, 0, 1], a & MASK32)
    sim.write_memory("regs", [0, 0, 2], b & MASK32)
    sim.write_memory("regs", [0, 0, 3], c & MASK32)
    sim.write_memory("live", [0, 0], 1)
    record = sim.step()
    if record is None or record.get("trap"):
        raise ValueError(f"{instruction} does not run on known operands")
    return record


@lru_cache(maxsize=65536)
def alu_result(op: Op, a: int, b: int, c: int = 0) -> int:
    """`op d, a, b, c` on known words (c where the operation reads it: mad, fadd.s2), as the
    spec's ALU computes it."""
    return _run(Instruction(op, d=0, a=1, b=2, c=3), a, b, c)["rval0"]


@lru_cache(maxsize=65536)
def comparison(cmp: Cmp, a: int, b: int) -> bool:
    """`setp.cmp p, a, b` on two known words, as the spec compares them."""
    record = _run(Instruction(Op.SETP, d=0, a=1, b=2, c=int(cmp)), a, b)
    return bool(record["pval"] & 1)
