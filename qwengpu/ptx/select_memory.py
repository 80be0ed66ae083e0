"""Instruction selection for memory, parameters, addresses and control flow.

Memory is 126 words addressed by 32-bit byte addresses: `ld`/`st` of 32-bit words map onto
the machine's `ld`/`st`, 64-bit and vector accesses become one access per word, and 8/16-bit
loads read the enclosing word and shift the wanted bytes down.  Kernel parameters are read
with `ldp` from parameter words (`ParamRef`, numbered by the linker).  Generic and global
addresses are the same on this machine, so `cvta` is a copy.
"""

from __future__ import annotations

from qwengpu.isa import ACCESSES_MEMORY, MASK32, Op, Space, Special
from qwengpu.ptx import ir
from qwengpu.ptx import select_wide as wide
from qwengpu.ptx.alignment import access_bytes, needs_alignment_check
from qwengpu.ptx.cuda_lines import readable
from qwengpu.ptx.selector import Selector, handles, mask, operand_b
from qwengpu.ptx.vcode import (ZERO, FormedAddress, LabelRef, ParamRef, Source, SymbolRef,
                               VInstr, VReg)

# Modifiers that change nothing on a machine with one memory, no caches and one thread of
# control at a time.
_ORDERING_AND_CACHE = {"ca", "cg", "cs", "lu", "cv", "nc", "wb", "wt", "volatile", "weak",
                       "relaxed", "acquire", "release", "cta", "gpu", "sys", "cluster"}
_MEMORY_SPACES = {"global", "const", "param", "shared", "local", "tex"}
# Lowerings of other spaces' accesses, by (opcode, space): `select_local` adds .local's.
SPACE_LOWERINGS: dict = {}


def _space(sel: Selector, ins: ir.Instruction) -> str:
    spaces = [modifier for modifier in ins.modifiers if modifier in _MEMORY_SPACES]
    space = spaces[0] if spaces else "global"  # generic addresses are global ones here
    if space == "tex":
        raise sel.unsupported(ins, "texture memory, which QwenGPU does not have (its data "
                                   "lives in global, shared and local memory)")
    return space


def machine_space(space: str) -> int:
    """The machine's address space (field `space`) of a PTX state space: shared memory is
    the block's window, everything else (global, const, generic) the memory itself."""
    return int(Space.SHARED) if space == "shared" else int(Space.GLOBAL)


def _vector_length(ins: ir.Instruction) -> int:
    for modifier, count in (("v2", 2), ("v4", 4), ("v8", 8)):
        if modifier in ins.modifiers:
            return count
    return 1


def _check_memory_modifiers(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, _ORDERING_AND_CACHE | _MEMORY_SPACES | {"v2", "v4"})


def _elements(sel: Selector, operand, count: int) -> list:
    if count == 1:
        if isinstance(operand, ir.Vector):
            raise sel.error("a vector operand needs .v2 or .v4", operand)
        return [operand]
    if not isinstance(operand, ir.Vector) or len(operand.elements) != count:
        raise sel.error(f"a .v{count} access needs a vector of {count} registers", operand)
    return list(operand.elements)


def address(sel: Selector, operand, size_bytes: int = 4, checked: bool = False,
            space: str = "global") -> tuple[VReg, int | SymbolRef, FormedAddress | None]:
    """`[base+offset]` as a base register and an immediate byte offset, and where the address
    the kernel formed can be found when a check altered it.  `checked`: the access is wider
    than the machine's alignment check, and `qwengpu.ptx.alignment` did not prove it aligned
    to `size_bytes`.  A shared address is an offset into the block's window, which the
    machine checks itself: 32 bits, its variables' offsets known when the kernel is."""
    if not isinstance(operand, ir.Memory):
        raise sel.error("a memory operand [address] is needed here", operand)
    base = operand.base
    if space == "shared":
        return _shared_address(sel, operand, size_bytes, checked)
    if isinstance(base, ir.Immediate) and not checked:
        return ZERO, base.value + operand.offset, None
    if isinstance(base, ir.Symbol):
        if base.name in sel.params:
            raise sel.error(f"parameter {readable(base.name)} can only be read with ld.param",
                            base)
        sel.memory_variable(base)
        if not checked:
            return ZERO, SymbolRef(base.name, operand.offset), None
        low, aligned = _aligned(sel, sel.register(SymbolRef(base.name, operand.offset)),
                                size_bytes)
        return low, 0, FormedAddress(aligned, size_bytes=size_bytes)
    if isinstance(base, ir.Register) and sel.is_wide_register(base) and \
            sel.proven_addresses is not None and id(sel.ins) not in sel.proven_addresses:
        # the offset is added in 64 bits first, so that no base + offset can wrap either
        offset = operand.offset
        low, high = wide.add(sel, sel.pair(base), (offset & MASK32, -(offset < 0) & MASK32))
        aligned = None
        if checked:
            low, aligned = _aligned(sel, sel.register(low), size_bytes)
        combined, reads_low, reads_high = _checked_address(sel, low, high)
        formed = FormedAddress(aligned or reads_low, reads_high,
                               high if isinstance(high, int) else 0, size_bytes) \
            if aligned or reads_low else None
        return combined, 0, formed
    value = sel.value(base, 32)
    if not checked:
        return sel.register(value), operand.offset, None
    low, aligned = _aligned(sel, sel.register(sel.alu(Op.ADD, value, operand.offset)),
                            size_bytes)
    return low, 0, FormedAddress(aligned, size_bytes=size_bytes)


def _shared_address(sel: Selector, operand: ir.Memory, size_bytes: int, checked: bool
                    ) -> tuple[VReg, int, FormedAddress | None]:
    base = operand.base
    if isinstance(base, ir.Symbol):
        variable = sel.memory_variable(base)
        if variable.state_space != "shared":
            raise sel.error(f"{readable(base.name)} is not in .shared memory", base)
        value: Source = sel.shared.offsets[base.name]
    elif isinstance(base, ir.Immediate):
        value = base.value & MASK32
    else:
        value = sel.value(base, 32)      # a 64-bit register: its low word
    if isinstance(value, int):
        if not checked:
            return ZERO, (value + operand.offset) & MASK32, None
        value = sel.register(value)
    if not checked:
        return sel.register(value), operand.offset, None
    low, aligned = _aligned(sel, sel.register(sel.alu(Op.ADD, value, operand.offset)),
                            size_bytes)
    return low, 0, FormedAddress(aligned, size_bytes=size_bytes)


def _aligned(sel: Selector, low: VReg, size_bytes: int) -> tuple[VReg, VInstr]:
    """`low`, with bit 0 set when it is not a multiple of `size_bytes`: the machine then traps
    the access as misaligned, as a GPU faults on it (docs/ptx.md "Memory").  Three
    instructions: `and t, low, size - 1; min.u t, t, 1; or low', low, t`; the `or` (returned)
    reads the address the kernel formed."""
    low_bits = sel.temp()
    sel.emit(Op.AND, d=low_bits, a=low, b=size_bytes - 1)
    flag = sel.temp()
    sel.emit(Op.MIN_U, d=flag, a=low_bits, b=1)
    result = sel.temp()
    return result, sel.emit(Op.OR, d=result, a=low, b=flag)


def _checked_address(sel: Selector, low: Source, high: Source
                     ) -> tuple[VReg, VInstr | None, VInstr | None]:
    """The low word of a 64-bit address, with its top bit set when the high word is not 0
    (the launch's `check_addresses`, docs/ptx.md "Memory"); and the instructions that read
    the low and the high word (operand a), where a trap report finds them.

    Memory is addressed by the low word; an address at or past 2^32 bytes (or below 0) has a
    high word that is not 0, and a GPU faults on it.  `high | -high` has its top bit set
    exactly when `high` is not 0; OR-ing it (its two low bits cleared, so the alignment stays
    the address's own) into the low word moves such an address past the 126 words, where the
    access traps (`address out of range`) instead of wrapping.  It keeps every address's high
    word alive, and its carries: four instructions an access and the high words' own (only
    where `qwengpu.ptx.ranges` cannot prove the address stays below 2^32)."""
    if isinstance(high, int) and high == 0:
        return sel.register(low), None, None
    reads_high = None
    if isinstance(high, int):
        spread = -4 & MASK32
    else:
        negated = sel.temp()
        sel.emit(Op.SUB, d=negated, a=ZERO, b=high)
        either = sel.temp()
        reads_high = sel.emit(Op.OR, d=either, a=high, b=negated)
        spread = sel.alu(Op.AND, either, -4)
    combined = sel.temp()
    reads_low = sel.emit(Op.OR, d=combined, a=sel.register(low), b=operand_b(spread))
    return combined, reads_low, reads_high


def _offset(offset: int | SymbolRef, extra: int) -> int | SymbolRef:
    if isinstance(offset, SymbolRef):
        return SymbolRef(offset.symbol, offset.offset + extra)
    return offset + extra


# ---- loads and stores ---------------------------------------------------------------------------


@handles("ld")
def lower_ld(sel: Selector, ins: ir.Instruction):
    _check_memory_modifiers(sel, ins)
    space = _space(sel, ins)
    if ("ld", space) in SPACE_LOWERINGS:
        return SPACE_LOWERINGS["ld", space](sel, ins)
    type_name = sel.type_of(ins)
    if type_name == "pred":
        raise sel.unsupported(ins, "loading a predicate")
    destination, source = sel.operands(ins, 2)
    count = _vector_length(ins)
    targets = _elements(sel, destination, count)
    width = ir.type_width(type_name)
    if width > 64:
        raise sel.unsupported(ins, f"{width}-bit accesses")
    signed = ir.is_signed(type_name)
    if space == "param":
        if count != 1:
            raise sel.unsupported(ins, "vector parameter loads")
        _load_param(sel, ins, destination, source, width, signed)
        return
    start, (size, checked) = len(sel.code), _alignment(sel, ins)
    base, offset, formed = address(sel, source, size, checked, space)
    step = width // 8
    loaded = [_load(sel, base, _offset(offset, index * step), width, signed,
                    first_of_checked=index == 0 and checked, space=machine_space(space))
              for index in range(count)]
    _mark_accesses(sel, start, formed)
    _write_loaded(sel, targets, loaded, width, signed)


def _alignment(sel: Selector, ins: ir.Instruction) -> tuple[int, bool]:
    """(the access's size in bytes, whether it needs the loader's alignment check).  A shared
    access is not one `qwengpu.ptx.alignment` proves: one wider than a word is checked."""
    sizes = access_bytes(ins)
    if sizes is None:
        type_name = sel.type_of(ins)
        size = max(ir.type_width(type_name) // 8, 1) * _vector_length(ins)
        return size, size > 4
    return sizes[0], needs_alignment_check(ins) and id(ins) not in sel.aligned_accesses


def _mark_accesses(sel: Selector, start: int, formed: FormedAddress | None):
    """Tell the accesses emitted since `start` where their formed address is (a 16-bit load
    with no check of its own: the `and` that keeps an odd address odd reads it)."""
    for ins in sel.code[start:]:
        if isinstance(ins, VInstr) and ins.op in ACCESSES_MEMORY:
            ins.formed = formed or ins.formed


def _load(sel: Selector, base: VReg, offset, width: int, signed: bool,
          first_of_checked: bool = False, space: int = 0):
    """One element: a word, a (low, high) pair, or an 8/16-bit value extended to 32 bits.
    `first_of_checked`: the first element of an access `_aligned` checked, whose bit 0 must
    reach the word load even for bytes."""
    if width == 32:
        word = sel.temp()
        sel.emit(Op.LD, d=word, a=base, imm=offset, space=space)
        return word
    if width == 64:
        return (_load(sel, base, offset, 32, False, space=space),
                _load(sel, base, _offset(offset, 4), 32, False, space=space))
    byte_address = sel.alu(Op.ADD, base, offset) if offset != 0 else base
    # Clearing only the bits that select the byte keeps an odd address odd for 16-bit loads,
    # so the word load traps on it as misaligned, like the real access would.
    aligned = sel.temp()
    clear = sel.emit(Op.AND, d=aligned, a=sel.register(byte_address),
                     b=-3 & MASK32 if width == 16 or first_of_checked else -4 & MASK32)
    word = sel.temp()
    load = sel.emit(Op.LD, d=word, a=aligned, imm=0, space=space)
    if width == 16:
        load.formed = FormedAddress(clear, size_bytes=2)
    shift = sel.alu(Op.SHL, sel.alu(Op.AND, byte_address, 3), 3)
    return sel.extend(sel.alu(Op.SHR_U, word, shift), width, signed)


def _write_loaded(sel: Selector, targets: list, loaded: list, width: int, signed: bool):
    moves = []
    for target, value in zip(targets, loaded):
        if target is None:
            continue
        target_width = sel.destination_width(target)
        if width == 64:
            if target_width != 64:
                raise sel.error("a 64-bit load needs a 64-bit register", target)
            moves.extend(zip(sel.destination_pair(target), value))
        elif target_width == 64:
            low, high = sel.destination_pair(target)
            moves.extend(((low, value), (high, sel.sign_word(value) if signed else 0)))
        else:
            register, register_width = sel.destination(target)
            if register_width < 32 and (signed or register_width < width):
                value = sel.alu(Op.AND, value, mask(register_width))
            moves.append((register, value))
    sel.commit(*moves)


def _load_param(sel: Selector, ins: ir.Instruction, destination, source, width: int,
                signed: bool):
    if not isinstance(source, ir.Memory) or not isinstance(source.base, ir.Symbol):
        raise sel.error("ld.param reads [parameter] or [parameter+offset]", source)
    name = source.base.name
    param = sel.params.get(name)
    if param is None:
        if name in sel.kernel.variables:
            raise sel.unsupported(ins, "function calls (this reads a call's parameter)")
        raise sel.error(f"{readable(name)} is not a parameter of {readable(sel.kernel.name)}",
                        source.base)
    offset = source.offset
    if offset < 0 or offset + width // 8 > param.size_bytes:
        raise sel.error(f"reads bytes {offset}..{offset + width // 8 - 1} of parameter {name}, "
                        f"which has {param.size_bytes} bytes", source)
    if width >= 32 and offset % 4:
        raise sel.error(f"a {width}-bit parameter read must be 4-byte aligned", source)

    def word(index: int) -> VReg:
        register = sel.temp()
        sel.emit(Op.LDP, d=register, imm=ParamRef(name, index))
        return register

    if width == 64:
        value = (word(offset // 4), word(offset // 4 + 1))
    elif width == 32:
        value = word(offset // 4)
    else:
        shifted = sel.alu(Op.SHR_U, word(offset // 4), 8 * (offset % 4))
        value = sel.extend(shifted, width, signed)
    _write_loaded(sel, [destination], [value], width, signed)


@handles("st")
def lower_st(sel: Selector, ins: ir.Instruction):
    _check_memory_modifiers(sel, ins)
    space = _space(sel, ins)
    if ("st", space) in SPACE_LOWERINGS:
        return SPACE_LOWERINGS["st", space](sel, ins)
    type_name = sel.type_of(ins)
    destination, source = sel.operands(ins, 2)
    if space == "param":
        raise sel.unsupported(ins, "function calls (this writes a call's parameter)")
    if space == "const":
        raise sel.error("constant memory cannot be written")
    width = ir.type_width(type_name)
    if width > 64:
        raise sel.unsupported(ins, f"{width}-bit accesses")
    count = _vector_length(ins)
    values = _elements(sel, source, count)
    start = len(sel.code)
    base, offset, formed = address(sel, destination, *_alignment(sel, ins), space)
    step = width // 8
    for index, element in enumerate(values):
        if element is None:
            raise sel.error("'_' cannot be stored", source)
        element_offset = _offset(offset, index * step)
        if width < 32:
            # a byte or halfword: the machine rewrites it inside its word in one step, lane
            # by lane (docs/isa.md, "Serial instructions")
            sel.emit(Op.ST_U8 if width == 8 else Op.ST_U16, a=base,
                     b=sel.register(sel.value(element, 32)), imm=element_offset,
                     space=machine_space(space))
            continue
        words: tuple[Source, ...] = sel.pair(element) if width == 64 else \
            (sel.value(element, 32),)
        for word_index, word in enumerate(words):
            sel.emit(Op.ST, a=base, b=sel.register(word),
                     imm=_offset(element_offset, 4 * word_index), space=machine_space(space))
    _mark_accesses(sel, start, formed)


@handles("cvta")
def lower_cvta(sel: Selector, ins: ir.Instruction):
    """Generic and global (and const) addresses are the same numbers on QwenGPU; a shared
    address is an offset into the block's window, which lies at `%shared_base` in memory
    (`s2r shared_base`), so the generic address is the sum."""
    sel.check_modifiers(ins, {"to", "global", "const", "param", "shared", "local"})
    space = _space(sel, ins)
    if ("cvta", space) in SPACE_LOWERINGS:
        return SPACE_LOWERINGS["cvta", space](sel, ins)
    type_name = sel.type_of(ins, {"u32", "u64"})
    destination, source = sel.operands(ins, 2)
    if space == "shared":
        base = sel.temp()
        sel.emit(Op.S2R, d=base, imm=int(Special.SHARED_BASE))
        value = sel.value(source, 32)
        converted = sel.alu(Op.SUB, value, base) if "to" in ins.modifiers else \
            sel.alu(Op.ADD, sel.register(value), base)
        sel.write(destination, converted)
        return
    if type_name == "u64":
        sel.commit(*zip(sel.destination_pair(destination), sel.pair(source)))
    else:
        sel.write(destination, sel.value(source, 32))


# ---- control flow -------------------------------------------------------------------------------


@handles("bra")
def lower_bra(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, {"uni"})
    (target,) = sel.operands(ins, 1)
    if not isinstance(target, ir.Symbol):
        raise sel.unsupported(ins, "branches to a register (only labels)")
    if target.name not in sel.labels:
        raise sel.error(f"unknown label {target.name}", target)
    sel.emit(Op.BRA, imm=LabelRef(target.name))


@handles("ret", "exit")
def lower_exit(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, {"uni"})
    sel.operands(ins, 0)
    sel.emit(Op.EXIT)


@handles("membar", "fence")
def lower_fence(sel: Selector, ins: ir.Instruction):
    """One memory, and one instruction at a time: every access is already ordered."""
