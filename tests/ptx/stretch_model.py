"""A vectorised model of a stretch of QwenGPU code, for the float routines' million-operand tests.

The loader lowers `mul.f32` to some 50 machine instructions without a branch (guards only),
`div` and `sqrt` to loops whose trip count is the same in every lane.  Running a million
operand pairs through the interpreter would take hours; this model runs a compiled row
kernel's stretch between its loads and its store over numpy uint32 arrays, one element a
lane, the way docs/isa.md defines each instruction: the ALU's integer operations, SETP's
comparisons, SELP, the predicate operations, guards, branches that every lane takes alike,
and the FPU's add pair (fadd.s1's word is only read by the fadd.s2 of the same operands, so
the pair is numpy's float32 addition with PTX's canonical NaN).  It shares no code with the
loader or the interpreter; the float routines' tests check it against the interpreter on
thousands of rows, then run it on the million.
"""

from __future__ import annotations

import numpy as np

from qwengpu.isa import PT, RZ, Op

from fpu_helpers import reference_add

def _signed(x: np.ndarray) -> np.ndarray:
    return x.view(np.int32)


def _shift_amount_ok(b: np.ndarray) -> np.ndarray:
    return b < 32


def _shl(a, b):
    return np.where(_shift_amount_ok(b), a << np.minimum(b, 31), 0).astype(np.uint32)


def _shr_u(a, b):
    return np.where(_shift_amount_ok(b), a >> np.minimum(b, 31), 0).astype(np.uint32)


def _shr_s(a, b):
    return (_signed(a) >> np.minimum(b, 31).astype(np.int32)).view(np.uint32)


def _mulhi_u(a, b):
    return ((a.astype(np.uint64) * b.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32)


ALU = {
    Op.ADD: lambda a, b: a + b,
    Op.SUB: lambda a, b: a - b,
    Op.MUL: lambda a, b: a * b,
    Op.MULHI_U: _mulhi_u,
    Op.MIN_U: np.minimum,
    Op.MAX_U: np.maximum,
    Op.MIN_S: lambda a, b: np.minimum(_signed(a), _signed(b)).view(np.uint32),
    Op.MAX_S: lambda a, b: np.maximum(_signed(a), _signed(b)).view(np.uint32),
    Op.AND: lambda a, b: a & b,
    Op.OR: lambda a, b: a | b,
    Op.XOR: lambda a, b: a ^ b,
    Op.SHL: _shl,
    Op.SHR_U: _shr_u,
    Op.SHR_S: _shr_s,
}
COMPARE = [lambda a, b: a == b, lambda a, b: a != b,
           lambda a, b: _signed(a) < _signed(b), lambda a, b: _signed(a) <= _signed(b),
           lambda a, b: _signed(a) > _signed(b), lambda a, b: _signed(a) >= _signed(b),
           lambda a, b: a < b, lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b]
PREDICATE = {Op.PAND: np.logical_and, Op.POR: np.logical_or, Op.PXOR: np.not_equal}


def row_stretch(slots) -> tuple[list, list[int], int]:
    """The instructions between a row kernel's last load and its first store (or the load
    of the output pointer before it), as (slot index, instruction) pairs, the registers the loads wrote (its inputs, in load
    order) and the register the store reads."""
    ops = [slot.instruction for slot in slots]
    loads = [i for i, ins in enumerate(ops) if ins.op == Op.LD]
    store = next(i for i, ins in enumerate(ops) if ins.op == Op.ST)
    # the output pointer's parameter may be loaded between the arithmetic and the store
    end = next(i for i in range(loads[-1] + 1, store + 1) if ops[i].op in (Op.LDP, Op.ST))
    stretch = list(enumerate(ops))[loads[-1] + 1:end]
    return stretch, [ops[i].d for i in loads], ops[store].b


def run_stretch(instructions, inputs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Every lane runs `instructions` from registers `inputs`; returns the registers that
    follow from the inputs alone (an instruction that reads another register, such as the
    store's address arithmetic, leaves its destination out)."""
    n = len(next(iter(inputs.values())))
    registers = {index: np.asarray(words, np.uint32) for index, words in inputs.items()}
    registers[RZ] = np.zeros(n, np.uint32)
    predicates = {PT: np.ones(n, bool)}
    pending_sums = {}

    def register(index):
        return registers[index]

    where = {slot: position for position, (slot, _) in enumerate(instructions)}
    position = 0
    while position < len(instructions):
        ins = instructions[position][1]
        position += 1
        if ins.op == Op.BRA:
            taken = predicates[ins.pg] if not ins.pn else ~predicates[ins.pg]
            assert taken.all() or not taken.any(), "a branch the lanes take apart"
            if taken.all():
                position = where[ins.imm]
            continue
        reads = [] if ins.op in PREDICATE else [ins.a]
        if not ins.bimm and ins.op not in PREDICATE:
            reads.append(ins.b)
        if ins.op == Op.FADD2:
            reads.append(ins.c)
        if any(index not in registers for index in reads):
            (predicates if ins.op == Op.SETP else registers).pop(ins.d, None)
            continue
        a = register(ins.a) if ins.op not in PREDICATE else None
        b = np.full(n, ins.imm, np.uint32) if ins.bimm else \
            (register(ins.b) if ins.op not in PREDICATE else None)
        guard = predicates[ins.pg] if not ins.pn else ~predicates[ins.pg]
        if ins.op in ALU:
            with np.errstate(over="ignore"):
                value = ALU[ins.op](a, b).astype(np.uint32)
        elif ins.op == Op.SELP:
            value = np.where(predicates[ins.c], a, b)
        elif ins.op == Op.FADD1:
            pending_sums[ins.d] = (ins.a, ins.b, ins.bimm, ins.imm)
            value = np.zeros(n, np.uint32)          # read only by its fadd.s2
        elif ins.op == Op.FADD2:
            assert pending_sums.get(ins.c) == (ins.a, ins.b, ins.bimm, ins.imm), \
                "fadd.s2 reads the fadd.s1 word of other operands"
            value = reference_add(a, b)      # numpy's float32 sum, canonical NaN
        elif ins.op == Op.SETP:
            flags = COMPARE[ins.c](a, b)
            predicates[ins.d] = np.where(guard, flags, predicates.get(ins.d, False))
            continue
        elif ins.op in PREDICATE:
            flags = PREDICATE[ins.op](predicates[ins.a], predicates[ins.b])
            predicates[ins.d] = np.where(guard, flags, predicates.get(ins.d, False))
            continue
        else:
            raise AssertionError(f"{ins.op.name} in a straight-line stretch")
        if ins.d != RZ:
            old = registers.get(ins.d, np.zeros(n, np.uint32))
            registers[ins.d] = np.where(guard, value, old).astype(np.uint32)
    return registers
