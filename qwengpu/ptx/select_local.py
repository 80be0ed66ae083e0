"""Instruction selection for per-thread local memory: `ld.local`, `st.local`, `cvta.local`
and `cvta.to.local`.

An address in the `.local` space is a byte offset into the thread's own window of memory
(`qwengpu.ptx.local_memory` lays the `.local` variables out in it; `__local_depot0` as a value
is its offset, usually 0).  The machine's `ld.local`/`st.local` check the offset against the
window's size and add the window's base (docs/isa.md), so a local access is one machine
access with `space = LOCAL`:

- `ld.local` of 8 to 64 bits and `.v2`/`.v4`, as `ld.global` (a word a step; 8 and 16 bits
  read the enclosing word and shift), in the local space;
- `st.local` of 32 and 64 bits and vectors as words; of 8 and 16 bits with the machine's
  `st.u8`/`st.u16` (a thread's window is its own: no other lane writes its bytes);
- `cvta.local` makes a generic address: `s2r t, local_base` plus the offset (generic
  addresses are the physical byte addresses of the one memory, so generic `ld`/`st` through
  it need nothing more); `cvta.to.local` subtracts the base again.

The handlers plug into `select_memory.SPACE_LOWERINGS`, which `lower_ld`, `lower_st` and
`lower_cvta` consult for the `.local` space.
"""

from __future__ import annotations

from qwengpu.isa import Op, Space, Special
from qwengpu.ptx import ir
from qwengpu.ptx import select_memory as memory
from qwengpu.ptx import select_wide as wide
from qwengpu.ptx.cuda_lines import readable
from qwengpu.ptx.selector import Selector
from qwengpu.ptx.vcode import ZERO, VInstr, VReg

LOCAL = int(Space.LOCAL)
_ACCESSES = (Op.LD, Op.ST, Op.ST_U8, Op.ST_U16)


def local_address(sel: Selector, operand) -> tuple[VReg, int]:
    """`[base+offset]` in the local space as a base register and a byte offset."""
    if not isinstance(operand, ir.Memory):
        raise sel.error("a memory operand [address] is needed here", operand)
    base = operand.base
    if isinstance(base, ir.Symbol):
        if base.name not in sel.local.offsets:
            raise sel.error(f"{readable(base.name)} is not a .local variable; ld.local and "
                            "st.local address the thread's local memory", base)
        return ZERO, sel.local.offsets[base.name] + operand.offset
    register, offset, _ = memory.address(sel, operand)
    return register, offset


def _in_local_space(sel: Selector, start: int):
    for ins in sel.code[start:]:
        if isinstance(ins, VInstr) and ins.op in _ACCESSES:
            ins.space = LOCAL


def lower_local_load(sel: Selector, ins: ir.Instruction):
    type_name = sel.type_of(ins)
    if type_name == "pred":
        raise sel.unsupported(ins, "loading a predicate")
    destination, source = sel.operands(ins, 2)
    count = memory._vector_length(ins)
    targets = memory._elements(sel, destination, count)
    width = ir.type_width(type_name)
    if width > 64:
        raise sel.unsupported(ins, f"{width}-bit accesses")
    start = len(sel.code)
    base, offset = local_address(sel, source)
    step = width // 8
    loaded = [memory._load(sel, base, offset + index * step, width, ir.is_signed(type_name))
              for index in range(count)]
    _in_local_space(sel, start)
    memory._write_loaded(sel, targets, loaded, width, ir.is_signed(type_name))


def lower_local_store(sel: Selector, ins: ir.Instruction):
    type_name = sel.type_of(ins)
    if type_name == "pred":
        raise sel.unsupported(ins, "storing a predicate")
    destination, source = sel.operands(ins, 2)
    width = ir.type_width(type_name)
    if width > 64:
        raise sel.unsupported(ins, f"{width}-bit accesses")
    count = memory._vector_length(ins)
    values = memory._elements(sel, source, count)
    start = len(sel.code)
    base, offset = local_address(sel, destination)
    step = max(width // 8, 1)
    for index, element in enumerate(values):
        if element is None:
            raise sel.error("'_' cannot be stored", source)
        element_offset = offset + index * step
        if width < 32:
            op = Op.ST_U8 if width == 8 else Op.ST_U16
            sel.emit(op, a=base, b=sel.register(sel.value(element, 32)), imm=element_offset)
            continue
        words = sel.pair(element) if width == 64 else (sel.value(element, 32),)
        for word_index, word in enumerate(words):
            sel.emit(Op.ST, a=base, b=sel.register(word), imm=element_offset + 4 * word_index)
    _in_local_space(sel, start)


def lower_local_cvta(sel: Selector, ins: ir.Instruction):
    """`cvta.local d, a`: d = local_base + a (a generic address); `cvta.to.local`: d = a -
    local_base (an offset in the window)."""
    type_name = sel.type_of(ins, {"u32", "u64"})
    destination, source = sel.operands(ins, 2)
    local_base = sel.temp()
    sel.emit(Op.S2R, d=local_base, imm=int(Special.LOCAL_BASE))
    to_local = "to" in ins.modifiers
    if type_name == "u64":
        combine = wide.sub if to_local else wide.add
        result = combine(sel, sel.pair(source), (local_base, 0))
        sel.commit(*zip(sel.destination_pair(destination), result))
        return
    value = sel.value(source, 32)
    result = sel.alu(Op.SUB, value, local_base) if to_local else \
        sel.alu(Op.ADD, local_base, value)
    sel.write(destination, result)


memory.SPACE_LOWERINGS.update({("ld", "local"): lower_local_load,
                               ("st", "local"): lower_local_store,
                               ("cvta", "local"): lower_local_cvta})
