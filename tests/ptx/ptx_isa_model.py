"""An independent, plain-Python model of the QwenGPU ISA (docs/isa.md), for the loader's tests.

It runs a list of `qwengpu.isa.Instruction`s the way docs/isa.md describes the machine:
barrel round-robin over warps, min-PC issue within a warp, the exec mask, the ALU table,
faults that stop the machine with nothing written.  It exists so that the lowering tests do
not depend on the HDL interpreter being finished, and as a second opinion next to it; it
shares no code with the loader (the expected values of the tests come from plain Python
semantics of PTX, written in the tests themselves).
"""

from __future__ import annotations

from dataclasses import dataclass

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
CMP = [lambda a, b: a == b, lambda a, b: a != b, lambda a, b: _s(a) < _s(b),
       lambda a, b: _s(a) <= _s(b), lambda a, b: _s(a) > _s(b), lambda a, b: _s(a) >= _s(b),
       lambda a, b: a < b, lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b]


@dataclass
class ModelResult:
    memory: list[int]
    records: int
    trap: tuple[int, int, int, int] | None   # (code, warp, lane, pc)


def run_model(program: list[Instruction], memory: list[int], params: list[int], grid: int,
              block: int, lanes: int = 4, mem_words: int = 126, max_steps: int = 200_000
              ) -> ModelResult:
    memory = list(memory)
    warps_per_block = -(-block // lanes)
    warps = grid * warps_per_block
    regs = [[[0] * 16 for _ in range(lanes)] for _ in range(warps)]
    preds = [[[False] * 8 for _ in range(lanes)] for _ in range(warps)]
    pcs = [[0] * lanes for _ in range(warps)]
    live = [[(w % warps_per_block) * lanes + l < block for l in range(lanes)]
            for w in range(warps)]
    last = warps - 1
    steps = 0
    while steps < max_steps:
        order = [(last + 1 + k) % warps for k in range(warps)]
        warp = next((w for w in order if any(live[w])), None)
        if warp is None:
            return ModelResult(memory, steps, None)
        steps += 1
        last = warp
        pc = min(pcs[warp][l] for l in range(lanes) if live[warp][l])
        active = [live[warp][l] and pcs[warp][l] == pc for l in range(lanes)]
        ins = program[pc] if pc < len(program) else Instruction(Op.INVALID)
        rf, pf = regs[warp], preds[warp]

        def reg(lane, index):
            return 0 if index == 15 else rf[lane][index]

        def pred(lane, index):
            return True if index == 7 else pf[lane][index]

        exec_mask = [active[l] and (pred(l, ins.pg) != ins.pn) for l in range(lanes)]
        writes, pwrites, stores, trap = {}, {}, {}, None
        for lane in range(lanes):
            if not exec_mask[lane]:
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
            elif op in (Op.LD, Op.ST):
                address = (a + ins.imm) & M
                if address % 4:
                    trap = trap or (3, lane)
                elif address // 4 >= mem_words:
                    trap = trap or (2, lane)
                elif op == Op.LD:
                    writes[lane] = memory[address // 4]
                else:
                    stores[address // 4] = reg(lane, ins.b)
            elif op == Op.S2R:
                block_index = warp // warps_per_block
                values = [(warp % warps_per_block) * lanes + lane, block, block_index, grid,
                          lane, warp % warps_per_block]
                if ins.imm >= len(values):
                    trap = trap or (4, lane)
                else:
                    writes[lane] = values[ins.imm]
            elif op == Op.LDP:
                if ins.imm >= len(params):
                    trap = trap or (4, lane)
                else:
                    writes[lane] = params[ins.imm]
            elif op in (Op.BRA, Op.EXIT, Op.NOP):
                pass
            else:
                trap = trap or (1, lane)
        if trap is not None:
            return ModelResult(memory, steps, (trap[0], warp, trap[1], pc))
        for lane, value in writes.items():
            if ins.d != 15:
                rf[lane][ins.d] = value
        for lane, value in pwrites.items():
            if ins.d != 7:
                pf[lane][ins.d] = value
        for word, value in stores.items():
            memory[word] = value
        for lane in range(lanes):
            if not active[lane]:
                continue
            if ins.op == Op.BRA and exec_mask[lane]:
                pcs[warp][lane] = ins.imm
            elif ins.op == Op.EXIT and exec_mask[lane]:
                live[warp][lane] = False
            else:
                pcs[warp][lane] = pc + 1
    raise RuntimeError(f"no exit after {max_steps} steps")
