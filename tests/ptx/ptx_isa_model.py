"""An independent, plain-Python model of the QwenGPU ISA (docs/isa.md), for the loader's tests.

It runs a list of `qwengpu.isa.Instruction`s the way docs/isa.md describes the machine:
barrel round-robin over warps, min-PC issue within a warp, the exec mask, the ALU table,
faults that stop the machine with nothing written, the windows of shared and local memory,
serial instructions one lane a step.  It exists so that the lowering tests do not depend on the HDL interpreter being finished, and as a second opinion next to it; it
shares no code with the loader (the expected values of the tests come from plain Python
semantics of PTX, written in the tests themselves).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from qwengpu.isa import Instruction, Op

M = 0xFFFF_FFFF


def _s(x: int) -> int:
    x &= M
    return x - (1 << 32) if x >> 31 else x


ALU = {
    Op.ADD: lambda a, b, c: a + b,
    Op.SUB: lambda a, b, c: a - b,
    Op.MUL: lambda a, b, c: a * b,
    Op.MULHI_S: lambda a, b, c: (_s(a) * _s(b)) >> 32,
    Op.MULHI_U: lambda a, b, c: (a * b) >> 32,
    Op.MAD: lambda a, b, c: a * b + c,
    Op.ABS: lambda a, b, c: abs(_s(a)),
    Op.MIN_S: lambda a, b, c: min(_s(a), _s(b)),
    Op.MIN_U: lambda a, b, c: min(a, b),
    Op.MAX_S: lambda a, b, c: max(_s(a), _s(b)),
    Op.MAX_U: lambda a, b, c: max(a, b),
    Op.AND: lambda a, b, c: a & b,
    Op.OR: lambda a, b, c: a | b,
    Op.XOR: lambda a, b, c: a ^ b,
    Op.SHL: lambda a, b, c: a << b if b < 32 else 0,
    Op.SHR_U: lambda a, b, c: a >> b if b < 32 else 0,
    Op.SHR_S: lambda a, b, c: _s(a) >> min(b, 31),
}


def _fadd_sum_word(a: int, b: int, c: int) -> int:
    """fadd.s1 as docs/isa.md words it: the larger magnitude's sign in bit 31 and, in bits
    27..0, its significand (hidden bit, 3 guard bits) plus or minus the smaller one shifted
    right by the exponents' difference, the bits shifted out ORed into bit 0."""
    x, y = (b, a) if b & 0x7FFF_FFFF > a & 0x7FFF_FFFF else (a, b)

    def scaled(word):
        field = word >> 23 & 0xFF
        return max(field, 1), ((word & 0x7F_FFFF) | (1 << 23 if field else 0)) << 3

    (ex, mx), (ey, my) = scaled(x), scaled(y)
    shift = ex - ey
    aligned = (my >> shift) | (my & ((1 << shift) - 1) != 0)
    total = mx - aligned if (a ^ b) >> 31 else mx + aligned
    return (x & 0x8000_0000) | total


def _float_sum(a: int, b: int, c: int) -> int:
    """fadd.s2 (after fadd.s1 of the same a and b): the binary32 sum, as numpy's float32 adds
    it, NaN results the canonical 0x7FFFFFFF."""
    x, y = (np.float32(struct.unpack("<f", struct.pack("<I", w))[0]) for w in (a, b))
    with np.errstate(all="ignore"):
        total = x + y
    return 0x7FFF_FFFF if np.isnan(total) else struct.unpack("<I", struct.pack("<f", total))[0]


ALU[Op.FADD1] = _fadd_sum_word
ALU[Op.FADD2] = _float_sum
CMP = [lambda a, b: a == b, lambda a, b: a != b, lambda a, b: _s(a) < _s(b),
       lambda a, b: _s(a) <= _s(b), lambda a, b: _s(a) > _s(b), lambda a, b: _s(a) >= _s(b),
       lambda a, b: a < b, lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b]


ATOMIC = {
    Op.ATOM_ADD: lambda w, b, c: w + b,
    Op.ATOM_MIN_S: lambda w, b, c: min(_s(w), _s(b)),
    Op.ATOM_MIN_U: lambda w, b, c: min(w, b),
    Op.ATOM_MAX_S: lambda w, b, c: max(_s(w), _s(b)),
    Op.ATOM_MAX_U: lambda w, b, c: max(w, b),
    Op.ATOM_AND: lambda w, b, c: w & b,
    Op.ATOM_OR: lambda w, b, c: w | b,
    Op.ATOM_XOR: lambda w, b, c: w ^ b,
    Op.ATOM_EXCH: lambda w, b, c: b,
    Op.ATOM_CAS: lambda w, b, c: c if w == b else w,
    Op.ATOM_INC: lambda w, b, c: 0 if w >= b else w + 1,
    Op.ATOM_DEC: lambda w, b, c: b if w == 0 or w > b else w - 1,
}
SERIAL = set(ATOMIC) | {Op.ST_U8, Op.ST_U16}
MEMORY_OPS = SERIAL | {Op.LD, Op.ST}


@dataclass
class Windows:
    """Shared memory (a window a block) and local memory (a window a thread) as the launch lays
    them out: word counts and first words."""

    shared_words: int = 0
    local_words: int = 0
    shared_bases: tuple = ()
    local_bases: tuple = ()     # per block, per thread in block


@dataclass
class ModelResult:
    memory: list[int]
    records: int
    trap: tuple[int, int, int, int] | None   # (code, warp, lane, pc)


def _merge(word: int, value: int, byte: int, size: int) -> int:
    shift, mask = 8 * byte, (1 << (8 * size)) - 1
    return (word & ~(mask << shift) & M) | ((value & mask) << shift)


def run_model(program: list[Instruction], memory: list[int], params: list[int], grid: int,
              block: int, lanes: int = 4, mem_words: int = 126, max_steps: int = 200_000,
              windows: Windows | None = None) -> ModelResult:
    windows = windows or Windows()
    memory = list(memory)
    warps_per_block = -(-block // lanes)
    warps = grid * warps_per_block
    regs = [[[0] * 16 for _ in range(lanes)] for _ in range(warps)]
    preds = [[[False] * 8 for _ in range(lanes)] for _ in range(warps)]
    pcs = [[0] * lanes for _ in range(warps)]
    live = [[(w % warps_per_block) * lanes + l < block for l in range(lanes)]
            for w in range(warps)]
    waiting = [False] * warps
    last = warps - 1
    steps = 0

    def window(space, warp, lane):
        """(first word, words) of the access's space for this thread; None: no such space."""
        block_index, thread = warp // warps_per_block, (warp % warps_per_block) * lanes + lane
        if space == 0:
            return 0, mem_words
        if space == 1:
            base = windows.shared_bases[block_index] if windows.shared_words else 0
            return base, windows.shared_words
        if space == 2:
            base = windows.local_bases[block_index][thread] if windows.local_words and \
                thread < block else 0
            return base, windows.local_words
        return None

    while steps < max_steps:
        order = [(last + 1 + k) % warps for k in range(warps)]
        warp = next((w for w in order if any(live[w]) and not waiting[w]), None)
        if warp is None:
            return ModelResult(memory, steps, None)
        steps += 1
        pc = min(pcs[warp][l] for l in range(lanes) if live[warp][l])
        active = [live[warp][l] and pcs[warp][l] == pc for l in range(lanes)]
        ins = program[pc] if pc < len(program) else Instruction(Op.INVALID)
        rf, pf = regs[warp], preds[warp]

        def reg(lane, index):
            return 0 if index == 15 else rf[lane][index]

        def pred(lane, index):
            return True if index == 7 else pf[lane][index]

        exec_mask = [active[l] and (pred(l, ins.pg) != ins.pn) for l in range(lanes)]
        runs = list(exec_mask)
        if ins.op in SERIAL and any(exec_mask):       # one lane a step: the lowest
            first = exec_mask.index(True)
            runs = [l == first for l in range(lanes)]
        writes, pwrites, stores, trap = {}, {}, {}, None
        for lane in range(lanes):
            if not runs[lane]:
                continue
            a = reg(lane, ins.a)
            b = ins.imm if ins.bimm else reg(lane, ins.b)
            op = ins.op
            if op in ALU:
                writes[lane] = ALU[op](a, b, reg(lane, ins.c)) & M
            elif op == Op.SETP:
                pwrites[lane] = ins.c < 10 and CMP[ins.c](a, b)
            elif op == Op.SELP:
                writes[lane] = a if pred(lane, ins.c) else b
            elif op in (Op.PAND, Op.POR, Op.PXOR):
                x, y = pred(lane, ins.a), pred(lane, ins.b)
                pwrites[lane] = {Op.PAND: x and y, Op.POR: x or y, Op.PXOR: x != y}[op]
            elif op == Op.PNOT:
                pwrites[lane] = not pred(lane, ins.a)
            elif op in MEMORY_OPS:
                offset = (a + ins.imm) & M
                place = window(ins.space, warp, lane)
                alignment = {Op.ST_U8: 1, Op.ST_U16: 2}.get(op, 4)
                if offset % alignment:
                    trap = trap or (3, lane)
                elif place is None or offset // 4 >= place[1] or \
                        place[0] + offset // 4 >= mem_words:
                    trap = trap or (2, lane)
                else:
                    word = place[0] + offset // 4
                    old = memory[word]
                    if op == Op.LD:
                        writes[lane] = old
                    elif op == Op.ST:
                        stores[word] = reg(lane, ins.b)
                    elif op in (Op.ST_U8, Op.ST_U16):
                        stores[word] = _merge(old, reg(lane, ins.b), offset % 4,
                                              1 if op == Op.ST_U8 else 2)
                    else:
                        writes[lane] = old
                        stores[word] = ATOMIC[op](old, reg(lane, ins.b), reg(lane, ins.c)) & M
            elif op == Op.S2R:
                block_index = warp // warps_per_block
                thread = (warp % warps_per_block) * lanes + lane
                shared_base = windows.shared_bases[block_index] if windows.shared_words else 0
                local_base = windows.local_bases[block_index][thread] \
                    if windows.local_words and thread < block else 0
                values = [thread, block, block_index, grid, lane, warp % warps_per_block,
                          4 * shared_base, 4 * local_base]
                if ins.imm >= len(values):
                    trap = trap or (4, lane)
                else:
                    writes[lane] = values[ins.imm]
            elif op == Op.LDP:
                if ins.imm >= len(params):
                    trap = trap or (4, lane)
                else:
                    writes[lane] = params[ins.imm]
            elif op == Op.SHFL:
                writes[lane] = reg(b % lanes, ins.a)
            elif op == Op.VOTE:
                writes[lane] = sum(1 << l for l in range(lanes)
                                   if exec_mask[l] and pred(l, ins.a))
            elif op == Op.BAR:
                if exec_mask != live[warp]:
                    trap = trap or (5, lane)
            elif op in (Op.BRA, Op.EXIT, Op.NOP):
                pass
            else:
                trap = trap or (1, lane)
        if ins.op == Op.INVALID or ins.op not in Op.__members__.values():
            trap = trap or next(((1, l) for l in range(lanes) if active[l]), None)
        if trap is not None:
            return ModelResult(memory, steps, (trap[0], warp, trap[1], pc))
        last = warp
        for lane, value in writes.items():
            if ins.d != 15:
                rf[lane][ins.d] = value
        for lane, value in pwrites.items():
            if ins.d != 7:
                pf[lane][ins.d] = value
        for word, value in stores.items():
            memory[word] = value
        for lane in range(lanes):
            if not active[lane] or (exec_mask[lane] and not runs[lane]):
                continue                      # a serial instruction's later lanes stay
            if ins.op == Op.BRA and exec_mask[lane]:
                pcs[warp][lane] = ins.imm
            elif ins.op == Op.EXIT and exec_mask[lane]:
                live[warp][lane] = False
            else:
                pcs[warp][lane] = pc + 1
        _barrier(ins, exec_mask, warp, warps_per_block, live, waiting)
    raise RuntimeError(f"no exit after {max_steps} steps")


def _barrier(ins, exec_mask, warp, warps_per_block, live, waiting) -> None:
    """docs/isa.md "Barriers": a warp arriving waits, unless every other live warp of its
    block waits already (then all go on); a warp finishing releases its waiting block."""
    block_index = warp // warps_per_block
    others = [w for w in range(block_index * warps_per_block,
                               (block_index + 1) * warps_per_block) if w != warp]
    others = [w for w in others if w < len(live)]
    all_arrived = all(waiting[w] or not any(live[w]) for w in others)
    if ins.op == Op.BAR and any(exec_mask):
        if all_arrived:
            for w in others:
                waiting[w] = False
        else:
            waiting[warp] = True
    elif ins.op == Op.EXIT and not any(live[warp]) and all_arrived:
        for w in others:
            waiting[w] = False
