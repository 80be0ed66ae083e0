"""Instruction selection for what the ISA has no instruction for: division and remainder by a
variable, population count, leading zeros, bit reverse and find-leading-bit.

All of them compute into temporaries without the PTX guard (`Selector.unguarded`: they have no
side effects and cannot fault) and commit the result under the guard.

- `div`/`rem` (.u32/.s32 and narrower; .u64/.s64 in `select_divide64`): restoring division, a loop of 32 steps that shifts the
  dividend's top bit into a running remainder and the quotient bit into the dividend's bottom
  (10 instructions, 32 times).  Signed division divides the magnitudes and fixes the signs
  (quotient negative when the signs differ, remainder with the sign of the dividend).  Division
  by zero gives quotient 0xFFFFFFFF and remainder the dividend (unsigned), as NVIDIA GPUs do;
  PTX leaves it unspecified.  Division by a power of two is a shift or a mask (signed: with
  the rounding towards zero C wants).
- `popc.b32`: the SWAR bit count (pairs, nibbles, bytes, then a multiply); `.b64` adds halves.
- `clz.b32`: a binary search over 16, 8, 4, 2, 1 bits; `clz(0) = 32`.  `.b64` uses the low
  half when the high half is 0.
- `bfind.u32` = 31 - clz, `bfind.s32` looks at `~x` for negative x, `.shiftamt` gives clz;
  0xFFFFFFFF when there is no such bit.
- `brev.b32`: five swaps (halves, bytes, nibbles, pairs, bits).
"""

from __future__ import annotations

from qwengpu.isa import MASK32, Cmp, Op
from qwengpu.ptx import ir
from qwengpu.ptx.select_divide64 import lower_divide_64
from qwengpu.ptx.selector import Selector, handles, operand_b
from qwengpu.ptx.vcode import LabelRef, Source, VReg

_DIVISION_STEPS = 32


@handles("div", "rem")
def lower_divide(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, set())
    type_name = sel.type_of(ins, {"u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64"})
    if ir.type_width(type_name) == 64:
        return lower_divide_64(sel, ins, type_name)
    destination, a, b = sel.operands(ins, 3)
    signed = ir.is_signed(type_name)
    width = ir.type_width(type_name)
    is_remainder = ins.opcode == "rem"
    with sel.unguarded():
        dividend = sel.value(a, width, signed)
        divisor = sel.value(b, width, signed)
        if not signed and isinstance(divisor, int) and divisor and divisor & (divisor - 1) == 0:
            shift = divisor.bit_length() - 1
            result = sel.alu(Op.AND, dividend, divisor - 1) if is_remainder else \
                sel.alu(Op.SHR_U, dividend, shift)
        elif signed and isinstance(divisor, int) and 0 < divisor < 1 << 31 and \
                divisor & (divisor - 1) == 0:
            result = _signed_divide_by_power_of_two(sel, dividend, divisor, is_remainder)
        elif signed:
            result = _signed_divide(sel, dividend, divisor, is_remainder)
        else:
            quotient, remainder = unsigned_divide(sel, dividend, divisor)
            result = remainder if is_remainder else quotient
    sel.write(destination, result, 32)


def _signed_divide_by_power_of_two(sel: Selector, dividend: Source, divisor: int,
                                   is_remainder: bool) -> Source:
    """Signed division by 2^k, rounding towards zero as C does: a negative dividend gets
    2^k - 1 added before the arithmetic shift (`(x >> 31) >>> (32 - k)`); the remainder is
    what the quotient leaves."""
    shift = divisor.bit_length() - 1
    bias = sel.alu(Op.SHR_U, sel.alu(Op.SHR_S, dividend, 31), 32 - shift)
    quotient = sel.alu(Op.SHR_S, sel.alu(Op.ADD, dividend, bias), shift)
    if not is_remainder:
        return quotient
    return sel.alu(Op.SUB, dividend, sel.alu(Op.SHL, quotient, shift))


def unsigned_divide(sel: Selector, dividend: Source, divisor: Source) -> tuple[VReg, VReg]:
    """(quotient, remainder) of two 32-bit words, by a 32-step restoring-division loop."""
    quotient = sel.temp()            # starts as the dividend; quotient bits shift in below
    remainder = sel.temp()
    steps = sel.temp()
    top_bit = sel.temp()
    sel.move(dividend, quotient)
    sel.move(0, remainder)
    sel.move(_DIVISION_STEPS, steps)
    divisor_operand = operand_b(divisor)
    loop = sel.new_label("divide")
    sel.place_label(loop)
    sel.emit(Op.SHR_U, d=top_bit, a=quotient, b=31)
    sel.emit(Op.SHL, d=remainder, a=remainder, b=1)
    sel.emit(Op.OR, d=remainder, a=remainder, b=top_bit)
    sel.emit(Op.SHL, d=quotient, a=quotient, b=1)
    fits = sel.compare(Cmp.HS, remainder, divisor_operand)
    sel.emit(Op.SUB, d=remainder, a=remainder, b=divisor_operand, guard=(fits, False))
    sel.emit(Op.OR, d=quotient, a=quotient, b=1, guard=(fits, False))
    sel.emit(Op.SUB, d=steps, a=steps, b=1)
    again = sel.compare(Cmp.NE, steps, 0)
    sel.emit(Op.BRA, imm=LabelRef(loop), guard=(again, False))
    return quotient, remainder


def _signed_divide(sel: Selector, dividend: Source, divisor: Source, is_remainder: bool):
    magnitude_a = _absolute(sel, dividend)
    magnitude_b = _absolute(sel, divisor)
    quotient, remainder = unsigned_divide(sel, magnitude_a, magnitude_b)
    if is_remainder:
        negative = sel.compare(Cmp.LT, dividend, 0)
        return _negate_where(sel, remainder, negative)
    signs_differ = sel.compare(Cmp.LT, sel.alu(Op.XOR, dividend, divisor), 0)
    return _negate_where(sel, quotient, signs_differ)


def _absolute(sel: Selector, value: Source) -> Source:
    if isinstance(value, int):
        signed = value - (1 << 32) if value >> 31 else value
        return abs(signed) & MASK32
    result = sel.temp()
    sel.emit(Op.ABS, d=result, a=value)
    return result


def _negate_where(sel: Selector, value: VReg, condition) -> VReg:
    result = sel.temp()
    sel.move(value, result)
    sel.emit(Op.SUB, d=result, a=sel.register(0), b=result, guard=(condition, False))
    return result


# ---- bit counting -------------------------------------------------------------------------------


@handles("popc", "clz", "brev", "bfind")
def lower_bit_count(sel: Selector, ins: ir.Instruction):
    sel.check_modifiers(ins, {"shiftamt"} if ins.opcode == "bfind" else set())
    allowed = {"u32", "s32", "u64", "s64"} if ins.opcode == "bfind" else {"b32", "b64"}
    if ins.opcode == "brev":
        allowed = {"b32"}
    type_name = sel.type_of(ins, allowed)
    destination, a = sel.operands(ins, 2)
    wide = ir.type_width(type_name) == 64
    with sel.unguarded():
        if ins.opcode == "popc":
            if wide:
                low, high = sel.pair(a)
                result = sel.alu(Op.ADD, population_count(sel, low), population_count(sel, high))
            else:
                result = population_count(sel, sel.value(a))
        elif ins.opcode == "clz":
            result = _leading_zeros_64(sel, sel.pair(a)) if wide else \
                leading_zeros(sel, sel.value(a))
        elif ins.opcode == "brev":
            result = bit_reverse(sel, sel.value(a))
        else:
            if wide:
                raise sel.unsupported(ins, "64-bit operands")
            result = _find_leading_bit(sel, sel.value(a), ir.is_signed(type_name),
                                       "shiftamt" in ins.modifiers)
    sel.write(destination, result, 32)


def population_count(sel: Selector, value: Source) -> Source:
    pairs = sel.alu(Op.SUB, value, sel.alu(Op.AND, sel.alu(Op.SHR_U, value, 1), 0x5555_5555))
    nibbles = sel.alu(Op.ADD, sel.alu(Op.AND, pairs, 0x3333_3333),
                      sel.alu(Op.AND, sel.alu(Op.SHR_U, pairs, 2), 0x3333_3333))
    octets = sel.alu(Op.AND, sel.alu(Op.ADD, nibbles, sel.alu(Op.SHR_U, nibbles, 4)), 0x0F0F_0F0F)
    return sel.alu(Op.SHR_U, sel.alu(Op.MUL, octets, 0x0101_0101), 24)


def leading_zeros(sel: Selector, value: Source) -> Source:
    """Zero bits above the highest 1 (32 for 0): halve the search window five times."""
    if isinstance(value, int):
        return 32 - (value & MASK32).bit_length()
    shifted = sel.temp()
    count = sel.temp()
    sel.move(value, shifted)
    sel.move(0, count)
    for bits in (16, 8, 4, 2, 1):
        empty = sel.compare(Cmp.LO, shifted, 1 << (32 - bits))
        sel.emit(Op.ADD, d=count, a=count, b=bits, guard=(empty, False))
        sel.emit(Op.SHL, d=shifted, a=shifted, b=bits, guard=(empty, False))
    zero = sel.compare(Cmp.EQ, shifted, 0)
    sel.emit(Op.ADD, d=count, a=count, b=1, guard=(zero, False))
    return count


def _leading_zeros_64(sel: Selector, pair) -> Source:
    low, high = pair
    high_zeros = leading_zeros(sel, high)
    low_zeros = sel.alu(Op.ADD, leading_zeros(sel, low), 32)
    high_empty = sel.compare(Cmp.EQ, high, 0)
    result = sel.temp()
    sel.emit(Op.SELP, d=result, a=sel.register(low_zeros), b=high_zeros, c=high_empty)
    return result


def _find_leading_bit(sel: Selector, value: Source, signed: bool, shift_amount: bool) -> Source:
    if signed:
        negative = sel.compare(Cmp.LT, value, 0)
        flipped = sel.temp()
        sel.move(value, flipped)
        sel.emit(Op.XOR, d=flipped, a=flipped, b=MASK32, guard=(negative, False))
        value = flipped
    zeros = leading_zeros(sel, value)
    found = zeros if shift_amount else sel.alu(Op.SUB, 31, zeros)
    none = sel.compare(Cmp.EQ, zeros, 32)
    result = sel.temp()
    sel.move(found, result)
    sel.emit(Op.ADD, d=result, a=sel.register(0), b=MASK32, guard=(none, False))
    return result


def bit_reverse(sel: Selector, value: Source) -> Source:
    for shift, low_mask in ((16, 0x0000_FFFF), (8, 0x00FF_00FF), (4, 0x0F0F_0F0F),
                            (2, 0x3333_3333), (1, 0x5555_5555)):
        down = sel.alu(Op.AND, sel.alu(Op.SHR_U, value, shift), low_mask)
        up = sel.alu(Op.SHL, sel.alu(Op.AND, value, low_mask), shift)
        value = sel.alu(Op.OR, down, up)
    return value

