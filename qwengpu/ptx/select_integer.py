"""Instruction selection for PTX integer and predicate arithmetic.

One handler per PTX opcode family.  Each reads its operands at the instruction's type width
(`Selector.value` zero- or sign-extends 8- and 16-bit values to 32 bits), computes with QwenGPU
ALU operations, and writes the result back cut to the destination's width.  64-bit types go
through `select_wide`.  The lowering of each opcode is listed in docs/ptx.md.
"""

from __future__ import annotations

from typing import Callable

from qwengpu.isa import MASK32, Cmp, Op
from qwengpu.ptx import ir, select_wide as wide
from qwengpu.ptx.selector import Selector, handles, mask, operand_b
from qwengpu.ptx.vcode import Source, VPred

SIGNED_COMPARISONS = {"eq": Cmp.EQ, "ne": Cmp.NE, "lt": Cmp.LT, "le": Cmp.LE, "gt": Cmp.GT,
                      "ge": Cmp.GE, "lo": Cmp.LO, "ls": Cmp.LS, "hi": Cmp.HI, "hs": Cmp.HS}
UNSIGNED_COMPARISONS = {"eq": Cmp.EQ, "ne": Cmp.NE, "lt": Cmp.LO, "le": Cmp.LS, "gt": Cmp.HI,
                        "ge": Cmp.HS, "lo": Cmp.LO, "ls": Cmp.LS, "hi": Cmp.HI, "hs": Cmp.HS}
PREDICATE_OPS = {"and": Op.PAND, "or": Op.POR, "xor": Op.PXOR}
BITWISE_OPS = {"and": Op.AND, "or": Op.OR, "xor": Op.XOR}


def _width(type_name: str) -> int:
    return ir.type_width(type_name)


# ---- moves --------------------------------------------------------------------------------------


@handles("mov")
def lower_mov(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, set())
    type_name = sel.type_of(ins)
    destination, source = sel.operands(ins, 2)
    if type_name == "pred":
        sel.commit((sel.destination_predicate(destination), sel.predicate(source)))
        return
    width = _width(type_name)
    if isinstance(destination, ir.Vector):
        _unpack(sel, destination, source, width)
    elif isinstance(source, ir.Vector):
        _pack(sel, destination, source, width)
    elif width == 64:
        sel.commit(*zip(sel.destination_pair(destination), sel.pair(source)))
    else:
        sel.write(destination, sel.value(source, width), width)


def _element_words(sel: Selector, vector: ir.Vector, total_width: int) -> tuple[int, list]:
    count = len(vector.elements)
    if count not in (2, 4) or total_width % count:
        raise sel.error(f"a vector of {count} elements does not split a {total_width}-bit value",
                        vector)
    return total_width // count, list(vector.elements)


def _unpack(sel: Selector, vector: ir.Vector, source, width: int):
    """`mov.b64 {%r1, %r2}, %rd1`: element k takes bits k*w .. k*w+w-1 of the source."""
    element_width, elements = _element_words(sel, vector, width)
    words = sel.pair(source) if width == 64 else (sel.value(source, width),)
    moves = []
    for index, element in enumerate(elements):
        if element is None:
            continue
        word = words[index * element_width // 32]
        shift = index * element_width % 32
        value = sel.alu(Op.SHR_U, word, shift)
        if element_width < 32:
            value = sel.alu(Op.AND, value, mask(element_width))
        destination, register_width = sel.destination(element)
        moves.append((destination, value))
    sel.commit(*moves)


def _pack(sel: Selector, destination, vector: ir.Vector, width: int):
    """`mov.b64 %rd1, {%r1, %r2}`: the inverse of `_unpack`."""
    element_width, elements = _element_words(sel, vector, width)
    words: list[Source] = [0] * max(width // 32, 1)
    for index, element in enumerate(elements):
        if element is None:
            raise sel.error("'_' cannot be a source", vector)
        value = sel.value(element, element_width)
        shift = index * element_width % 32
        word = index * element_width // 32
        words[word] = sel.alu(Op.OR, words[word], sel.alu(Op.SHL, value, shift))
    if width == 64:
        sel.commit(*zip(sel.destination_pair(destination), words))
    else:
        sel.write(destination, words[0], width)


# ---- add, sub, and, or, xor, not, neg, abs, min, max, cnot ----------------------------------------


@handles("add", "sub", "and", "or", "xor")
def lower_binary(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, set())
    type_name = sel.type_of(ins)
    destination, a, b = sel.operands(ins, 3)
    if type_name == "pred":
        if ins.opcode not in PREDICATE_OPS:
            raise sel.unsupported(ins, "predicate arithmetic")
        sel.predicate_op(PREDICATE_OPS[ins.opcode], sel.predicate(a), sel.predicate(b),
                         into=sel.destination_predicate(destination))
        return
    op = {"add": Op.ADD, "sub": Op.SUB, **BITWISE_OPS}[ins.opcode]
    width = _width(type_name)
    if width == 64:
        a_pair, b_pair = sel.pair(a), sel.pair(b)
        if op == Op.ADD:
            result = wide.add(sel, a_pair, b_pair)
        elif op == Op.SUB:
            result = wide.sub(sel, a_pair, b_pair)
        else:
            result = wide.bitwise(sel, op, a_pair, b_pair)
        sel.commit(*zip(sel.destination_pair(destination), result))
        return
    value = sel.alu(op, sel.value(a, width), sel.value(b, width))
    sel.write(destination, value, 32 if op in (Op.ADD, Op.SUB) else width)


@handles("not", "cnot")
def lower_not(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, set())
    type_name = sel.type_of(ins)
    destination, a = sel.operands(ins, 2)
    if type_name == "pred":
        if ins.opcode != "not":
            raise sel.unsupported(ins)
        sel.predicate_op(Op.PNOT, sel.predicate(a), into=sel.destination_predicate(destination))
        return
    width = _width(type_name)
    if width == 64:
        low, high = sel.pair(a)
        if ins.opcode == "not":
            result = (sel.alu(Op.XOR, low, MASK32), sel.alu(Op.XOR, high, MASK32))
        else:
            result = (_logical_not(sel, sel.alu(Op.OR, low, high)), 0)
        sel.commit(*zip(sel.destination_pair(destination), result))
        return
    value = sel.value(a, width)
    if ins.opcode == "not":
        sel.write(destination, sel.alu(Op.XOR, value, mask(width)), width)
    else:
        sel.write(destination, _logical_not(sel, value), 1)


def _logical_not(sel: Selector, value: Source) -> Source:
    """1 when value is 0, else 0: min(value, 1) is 0 or 1, flipped."""
    return sel.alu(Op.XOR, sel.alu(Op.MIN_U, value, 1), 1)


@handles("neg", "abs")
def lower_negate(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, set())
    type_name = sel.type_of(ins, {"s8", "s16", "s32", "s64"})
    destination, a = sel.operands(ins, 2)
    width = _width(type_name)
    if width == 64:
        pair = sel.pair(a)
        result = wide.negate(sel, pair) if ins.opcode == "neg" else wide.absolute(sel, pair)
        sel.commit(*zip(sel.destination_pair(destination), result))
        return
    value = sel.value(a, width, signed=True)
    if ins.opcode == "neg":
        result = sel.alu(Op.SUB, 0, value)
    elif isinstance(value, int):
        result = abs(value - (1 << 32) if value >> 31 else value) & MASK32
    else:
        result = sel.temp()
        sel.emit(Op.ABS, d=result, a=value)
    sel.write(destination, result, 32)


@handles("min", "max")
def lower_min_max(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, set())
    type_name = sel.type_of(ins, {"u16", "u32", "u64", "s16", "s32", "s64"})
    destination, a, b = sel.operands(ins, 3)
    signed = ir.is_signed(type_name)
    width = _width(type_name)
    if width == 64:
        result = wide.minimum_maximum(sel, sel.pair(a), sel.pair(b), signed,
                                      ins.opcode == "min")
        sel.commit(*zip(sel.destination_pair(destination), result))
        return
    op = {("min", True): Op.MIN_S, ("min", False): Op.MIN_U, ("max", True): Op.MAX_S,
          ("max", False): Op.MAX_U}[ins.opcode, signed]
    value = sel.alu(op, sel.value(a, width, signed), sel.value(b, width, signed))
    sel.write(destination, value, 32 if signed else width)


# ---- shifts -------------------------------------------------------------------------------------


@handles("shl", "shr")
def lower_shift(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, set())
    type_name = sel.type_of(ins)
    destination, a, amount = sel.operands(ins, 3)
    signed = ins.opcode == "shr" and ir.is_signed(type_name)
    width = _width(type_name)
    shift = sel.value(amount, 32)
    if width == 64:
        pair = sel.pair(a)
        if ins.opcode == "shl":
            result = wide.shift_left(sel, pair, shift)
        else:
            result = wide.shift_right(sel, pair, shift, signed)
        sel.commit(*zip(sel.destination_pair(destination), result))
        return
    op = Op.SHL if ins.opcode == "shl" else Op.SHR_S if signed else Op.SHR_U
    # PTX clamps the amount at the type width; the machine's shifts saturate at 32, and a
    # narrow value sits extended in 32 bits, so the same instruction is exact.
    value = sel.alu(op, sel.value(a, width, signed), shift)
    sel.write(destination, value, width if op == Op.SHR_U else 32)


@handles("shf")
def lower_funnel_shift(sel: Selector, ins: ir.Instruction):
    """shf.l: high word of ({b:a} << n); shf.r: low word of ({b:a} >> n)."""
    sel.check_modifiers(ins, {"l", "r", "wrap", "clamp", "b32"})
    sel.type_of(ins, {"b32"})
    destination, a, b, amount = sel.operands(ins, 4)
    left = "l" in ins.modifiers
    low, high = sel.value(a), sel.value(b)
    n = sel.value(amount)
    if "clamp" in ins.modifiers:
        n = sel.alu(Op.MIN_U, n, 32)
    elif "wrap" in ins.modifiers:
        n = sel.alu(Op.AND, n, 31)
    else:
        raise sel.error("shf needs .wrap or .clamp")
    if isinstance(n, int):
        back = 32 - n
    else:
        back = sel.alu(Op.ADD, sel.alu(Op.SUB, 0, n), 32)
    if left:
        value = sel.alu(Op.OR, sel.alu(Op.SHL, high, n), sel.alu(Op.SHR_U, low, back))
    else:
        value = sel.alu(Op.OR, sel.alu(Op.SHR_U, low, n), sel.alu(Op.SHL, high, back))
    sel.write(destination, value)


# ---- multiplication -----------------------------------------------------------------------------


@handles("mul", "mad")
def lower_multiply(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, {"lo", "hi", "wide"})
    type_name = sel.type_of(ins, {"u16", "u32", "u64", "s16", "s32", "s64"})
    mode = next((mode for mode in ("lo", "hi", "wide") if mode in ins.modifiers), None)
    if mode is None:
        raise sel.error(f"'{ins.full_opcode}' needs .lo, .hi or .wide")
    is_mad = ins.opcode == "mad"
    operands = sel.operands(ins, 4 if is_mad else 3)
    destination, a, b = operands[:3]
    signed = ir.is_signed(type_name)
    width = _width(type_name)
    if width == 64:
        _multiply_64(sel, ins, mode, operands)
        return
    a_value, b_value = sel.value(a, width, signed), sel.value(b, width, signed)
    if mode == "wide" and width == 32:
        product = wide.multiply_wide(sel, a_value, b_value, signed)
        if is_mad:
            product = wide.add(sel, product, sel.pair(operands[3], signed))
        sel.commit(*zip(sel.destination_pair(destination), product))
        return
    if width == 32 and mode == "lo":
        if is_mad:
            value = wide.multiply_add(sel, a_value, b_value, sel.value(operands[3]))
        else:
            value = sel.alu(Op.MUL, a_value, b_value)
        sel.write(destination, value)
        return
    if width == 32:  # hi
        value = sel.alu(Op.MULHI_S if signed else Op.MULHI_U, a_value, b_value)
    else:
        # 8/16-bit operands: the full product fits in 32 bits.
        value = sel.alu(Op.MUL, a_value, b_value)
        if mode == "hi":
            value = sel.alu(Op.SHR_U, value, width)
    result_width = 2 * width if mode == "wide" else width
    if is_mad:
        value = sel.alu(Op.ADD, value, sel.value(operands[3], result_width, signed))
    if mode != "wide" or width < 32:
        value = sel.alu(Op.AND, value, mask(result_width)) if result_width < 32 else value
    sel.write(destination, value, result_width)


def _multiply_64(sel: Selector, ins: ir.Instruction, mode: str, operands: tuple):
    if mode != "lo":
        raise sel.unsupported(ins, "the high half of a 64 x 64-bit product")
    destination, a, b = operands[:3]
    product = wide.multiply_low(sel, sel.pair(a), sel.pair(b))
    if ins.opcode == "mad":
        product = wide.add(sel, product, sel.pair(operands[3]))
    sel.commit(*zip(sel.destination_pair(destination), product))


# ---- comparisons and selection --------------------------------------------------------------------


@handles("setp")
def lower_setp(sel: Selector, ins: ir.Instruction):
    if not ins.modifiers or ins.modifiers[0] not in SIGNED_COMPARISONS:
        raise sel.unsupported(ins, "this comparison (integer comparisons are eq ne lt le gt ge "
                                   "lo ls hi hs)")
    boolean = next((m for m in ins.modifiers[1:] if m in PREDICATE_OPS), None)
    sel.check_modifiers(ins, {ins.modifiers[0], boolean} - {None})
    type_name = sel.type_of(ins)
    if type_name == "pred":
        raise sel.unsupported(ins, "comparing predicates")
    a, b = sel.operands(ins, 4 if boolean else 3)[1:3]
    signed = ir.is_signed(type_name)
    cmp = (SIGNED_COMPARISONS if signed else UNSIGNED_COMPARISONS)[ins.modifiers[0]]
    width = _width(type_name)

    def compare(into: VPred | None) -> VPred:
        if width == 64:
            return wide.compare(sel, cmp, sel.pair(a, signed), sel.pair(b, signed), into=into)
        return sel.compare(cmp, sel.value(a, width, signed), sel.value(b, width, signed),
                           into=into)

    commit_setp(sel, ins, boolean, compare)


def commit_setp(sel: Selector, ins: ir.Instruction, boolean: str | None,
                compare: Callable[[VPred | None], VPred]):
    """The destinations of `setp` (also `select_float`'s): `p` or `p|q` (q = !t), each
    combined with the predicate `c` by `.and`/`.or`/`.xor`.  `compare(into)` computes the
    outcome t, into the destination itself when nothing is combined with it."""
    destination = sel.operands(ins, 4 if boolean else 3)[0]
    second = None
    if isinstance(destination, ir.RegisterPair):
        first = sel.predicate_register(destination.first, destination.loc)
        second = sel.predicate_register(destination.second, destination.loc)
    else:
        first = sel.destination_predicate(destination)
    direct = first if boolean is None and second is None else None
    outcome = compare(direct)
    if direct is not None:
        return
    results = [(first, outcome)]
    if second is not None:
        results.append((second, sel.predicate_op(Op.PNOT, outcome)))
    if boolean is not None:
        other = sel.predicate(ins.operands[3])
        results = [(target, sel.predicate_op(PREDICATE_OPS[boolean], value, other))
                   for target, value in results]
    sel.commit(*results)


@handles("selp")
def lower_selp(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, set())
    type_name = sel.type_of(ins)
    destination, a, b, condition = sel.operands(ins, 4)
    predicate = sel.predicate(condition)
    width = _width(type_name)
    if width == 64:
        result = wide.select(sel, predicate, sel.pair(a), sel.pair(b))
        sel.commit(*zip(sel.destination_pair(destination), result))
        return
    a_value, b_value = sel.value(a, width), sel.value(b, width)
    if a_value == b_value:
        sel.write(destination, a_value, width)
        return
    value = sel.temp()
    sel.emit(Op.SELP, d=value, a=sel.register(a_value), b=operand_b(b_value), c=predicate)
    sel.write(destination, value, width)


# ---- conversions ---------------------------------------------------------------------------------


@handles("cvt")
def lower_cvt(sel: Selector, ins: ir.Instruction):
    types = [modifier for modifier in ins.modifiers if modifier in ir.TYPE_WIDTHS]
    if len(types) != 2:
        raise sel.error("cvt needs a destination and a source type")
    if any(name not in ir.INTEGER_TYPES for name in types):
        raise sel.unsupported(ins, "floating point (QwenGPU computes with integers only)")
    sel.check_modifiers(ins, set())
    destination_type, source_type = types
    destination, a = sel.operands(ins, 2)
    to_width, from_width = _width(destination_type), _width(source_type)
    to_signed, from_signed = ir.is_signed(destination_type), ir.is_signed(source_type)
    if from_width == 64:
        low, high = sel.pair(a)
    else:
        low = sel.value(a, from_width, from_signed)
        high = sel.sign_word(low) if from_signed else 0
    if to_width == 64:
        sel.commit(*zip(sel.destination_pair(destination), (low, high)))
        return
    value = sel.extend(low, to_width, to_signed)
    sel.write(destination, value, 32 if to_signed else to_width, signed=to_signed)


# ---- bit fields and byte permutes --------------------------------------------------------------


@handles("bfe")
def lower_bfe(sel: Selector, ins: ir.Instruction):
    """Extract `len` bits at `pos` (both taken mod 256), sign-extended for .s32."""
    sel.check_modifiers(ins, set())
    type_name = sel.type_of(ins, {"u32", "s32"})
    destination, a, position, length = sel.operands(ins, 4)
    value = sel.value(a)
    pos, size = sel.value(position), sel.value(length)
    signed = type_name == "s32"
    if isinstance(pos, int) and isinstance(size, int):
        pos, size = pos & 0xFF, size & 0xFF
        if size == 0:
            result = 0
        elif not signed:
            result = sel.alu(Op.AND, sel.alu(Op.SHR_U, value, pos),
                             mask(min(size, 32 - pos)) if pos < 32 else 0)
        elif pos >= 32:
            result = sel.alu(Op.SHR_S, value, 31)
        else:
            top = min(pos + size, 32)
            result = sel.alu(Op.SHR_S, sel.alu(Op.SHL, value, 32 - top), 32 - top + pos)
        sel.write(destination, result)
        return
    if signed:
        raise sel.unsupported(ins, "a signed bit field with a register position or length")
    shifted = sel.alu(Op.SHR_U, value, sel.alu(Op.AND, pos, 0xFF))
    field_mask = sel.alu(Op.XOR, sel.alu(Op.SHL, MASK32, sel.alu(Op.AND, size, 0xFF)), MASK32)
    sel.write(destination, sel.alu(Op.AND, shifted, field_mask))


@handles("bfi")
def lower_bfi(sel: Selector, ins: ir.Instruction):
    """Insert the low `len` bits of a into b at `pos` (constant position and length)."""
    sel.check_modifiers(ins, set())
    sel.type_of(ins, {"b32"})
    destination, a, b, position, length = sel.operands(ins, 5)
    pos, size = sel.value(position), sel.value(length)
    if not (isinstance(pos, int) and isinstance(size, int)):
        raise sel.unsupported(ins, "a register position or length")
    pos, size = pos & 0xFF, size & 0xFF
    base = sel.value(b)
    if size == 0 or pos >= 32:
        sel.write(destination, base)
        return
    field = mask(min(size, 32 - pos)) << pos
    inserted = sel.alu(Op.AND, sel.alu(Op.SHL, sel.value(a), pos), field)
    kept = sel.alu(Op.AND, base, ~field & MASK32)
    sel.write(destination, sel.alu(Op.OR, kept, inserted))
