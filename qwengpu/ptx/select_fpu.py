"""Instruction selection for float arithmetic: `add`, `sub` and `mul` of `.f32`.

The FPU's add is two instructions, as a two-cycle functional unit (specs/qwengpu.hdl,
"The FPU"; docs/isa.md, "Floating point"): `fadd.s1 t, a, B` aligns and adds, `fadd.s2 d, a,
B, t` normalises and rounds.  Together they are IEEE-754 binary32 addition, rounded to
nearest even, with subnormals in and out and every NaN result the canonical 0x7FFFFFFF, which
is what the PTX ISA says of `add.f32` ("Floating Point Instructions: add", https://docs.
nvidia.com/cuda/parallel-thread-execution/#floating-point-instructions-add: `.rn` is the
default rounding; "NaN results are flushed to canonical NaN"):

- `add{.rn}{.ftz}{.sat}.f32 d, a, b`: the pair above (known operands are added at load time by
  the spec's own FPU, `fold`);
- `sub{.rn}{.ftz}{.sat}.f32 d, a, b`: a + (-b), b's sign flipped first (a NaN b gives the
  canonical NaN either way);
- `mul{.rn}{.ftz}{.sat}.f32 d, a, b`: the FPU has no multiplier yet, so the product is a
  routine of 52 integer instructions (`float_multiply`, docs/fpu.md): the 24-bit
  significands' exact 48-bit product from the integer multiplier, normalised, shifted into
  the subnormal range where the exponent says, rounded to nearest even with a sticky bit
  (`round_to_binary32`, which `select_float_divide`'s division and root share), with PTX's
  special cases (canonical NaN, inf * 0 = NaN, overflow to infinity); a routine used twice
  in a kernel is shared (`qwengpu/ptx/routines.py`), and a multiply by +-0.5, 2, 4 or 8 is
  none (`scale_by_power_of_two`: FPU doublings, or a halving of the exponent);
- `.ftz`: subnormal inputs and a subnormal result become the zero of their sign;
- `.sat`: the result clamped to [+0.0, 1.0], a NaN to +0.0.

The directed roundings `.rz .rm .rp` (`__fadd_rz`, `__fmul_ru` and kin) are refused at the
CUDA line.  `fma` is `select_float_fma`'s routine.
"""

from __future__ import annotations

import numpy as np

from qwengpu.isa import Cmp, Op
from qwengpu.ptx import fold, ir, routines
from qwengpu.ptx.select_float import (CANONICAL_NAN, INFINITY, MAGNITUDE, ONE, SIGN,
                                      SMALLEST_NORMAL, check_float_modifiers, choose,
                                      flush_subnormal, is_nan_bits, saturate)
from qwengpu.ptx.select_convert import fresh
from qwengpu.ptx.selector import Selector, handles_float, operand_b
from qwengpu.ptx.vcode import ZERO, Source, VReg

DIRECTED_ROUNDING = ("rz", "rm", "rp")
MINUS_ONE = 0xBF80_0000                  # -1.0
# The float routines a kernel shares when it uses one more than once (qwengpu/ptx/routines.py)
ROUTINE_OF = {"mul": "fmul", "div": "fdiv", "rcp": "fdiv", "sqrt": "fsqrt", "fma": "ffma",
              "mad": "ffma"}
# A multiply by one of these constants needs no routine (`scale_by_power_of_two`).
DOUBLINGS = {0x4000_0000: 1, 0x4080_0000: 2, 0x4100_0000: 3}         # 2, 4, 8
HALF = 0x3F00_0000


def routine_kind(ins: ir.Instruction) -> str | None:
    if "f32" not in ins.modifiers or (ins.opcode == "mul" and scaling_constant(ins) is not None):
        return None
    return ROUTINE_OF.get(ins.opcode)


def scaling_constant(ins: ir.Instruction) -> int | None:
    """The float immediate of a `mul` that is +-0.5, 2, 4 or 8 (the other operand not a
    constant too), else None."""
    sources = ins.operands[1:3]
    constants = [operand for operand in sources if isinstance(operand, ir.Immediate)]
    if len(constants) != 1:
        return None
    magnitude = constants[0].value & MAGNITUDE
    return constants[0].value if magnitude == HALF or magnitude in DOUBLINGS else None


def call_routine(sel: Selector, ins: ir.Instruction, body, arguments: list[Source]) -> Source:
    """`body` on `arguments`: inlined where the kernel uses the routine once, else a call of
    its shared copy."""
    kind = routine_kind(ins)
    return routines.call(sel, kind, body, arguments,
                         shared=routines.uses(sel.kernel, routine_kind, kind) > 1)


def refuse_directed_rounding(sel: Selector, ins: ir.Instruction, rounder: str):
    """The directed roundings `.rz .rm .rp` are refused: `rounder` (the FPU, a routine) rounds
    to nearest even only."""
    for mode in DIRECTED_ROUNDING:
        if mode in ins.modifiers:
            raise sel.unsupported(ins, f"the .{mode} rounding ({rounder} rounds to nearest "
                                       "even: .rn)")


@handles_float("add", "sub", "mul")
def lower_float_arithmetic(sel: Selector, ins: ir.Instruction):
    refuse_directed_rounding(sel, ins, "QwenGPU's mul" if ins.opcode == "mul" else
                             "QwenGPU's FPU")
    check_float_modifiers(sel, ins, {"rn", "ftz", "sat"})
    destination, a, b = sel.operands(ins, 3)
    flush = "ftz" in ins.modifiers
    left, right = sel.value(a), sel.value(b)
    if flush:
        left, right = flush_subnormal(sel, left), flush_subnormal(sel, right)
    if ins.opcode == "sub":
        right = sel.alu(Op.XOR, right, SIGN)
    constant = scaling_constant(ins) if ins.opcode == "mul" else None
    if constant is not None:
        result = scale_by_power_of_two(sel, right if isinstance(left, int) else left, constant)
    elif ins.opcode == "mul":
        result = call_routine(sel, ins, float_multiply, [left, right])
    else:
        result = float_add(sel, left, right)
    if flush:
        result = flush_subnormal(sel, result)
    if "sat" in ins.modifiers:
        result = saturate(sel, result)
    sel.write(destination, result)


def float_add(sel: Selector, a: Source, b: Source) -> Source:
    """a + b on the FPU: `fadd.s1` then `fadd.s2` (the addition is commutative to the bit, so
    a known operand goes to B)."""
    if isinstance(a, int) and isinstance(b, int):
        return fold.fold(Op.FADD2, a, b, fold.fold(Op.FADD1, a, b))
    if isinstance(a, int):
        a, b = b, a
    a = sel.register(a)
    partial = sel.temp()
    sel.emit(Op.FADD1, d=partial, a=a, b=operand_b(b))
    result = sel.temp()
    sel.emit(Op.FADD2, d=result, a=a, b=operand_b(b), c=partial)
    return result


def float_multiply(sel: Selector, a: Source, b: Source) -> Source:
    """a * b, rounded to nearest even, on integer instructions (and one FPU add).

    x and y are the smaller and the larger magnitude; only x can be subnormal when the product
    is not 0 (two subnormals multiply to below half the smallest subnormal).  A subnormal x,
    fraction f, is normalised by the FPU: (1 + f 2^-23) - 1 = f 2^-23 exactly, whose exponent
    field less 126 is x's own, below 1.  Each significand with its hidden bit is shifted to
    the top of a word, so their 64-bit product has its leading one at bit 63 or 62: the high
    word, with a sticky bit for a nonzero low word, holds it all: the product is
    high 2^(ex + ey - 284), which `round_to_binary32` rounds.  Zero, infinity and NaN
    operands are settled at the end."""
    if isinstance(a, int) and isinstance(b, int):
        return fold_float_multiply(a, b)
    magnitudes = [sel.alu(Op.AND, value, MAGNITUDE) for value in (a, b)]
    sign = sel.alu(Op.AND, sel.alu(Op.XOR, a, b), SIGN)
    x = sel.alu(Op.MIN_U, *magnitudes)
    y = sel.alu(Op.MAX_U, *magnitudes)
    x_subnormal = sel.compare(Cmp.LO, x, SMALLEST_NORMAL)
    normalised = float_add(sel, sel.alu(Op.OR, x, ONE), MINUS_ONE)
    x = choose(sel, x_subnormal, normalised, x)
    exponent = fresh(sel, Op.SUB, sel.alu(Op.SHR_U, x, 23), 128)
    sel.emit(Op.SUB, d=exponent, a=exponent, b=126, guard=(x_subnormal, False))
    sel.emit(Op.ADD, d=exponent, a=exponent, b=sel.alu(Op.SHR_U, y, 23))
    x_top = sel.alu(Op.OR, sel.alu(Op.SHL, x, 8), SIGN)
    y_top = sel.alu(Op.OR, sel.alu(Op.SHL, y, 8), SIGN)
    high = fresh(sel, Op.MULHI_U, x_top, y_top)
    inexact = sel.compare(Cmp.NE, sel.alu(Op.MUL, x_top, y_top), 0)
    sel.emit(Op.OR, d=high, a=high, b=1, guard=(inexact, False))
    result = round_to_binary32(sel, high, exponent)
    x_zero = sel.compare(Cmp.EQ, x, 0)
    sel.emit(Op.ADD, d=result, a=ZERO, b=0, guard=(x_zero, False))
    y_infinite = sel.compare(Cmp.EQ, y, INFINITY)
    sel.emit(Op.ADD, d=result, a=ZERO, b=INFINITY, guard=(y_infinite, False))
    result = sel.alu(Op.OR, result, sign)
    # NaN: a NaN operand (y is the larger magnitude), or infinity times zero
    nan = sel.predicate_op(Op.POR, sel.compare(Cmp.HI, y, INFINITY),
                           sel.predicate_op(Op.PAND, x_zero, y_infinite))
    sel.emit(Op.ADD, d=result, a=ZERO, b=CANONICAL_NAN, guard=(nan, False))
    return result


def scale_by_power_of_two(sel: Selector, x: Source, constant: int) -> Source:
    """x * constant for a constant of +-0.5, 2, 4 or 8, in a few instructions: the sign of the
    constant flips x first (so a NaN comes out canonical); 2, 4 and 8 are one, two or three
    FPU additions of the value to itself (x + x = 2x exactly, up to the overflow to infinity,
    after which the doublings stay infinite); 0.5 subtracts one from the exponent field where
    the result stays normal, and below that halves the significand (the exponent bit is the
    hidden bit) rounding the one lost bit to even; infinity stays, a NaN becomes canonical."""
    if constant & SIGN:
        x = sel.alu(Op.XOR, x, SIGN)
    if constant & MAGNITUDE in DOUBLINGS:
        for _ in range(DOUBLINGS[constant & MAGNITUDE]):
            x = float_add(sel, x, x)
        return x
    magnitude = sel.alu(Op.AND, x, MAGNITUDE)
    kept = sel.alu(Op.SHR_U, magnitude, 1)
    tie_to_odd = sel.alu(Op.AND, sel.alu(Op.AND, magnitude, kept), 1)   # lost bit 1, kept odd
    tiny = sel.alu(Op.OR, sel.alu(Op.ADD, kept, tie_to_odd), sel.alu(Op.AND, x, SIGN))
    stays_normal = sel.compare(Cmp.HS, magnitude, 2 * SMALLEST_NORMAL)
    result = choose(sel, stays_normal, sel.alu(Op.SUB, x, SMALLEST_NORMAL), tiny)  # a temporary
    sel.emit(Op.ADD, d=result, a=sel.register(x), b=0,
             guard=(sel.compare(Cmp.EQ, magnitude, INFINITY), False))
    sel.emit(Op.ADD, d=result, a=ZERO, b=CANONICAL_NAN,
             guard=(sel.compare(Cmp.HI, magnitude, INFINITY), False))
    return result


def round_to_binary32(sel: Selector, high: VReg, exponent: VReg) -> VReg:
    """The binary32 magnitude nearest (ties to even) to high * 2^(exponent - 156), where `high`
    is in [2^30, 2^32) with any bits lost below it or-ed into bit 0 (a sticky bit), and both
    are temporaries this updates.  One guarded shift brings the leading one to bit 31 (and
    `exponent` to the result's biased exponent less 1, F); F > 0 packs (F << 23) + (high >> 8),
    the hidden bit carrying the 1 back; F <= 0 first shifts `high` 1 - F further down, into
    the subnormals, its lost bits kept as sticky.  The low byte rounds the packed word, a
    carry running into the next exponent or to infinity; min.u with infinity's word catches
    every overflow.  Shared by the multiply, the division and the square root."""
    below_two = sel.compare(Cmp.LO, high, SIGN)            # leading one at bit 30: shift it up
    sel.emit(Op.SHL, d=high, a=high, b=1, guard=(below_two, False))
    sel.emit(Op.ADD, d=exponent, a=exponent, b=1, guard=(below_two, True))
    shift = sel.alu(Op.MAX_S, sel.alu(Op.SUB, 0, exponent), 0)   # into the subnormals
    kept = fresh(sel, Op.SHR_U, high, shift)
    lost = sel.compare(Cmp.NE, sel.alu(Op.SHL, kept, shift), high)
    sel.emit(Op.OR, d=kept, a=kept, b=1, guard=(lost, False))
    field = sel.alu(Op.SHL, sel.alu(Op.MAX_S, exponent, 0), 23)
    packed = fresh(sel, Op.ADD, field, sel.alu(Op.SHR_U, kept, 8))
    odd = sel.alu(Op.AND, packed, 1)                        # up: above half, or half and odd
    round_up = sel.compare(Cmp.HI, sel.alu(Op.ADD, sel.alu(Op.SHL, kept, 24), odd), SIGN)
    sel.emit(Op.ADD, d=packed, a=packed, b=1, guard=(round_up, False))
    return fresh(sel, Op.MIN_U, packed, INFINITY)


def normalised_significand(sel: Selector, magnitude: Source) -> tuple[Source, Source]:
    """(the significand with its hidden bit at bit 23, the biased exponent) of a magnitude;
    a subnormal's exponent is 0 or below, as if the field went on down.  The FPU normalises
    a subnormal, fraction f: (1 + f 2^-23) - 1 = f 2^-23 exactly, whose exponent field less
    126 is the subnormal's own.  (0 gives 2^23 and -126: callers settle zeros apart.)"""
    if isinstance(magnitude, int):
        if magnitude >= SMALLEST_NORMAL:
            return magnitude & 0x7F_FFFF | SMALLEST_NORMAL, magnitude >> 23
        bits = magnitude | ONE
        normal = fold.fold(Op.FADD2, bits, MINUS_ONE, fold.fold(Op.FADD1, bits, MINUS_ONE))
        return normal & 0x7F_FFFF | SMALLEST_NORMAL, (normal >> 23) - 126
    subnormal = sel.compare(Cmp.LO, magnitude, SMALLEST_NORMAL)
    normalised = float_add(sel, sel.alu(Op.OR, magnitude, ONE), MINUS_ONE)
    word = choose(sel, subnormal, normalised, magnitude)
    exponent = fresh(sel, Op.SHR_U, word, 23)
    sel.emit(Op.SUB, d=exponent, a=exponent, b=126, guard=(subnormal, False))
    significand = sel.alu(Op.OR, sel.alu(Op.AND, word, 0x7F_FFFF), SMALLEST_NORMAL)
    return significand, exponent


def fold_float_multiply(a: int, b: int) -> int:
    """The product of two known words, at load time: the double product of two binary32
    values is exact (48 significant bits), so numpy's one rounding to float32 is the IEEE
    product's; a NaN is PTX's canonical one."""
    with np.errstate(all="ignore"):
        product = np.float64(np.uint32(a).view(np.float32)) * np.float64(np.uint32(b).view(np.float32))
        bits = int(np.float32(product).view(np.uint32))
    return CANONICAL_NAN if is_nan_bits(bits) else bits
