"""Instruction selection for what threads do together: barriers, atomics, shuffles, votes.

The machine has an instruction for each (docs/isa.md): `bar` holds a warp until every live
warp of its block has arrived; the atomics read, change and write a word for one lane a step,
so lanes of a warp on one word apply in lane order and each gets the word before its own
update; `shfl d, a, B` reads register a of lane B; `vote d, p` is the mask of the lanes that
run it and whose predicate holds.  What PTX says beyond that (a shuffle's clamp and segments,
`vote.all`, `red`) is a few ordinary instructions around them.

A warp has `LANES` (4) lanes.  Lanes a shuffle would read past the warp's last lane are
"out of range" the way PTX's clamp makes them: the thread gets its own value and the
predicate is false.  Member masks (`membermask`) name the threads that take part; bits for
lanes the warp does not have are ignored, and lanes named but not running the instruction
are read as they are (PTX leaves that undefined).
"""

from __future__ import annotations

from qwengpu.isa import MASK32, Cmp, Op, Special
from qwengpu.ptx import ir
from qwengpu.ptx.select_memory import address, machine_space
from qwengpu.ptx.selector import Selector, handles, operand_b
from qwengpu.ptx.vcode import TRUE, ZERO

_ORDERING = {"relaxed", "acquire", "release", "acq_rel", "sc", "cta", "gpu", "sys", "cluster",
             "sem", "volatile"}
_SPACES = {"global", "shared"}
_ATOMIC_OPS = {
    ("add", False): Op.ATOM_ADD, ("add", True): Op.ATOM_ADD,
    ("min", False): Op.ATOM_MIN_U, ("min", True): Op.ATOM_MIN_S,
    ("max", False): Op.ATOM_MAX_U, ("max", True): Op.ATOM_MAX_S,
    ("and", False): Op.ATOM_AND, ("or", False): Op.ATOM_OR, ("xor", False): Op.ATOM_XOR,
    ("exch", False): Op.ATOM_EXCH, ("cas", False): Op.ATOM_CAS,
    ("inc", False): Op.ATOM_INC, ("dec", False): Op.ATOM_DEC,
}
_SHUFFLE_MODES = ("up", "down", "bfly", "idx")
_VOTE_MODES = ("all", "any", "uni", "ballot")


# ---- barriers -----------------------------------------------------------------------------------

@handles("bar", "barrier")
def lower_bar(sel: Selector, ins: ir.Instruction):
    """`bar.sync 0` / `barrier.sync 0` (`__syncthreads`): the machine's `bar`.
    `bar.warp.sync` (`__syncwarp`) needs nothing: a warp issues at the lowest PC of its live
    lanes, so no lane named by the mask can be behind when the others reach it."""
    if ins.modifiers[:2] == ("warp", "sync"):
        sel.operands(ins, 1)
        return
    kind = next((m for m in ins.modifiers if m in ("sync", "arrive", "red")), None)
    if kind != "sync":
        raise sel.unsupported(ins, f"'{ins.full_opcode}': only bar.sync (__syncthreads) is; "
                                   "a barrier QwenGPU has waits for every thread of the block")
    sel.check_modifiers(ins, {"sync", "aligned", "cta"})
    operands = sel.operands(ins, 1, 2)
    barrier = operands[0]
    if not (isinstance(barrier, ir.Immediate) and barrier.value == 0):
        raise sel.unsupported(ins, "named barriers (a barrier number other than 0): QwenGPU "
                                   "has one barrier a block")
    if len(operands) == 2:
        raise sel.unsupported(ins, "a barrier for a number of threads: QwenGPU's barrier "
                                   "waits for every thread of the block")
    sel.emit(Op.BAR)


# ---- atomics --------------------------------------------------------------------------------------

@handles("atom", "red")
def lower_atom(sel: Selector, ins: ir.Instruction):
    """`atom.op.type d, [a], b (, c)` and `red.op.type [a], b`: the machine's atomic, whose
    result (the word before) goes to d (to rz for `red`)."""
    ops = [m for m in ins.modifiers if m in {op for op, _ in _ATOMIC_OPS}]
    type_name = next((m for m in ins.modifiers if m in ir.TYPE_WIDTHS), None)
    if type_name is None:
        raise sel.error(f"'{ins.full_opcode}' has no type (such as .u32)")
    if type_name not in ir.INTEGER_TYPES:
        raise sel.unsupported(ins, f"atomics on .{type_name} (QwenGPU's atomics are on 32-bit "
                                   "integers)")
    if ir.type_width(type_name) != 32:
        raise sel.unsupported(ins, f"{ir.type_width(type_name)}-bit atomics (QwenGPU's are "
                                   "32-bit)")
    if len(ops) != 1:
        raise sel.error(f"'{ins.full_opcode}' names no atomic operation (add, min, max, inc, "
                        "dec, and, or, xor, exch, cas)")
    sel.check_modifiers(ins, _ORDERING | _SPACES | {ops[0]})
    op = _ATOMIC_OPS.get((ops[0], ir.is_signed(type_name) and ops[0] in ("min", "max")))
    spaces = [m for m in ins.modifiers if m in _SPACES]
    space = spaces[0] if spaces else "global"
    is_red = ins.opcode == "red"
    if is_red and ops[0] in ("exch", "cas"):
        raise sel.error(f"red has no .{ops[0]} (use atom)")
    counts = (2,) if is_red else ((4,) if op == Op.ATOM_CAS else (3,))
    operands = sel.operands(ins, *counts)
    destination, memory, *sources = (None, *operands) if is_red else operands
    base, offset, formed = address(sel, memory, 4, False, space)
    b = sel.register(sel.value(sources[0], 32))
    c = sel.register(sel.value(sources[1], 32)) if op == Op.ATOM_CAS else None
    old = sel.temp() if destination is not None else ZERO
    access = sel.emit(op, d=old, a=base, b=b, c=c, imm=offset, space=machine_space(space))
    access.formed = formed or access.formed
    if destination is not None:
        sel.write(destination, old)


# ---- shuffles -----------------------------------------------------------------------------------

@handles("shfl")
def lower_shfl(sel: Selector, ins: ir.Instruction):
    """`shfl.sync.mode.b32 d|p, a, b, c, membermask` as PTX defines it: the source lane j
    from the mode, b and c's clamp and segment mask, valid (p) when it lies in the segment and
    the warp; then the machine's `shfl d, a, j` (j = the thread's own lane where not valid)."""
    sel.check_modifiers(ins, {"sync", *_SHUFFLE_MODES})
    modes = [m for m in ins.modifiers if m in _SHUFFLE_MODES]
    if len(modes) != 1:
        raise sel.error(f"'{ins.full_opcode}' needs one mode (.up, .down, .bfly, .idx)")
    mode = modes[0]
    sel.type_of(ins, {"b32"})
    operands = sel.operands(ins, 5) if "sync" in ins.modifiers else sel.operands(ins, 4)
    destination, source, lane_operand, clamp_operand = operands[:4]
    value_destination, predicate_destination = _value_and_predicate(sel, destination)
    lanes = sel.constant_symbols["WARP_SZ"]
    lane = sel.temp()
    sel.emit(Op.S2R, d=lane, imm=int(Special.LANEID))
    b = sel.alu(Op.AND, sel.value(lane_operand, 32), 0x1F)
    c = sel.value(clamp_operand, 32)
    clamp = sel.alu(Op.AND, c, 0x1F)
    segments = sel.alu(Op.AND, sel.alu(Op.SHR_U, c, 8), 0x1F)
    outside = sel.alu(Op.XOR, segments, MASK32)             # ~segmask
    first = sel.alu(Op.AND, lane, segments)                  # minLane
    last = sel.alu(Op.OR, first, sel.alu(Op.AND, clamp, outside))   # maxLane
    if mode == "up":
        j = sel.alu(Op.SUB, lane, b)
        valid = sel.compare(Cmp.GE, j, last)
    else:
        j = {"down": lambda: sel.alu(Op.ADD, lane, b),
             "bfly": lambda: sel.alu(Op.XOR, lane, b),
             "idx": lambda: sel.alu(Op.OR, first, sel.alu(Op.AND, b, outside))}[mode]()
        # ... and within the warp, whose last lane is LANES - 1
        valid = sel.compare(Cmp.LS, j, sel.alu(Op.MIN_U, last, lanes - 1))
    source_lane = sel.temp()
    sel.emit(Op.SELP, d=source_lane, a=sel.register(j), b=operand_b(lane), c=valid)
    result = sel.temp()
    sel.emit(Op.SHFL, d=result, a=sel.register(sel.value(source, 32)), b=source_lane)
    moves = [(value_destination, result)]
    if predicate_destination is not None:
        moves.append((predicate_destination, valid))
    sel.commit(*moves)


def _value_and_predicate(sel: Selector, destination):
    if isinstance(destination, ir.RegisterPair):
        value = ir.Register(destination.first, destination.loc)
        return sel.destination(value)[0], sel.predicate_register(destination.second,
                                                                 destination.loc)
    return sel.destination(destination)[0], None


# ---- votes --------------------------------------------------------------------------------------

@handles("vote")
def lower_vote(sel: Selector, ins: ir.Instruction):
    """`vote.sync.ballot.b32 d, p, m`: the machine's `vote` (the lanes that run it and whose p
    holds), masked by m; `.any`, `.all`, `.uni` compare that ballot with 0 and with the lanes
    running (`vote d, pt`)."""
    sel.check_modifiers(ins, {"sync", *_VOTE_MODES})
    modes = [m for m in ins.modifiers if m in _VOTE_MODES]
    if len(modes) != 1:
        raise sel.error(f"'{ins.full_opcode}' needs one mode (.all, .any, .uni, .ballot)")
    mode = modes[0]
    operands = sel.operands(ins, 3) if "sync" in ins.modifiers else sel.operands(ins, 2)
    destination, predicate = operands[:2]
    members = sel.value(operands[2], 32) if len(operands) == 3 else MASK32
    lanes = sel.constant_symbols["WARP_SZ"]

    def ballot(of) -> object:
        bits = sel.temp()
        sel.emit(Op.VOTE, d=bits, a=of)
        if isinstance(members, int) and members & ((1 << lanes) - 1) == (1 << lanes) - 1:
            return bits
        return sel.alu(Op.AND, bits, members)

    if mode == "ballot":
        sel.type_of(ins, {"b32"})
        sel.write(destination, ballot(sel.predicate(predicate)))
        return
    sel.type_of(ins, {"pred"})
    target = sel.destination_predicate(destination)
    if mode == "any":
        result = sel.compare(Cmp.NE, ballot(sel.predicate(predicate)), 0)
    elif mode == "all":
        result = sel.compare(Cmp.EQ, ballot(sel.predicate_op(Op.PNOT,
                                                             sel.predicate(predicate))), 0)
    else:
        holds = ballot(sel.predicate(predicate))
        result = sel.predicate_op(Op.POR, sel.compare(Cmp.EQ, holds, 0),
                                  sel.compare(Cmp.EQ, holds, ballot(TRUE)))
    sel.commit((target, result))


@handles("activemask")
def lower_activemask(sel: Selector, ins: ir.Instruction):
    """`activemask.b32 d`: the lanes running it, `vote d, pt`."""
    sel.type_of(ins, {"b32"})
    (destination,) = sel.operands(ins, 1)
    bits = sel.temp()
    sel.emit(Op.VOTE, d=bits, a=TRUE)
    sel.write(destination, bits)

