"""Clean-ups of virtual code before register allocation.

- `retarget_temporaries`: `t = op ...; d = t` becomes `d = op ...` when nothing else reads `t`
  (instruction selection computes into temporaries and copies at the end).
- `remove_dead_code`: drops instructions whose results no store, branch, exit or load needs
  (typically the high words of 64-bit address arithmetic and the carries into them); a load
  whose value is unused keeps its fault check and writes `rz`.
- `remove_branches_to_next`: a branch to the instruction right after it does nothing.

Each returns the number of changes, and they are run together to a fixed point by `optimize`.
"""

from __future__ import annotations

from collections import Counter

from qwengpu.isa import Op
from qwengpu.ptx.vcode import TRUE, ZERO, LabelRef, VInstr, VLabel, VPred, VReg


def _is_copy(ins: VInstr) -> bool:
    if not ins.is_move:
        return False
    if ins.op == Op.ADD:
        return ins.b == 0
    return ins.op == Op.PAND and ins.b == TRUE


def retarget_temporaries(code: list) -> int:
    reads = Counter(register for ins in code if isinstance(ins, VInstr) for register in ins.uses())
    changes = 0
    index = 1
    while index < len(code):
        move, previous = code[index], code[index - 1]
        if (isinstance(move, VInstr) and isinstance(previous, VInstr) and _is_copy(move)
                and isinstance(move.a, (VReg, VPred)) and move.a.name.startswith("$")
                and previous.d == move.a and previous.op not in (Op.ST, Op.BRA, Op.EXIT)
                and reads[move.a] == 1 and previous.guard == move.guard
                and previous.guard_negated == move.guard_negated
                and (previous.full_def or not previous.guarded)):
            previous.d = move.d
            previous.full_def = move.full_def
            del code[index]
            changes += 1
            continue
        index += 1
    return changes


def remove_dead_code(code: list) -> int:
    """Mark and sweep: keep what stores, branches, exits and loads need, transitively.  Unlike
    a liveness test this also drops values that only feed themselves around a loop (the high
    word of a pointer that is incremented each iteration)."""
    instructions = [item for item in code if isinstance(item, VInstr)]
    writers: dict = {}
    for ins in instructions:
        for register in ins.defs():
            writers.setdefault(register, []).append(ins)
    needed_registers = set()
    essential = {id(ins) for ins in instructions if ins.has_side_effect}
    work = [ins for ins in instructions if id(ins) in essential]
    while work:
        ins = work.pop()
        for register in ins.uses():
            if register in needed_registers:
                continue
            needed_registers.add(register)
            for writer in writers.get(register, ()):
                if id(writer) not in essential:
                    essential.add(id(writer))
                    work.append(writer)
    for ins in instructions:
        if ins.op == Op.LD and ins.d != ZERO and ins.d not in needed_registers:
            ins.d = ZERO  # nothing reads the value, but the access stays: it may fault
            ins.full_def = False
    before = len(code)
    code[:] = [item for item in code if isinstance(item, VLabel) or id(item) in essential]
    return before - len(code)


def remove_branches_to_next(code: list) -> int:
    """A branch whose target label follows it (possibly after other labels) is a no-op: taken
    or not, every lane goes to the next instruction."""
    removed = 0
    index = 0
    while index < len(code):
        item = code[index]
        if isinstance(item, VInstr) and item.op == Op.BRA and isinstance(item.imm, LabelRef):
            following = index + 1
            landing = set()
            while following < len(code) and isinstance(code[following], VLabel):
                landing.add(code[following].name)
                following += 1
            if item.imm.name in landing:
                del code[index]
                removed += 1
                continue
        index += 1
    return removed


def optimize(code: list) -> dict[str, int]:
    """Run the clean-ups until nothing changes; returns the number of changes per pass."""
    totals = Counter()
    while True:
        changes = {
            "retarget-temporaries": retarget_temporaries(code),
            "remove-dead-code": remove_dead_code(code),
            "remove-branches-to-next": remove_branches_to_next(code),
        }
        totals.update(changes)
        if not any(changes.values()):
            return dict(totals)
