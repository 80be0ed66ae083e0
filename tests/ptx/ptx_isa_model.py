"""An independent, plain-Python model of the QwenGPU ISA (docs/isa.md), for the loader's tests.

It runs a list of `qwengpu.isa.Instruction`s the way docs/isa.md describes the machine:
barrel round-robin over warps, min-PC issue within a warp, the exec mask, the ALU table,
faults that stop the machine with nothing written, each thread's window of local memory
(`ld.local`/`st.local` offsets checked against the window and added to its base) and the
sub-word stores, which run one lane a step.  It exists so that the lowering tests do
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


LOCAL_SPACE = 2
SUB_WORD_STORES = {Op.ST_U8: 1, Op.ST_U16: 2}       # bytes each stores


def run_model(program: list[Instruction], memory: list[int], params: list[int], grid: int,
              block: int, lanes: int = 4, mem_words: int = 126, max_steps: int = 200_000,
              local_words: int = 0, local_bases: tuple = (), shared_bases: tuple = ()
              ) -> ModelResult:
    """`local_bases[block][thread]`: the first word of each thread's local window of
    `local_words` words; `shared_bases[block]` the first word of each block's shared one."""
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
        # a sub-word store runs for the lowest lane that executes it; the others wait their turn
        waiting = [False] * lanes
        if ins.op in SUB_WORD_STORES and any(exec_mask):
            first = exec_mask.index(True)
            waiting = [exec_mask[l] and l > first for l in range(lanes)]
            exec_mask = [l == first for l in range(lanes)]
        writes, pwrites, stores, trap = {}, {}, {}, None
        block_index, warp_in_block = divmod(warp, warps_per_block)

        def physical_word(lane, offset):
            """The word of memory an access at `offset` of its space reaches, or a trap."""
            if ins.space == LOCAL_SPACE:
                if offset // 4 >= local_words:
                    return None
                word = local_bases[block_index][warp_in_block * lanes + lane] + offset // 4
            else:
                word = offset // 4
            return word if word < mem_words else None

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
            elif op in (Op.LD, Op.ST) or op in SUB_WORD_STORES:
                address = (a + ins.imm) & M
                size = SUB_WORD_STORES.get(op, 4)
                word = physical_word(lane, address)
                if address % size:
                    trap = trap or (3, lane)
                elif word is None:
                    trap = trap or (2, lane)
                elif op == Op.LD:
                    writes[lane] = memory[word]
                elif op == Op.ST:
                    stores[word] = reg(lane, ins.b)
                else:
                    shift = 8 * (address % 4)
                    field = ((1 << (8 * size)) - 1) << shift
                    stores[word] = (memory[word] & ~field) | ((reg(lane, ins.b) << shift) & field)
            elif op == Op.S2R:
                thread = warp_in_block * lanes + lane
                values = [thread, block, block_index, grid, lane, warp_in_block,
                          4 * shared_bases[block_index] if shared_bases else 0,
                          4 * local_bases[block_index][thread] if local_bases else 0]
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
            if not active[lane] or waiting[lane]:
                continue
            if ins.op == Op.BRA and exec_mask[lane]:
                pcs[warp][lane] = ins.imm
            elif ins.op == Op.EXIT and exec_mask[lane]:
                live[warp][lane] = False
            else:
                pcs[warp][lane] = pc + 1
    raise RuntimeError(f"no exit after {max_steps} steps")
