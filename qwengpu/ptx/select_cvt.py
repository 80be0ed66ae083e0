"""The `cvt` handler of `.f32`: it checks the types, the rounding and the modifiers, then calls
the conversion's routine: `select_convert` (32-bit and narrower integers, integral floats,
`__saturatef`) or `select_convert_wide` (64-bit integers).  What the PTX ISA says of each
conversion, and how it is lowered, is in those modules' docstrings and docs/ptx.md ("Floats").
.f16, .bf16, .f64 and every other float conversion are refused at the CUDA line.
"""

from __future__ import annotations

from qwengpu.ptx import ir
from qwengpu.ptx import select_convert_wide as wide
from qwengpu.ptx.select_convert import (FLOAT_ROUNDING, INTEGER_ROUNDING, NARROW,
                                        float_to_integer, integer_to_float, round_to_integral)
from qwengpu.ptx.select_float import flush_subnormal, saturate
from qwengpu.ptx.selector import Selector, handles_float

WIDE_TYPES = {"s64", "u64"}             # converted by select_convert_wide

@handles_float("cvt")
def lower_float_cvt(sel: Selector, ins: ir.Instruction):
    types = [modifier for modifier in ins.modifiers if modifier in ir.TYPE_WIDTHS]
    if len(types) != 2:
        raise sel.error("cvt needs a destination and a source type")
    to_type, from_type = types
    others = [modifier for modifier in ins.modifiers if modifier not in ir.TYPE_WIDTHS]
    for name in (to_type, from_type):
        if name not in ("f32", "s32", "u32", "s64", "u64") and \
                not (name == from_type and name in NARROW):
            raise sel.unsupported(ins, f"type .{name} (.f32 converts to and from .s32/.u32/"
                                       ".s64/.u64, from 8- and 16-bit integers, and to an "
                                       "integral .f32)")
    rounding = [m for m in others if m in INTEGER_ROUNDING or m in FLOAT_ROUNDING]
    flush = "ftz" in others
    if to_type == from_type == "f32" and not rounding and "sat" in others:
        lower_saturate(sel, ins, others)
        return
    allowed = {"ftz", *rounding} | ({"sat"} if to_type != "f32" else set())
    for modifier in others:
        if modifier not in allowed:
            raise sel.unsupported(ins, f"the .{modifier} modifier")
    wanted = FLOAT_ROUNDING if from_type != "f32" else tuple(INTEGER_ROUNDING)
    if len(rounding) != 1 or rounding[0] not in wanted:
        raise sel.unsupported(ins, "this rounding (it needs one of ."
                                   + ", .".join(wanted) + ")")
    mode = INTEGER_ROUNDING.get(rounding[0], rounding[0])
    destination, a = sel.operands(ins, 2)
    signed = ir.is_signed(from_type)
    if from_type in WIDE_TYPES:
        sel.write(destination, wide.integer64_to_float(sel, sel.pair(a, signed), signed, mode))
        return
    if to_type in WIDE_TYPES:
        result = wide.float_to_integer64(sel, sel.value(a), to_type == "s64", mode, flush)
        sel.commit(*zip(sel.destination_pair(destination), result))
        return
    source = sel.value(a, ir.type_width(from_type), signed)
    if from_type != "f32":
        result = integer_to_float(sel, source, signed, mode)
    elif to_type == "f32":
        result = round_to_integral(sel, source, mode, flush)
    else:
        result = float_to_integer(sel, source, to_type == "s32", mode, flush)
    sel.write(destination, result)


def lower_saturate(sel: Selector, ins: ir.Instruction, modifiers: list[str]):
    """`cvt{.ftz}.sat.f32.f32` (`__saturatef`): the input clamped to [+0.0, 1.0], a NaN to +0.0."""
    for modifier in modifiers:
        if modifier not in ("sat", "ftz"):
            raise sel.unsupported(ins, f"the .{modifier} modifier")
    destination, a = sel.operands(ins, 2)
    bits = sel.value(a)
    if "ftz" in modifiers:
        bits = flush_subnormal(sel, bits)
    sel.write(destination, saturate(sel, bits))
