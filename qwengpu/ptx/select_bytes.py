"""Instruction selection for byte-level PTX: `prmt` (byte permute) and `dp4a`/`dp2a` (dot
products of bytes and halfwords).

`prmt.b32{.mode} d, a, b, c` picks four bytes of the eight of {b, a} (a is bytes 0..3, b bytes
4..7).  The default mode reads four selector nibbles from c, one per result byte: bits 0..2
name the byte, bit 3 replicates its sign over the byte.  The modes read only c[1:0] and choose
one of four fixed permutations (`MODE_SELECTORS`, the PTX ISA's table).

- a constant selector (and any mode with a constant c): each result byte is a shift and a
  mask of a or b; bytes that move by the same distance from the same word share them;
- a register selector, default mode: a loop over the four result bytes (21 instructions, run
  4 times): shift amount `8 * (nibble & 7)` from the nibble, `(a >> s) | (b >> (s - 32))` (the
  machine's shifts of 32 or more give 0, so exactly one side survives), the sign replicated
  under a predicate when bit 3 is set, the byte shifted in from the top;
- a register selector with a mode: the mode's four selectors are constants, chosen by
  `c & 3` with `selp`s, then the loop.

`dp4a.atype.btype d, a, b, c`: `d = c + sum a.byte[i] * b.byte[i]`, each byte extended by
its operand's type (`.u32` zero, `.s32` sign); `dp2a.lo/.hi`: `d = c + a.half[0] * b.byte[k]
+ a.half[1] * b.byte[k + 1]`, k = 0 for `.lo` and 2 for `.hi`.  Each term is extracted with
one or two shifts (nothing for a constant operand) and added with `mad`.
"""

from __future__ import annotations

from qwengpu.isa import MASK32, Cmp, Op
from qwengpu.ptx import ir
from qwengpu.ptx.selector import Selector, handles
from qwengpu.ptx.vcode import LabelRef, Source

# For each mode, the generic selector (four nibbles) that each value of c[1:0] stands for:
# result byte i takes byte (selector >> 4i) & 7 of {b, a}.
MODE_BYTES = {
    "f4e": ((0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)),
    "b4e": ((0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)),
    "rc8": ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    "ecl": ((0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)),
    "ecr": ((0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)),
    "rc16": ((0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)),
}
MODE_SELECTORS = {mode: tuple(sum(byte << (4 * index) for index, byte in enumerate(bytes_))
                              for bytes_ in rows)
                  for mode, rows in MODE_BYTES.items()}


@handles("prmt")
def lower_prmt(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, set(MODE_SELECTORS))
    sel.type_of(ins, {"b32"})
    destination, a, b, selector = sel.operands(ins, 4)
    modes = [modifier for modifier in ins.modifiers if modifier in MODE_SELECTORS]
    if len(modes) > 1:
        raise sel.error(f"'{ins.full_opcode}' has more than one mode")
    mode = modes[0] if modes else None
    control = sel.value(selector)
    sources = (sel.value(a), sel.value(b))
    if isinstance(control, int):
        if mode is not None:
            control = MODE_SELECTORS[mode][control & 3]
        sel.write(destination, permute_constant(sel, sources, control))
        return
    with sel.unguarded():
        if mode is not None:
            control = _mode_selector(sel, control, MODE_SELECTORS[mode])
        result = permute_register(sel, sources, control)
    sel.write(destination, result)


def permute_constant(sel: Selector, sources: tuple[Source, Source], control: int) -> Source:
    """The bytes of {b, a} a constant selector picks, sign-replicating nibbles too."""
    groups: dict[tuple[int, int], int] = {}
    pieces: list[Source] = []
    for index in range(4):
        nibble = (control >> (4 * index)) & 0xF
        byte = nibble & 7
        word = sources[byte >> 2]
        if nibble & 8:
            sign = sel.alu(Op.SHR_S, sel.alu(Op.SHL, word, 24 - 8 * (byte & 3)), 31)
            pieces.append(sel.alu(Op.AND, sign, 0xFF << (8 * index)))
            continue
        key = (byte >> 2, 8 * (index - (byte & 3)))
        groups[key] = groups.get(key, 0) | (0xFF << (8 * index))
    for (word_index, distance), byte_mask in sorted(groups.items()):
        word = sources[word_index]
        moved = sel.alu(Op.SHL, word, distance) if distance >= 0 else \
            sel.alu(Op.SHR_U, word, -distance)
        pieces.append(sel.alu(Op.AND, moved, byte_mask))
    value: Source = 0
    for piece in pieces:
        value = sel.alu(Op.OR, value, piece)
    return value


def _mode_selector(sel: Selector, control: Source, selectors: tuple[int, ...]) -> Source:
    """The generic selector a mode's c[1:0] stands for: `selp` among its four constants."""
    low_bits = sel.alu(Op.AND, control, 3)
    chosen = sel.temp()
    sel.move(selectors[0], chosen)
    for value, selector in enumerate(selectors[1:], 1):
        if selector == selectors[0]:
            continue
        here = sel.compare(Cmp.EQ, low_bits, value)
        sel.emit(Op.ADD, d=chosen, a=sel.register(0), b=selector, guard=(here, False))
    return chosen


def permute_register(sel: Selector, sources: tuple[Source, Source], control: Source) -> Source:
    """Four passes of a loop, one a result byte: the byte the low nibble of `nibbles` picks
    (its sign replicated when the nibble's bit 3 is set) enters the result from the top."""
    low_word, high_word = (sel.register(source) for source in sources)
    result, nibbles, steps = sel.temp(), sel.temp(), sel.temp()
    shift, high_shift, picked, other = sel.temp(), sel.temp(), sel.temp(), sel.temp()
    sel.move(0, result)
    sel.move(control, nibbles)
    sel.move(4, steps)
    loop = sel.new_label("permute")
    sel.place_label(loop)
    sel.emit(Op.SHL, d=shift, a=nibbles, b=3)
    sel.emit(Op.AND, d=shift, a=shift, b=56)                # 8 * (nibble & 7)
    sel.emit(Op.SHR_U, d=picked, a=low_word, b=shift)       # a's byte, or 0 past a
    sel.emit(Op.ADD, d=high_shift, a=shift, b=-32 & MASK32)
    sel.emit(Op.SHR_U, d=other, a=high_word, b=high_shift)  # b's byte, or 0 before b
    sel.emit(Op.OR, d=picked, a=picked, b=other)
    sel.emit(Op.SHL, d=picked, a=picked, b=24)              # the byte at the top
    sel.emit(Op.AND, d=other, a=nibbles, b=8)
    replicate = sel.compare(Cmp.NE, other, 0)
    sel.emit(Op.SHR_S, d=picked, a=picked, b=31, guard=(replicate, False))
    sel.emit(Op.SHL, d=picked, a=picked, b=24, guard=(replicate, False))
    sel.emit(Op.SHR_U, d=result, a=result, b=8)
    sel.emit(Op.OR, d=result, a=result, b=picked)
    sel.emit(Op.SHR_U, d=nibbles, a=nibbles, b=4)
    sel.emit(Op.SUB, d=steps, a=steps, b=1)
    again = sel.compare(Cmp.NE, steps, 0)
    sel.emit(Op.BRA, imm=LabelRef(loop), guard=(again, False))
    return result


# ---- dot products -------------------------------------------------------------------------------


@handles("dp4a", "dp2a")
def lower_dot_product(sel: Selector, ins: ir.Instruction):
    halves = ins.opcode == "dp2a"
    sel.check_modifiers(ins, {"lo", "hi"} if halves else set())
    types = [modifier for modifier in ins.modifiers if modifier in ir.TYPE_WIDTHS]
    if len(types) != 2 or any(name not in ("u32", "s32") for name in types):
        raise sel.error(f"'{ins.full_opcode}' needs two types, each .u32 or .s32 "
                        f"({ins.opcode}.atype.btype)")
    if halves and ins.has("lo") == ins.has("hi"):
        raise sel.error(f"'{ins.full_opcode}' needs one of .lo and .hi")
    a_signed, b_signed = (ir.is_signed(name) for name in types)
    destination, a, b, addend = sel.operands(ins, 4)
    first, second, total = sel.value(a), sel.value(b), sel.value(addend)
    start = 2 if ins.has("hi") else 0
    # each term is extracted just before its mad: two temporaries live at a time
    for k in range(2 if halves else 4):
        left = _field(sel, first, 16 * k, 16, a_signed) if halves else \
            _field(sel, first, 8 * k, 8, a_signed)
        right = _field(sel, second, 8 * (start + k) if halves else 8 * k, 8, b_signed)
        total = _multiply_add(sel, left, right, total)
    sel.write(destination, total)


def _field(sel: Selector, word: Source, position: int, width: int, signed: bool) -> Source:
    """Bits position..position+width-1 of `word`, sign- or zero-extended to 32 bits."""
    if isinstance(word, int):
        value = (word >> position) & ((1 << width) - 1)
        if signed and value >> (width - 1):
            value -= 1 << width
        return value & MASK32
    top = position + width
    if signed:
        moved = sel.alu(Op.SHL, word, 32 - top) if top < 32 else word
        return sel.alu(Op.SHR_S, moved, 32 - width)
    if top == 32:
        return sel.alu(Op.SHR_U, word, position)
    return sel.alu(Op.AND, sel.alu(Op.SHR_U, word, position) if position else word,
                   (1 << width) - 1)


def _multiply_add(sel: Selector, left: Source, right: Source, total: Source) -> Source:
    if isinstance(left, int) and isinstance(right, int):
        return sel.alu(Op.ADD, total, (left * right) & MASK32)
    if isinstance(left, int):
        left, right = right, left
    if isinstance(right, int) and right & MASK32 == 0:
        return total
    product = sel.temp()
    sel.emit(Op.MAD, d=product, a=sel.register(left), b=right, c=sel.register(total))
    return product
