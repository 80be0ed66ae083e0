"""Instruction selection for the `.f32` instructions that are exact integer operations on bits.

QwenGPU has no FPU, but a binary32 value is a 32-bit word, and some PTX float instructions
only compare, order, pick or flip the bits of such words.  They are lowered here onto the
machine's integer instructions, exactly as PTX defines them (PTX ISA, "Floating Point
Instructions" and "Comparison and Selection Instructions"):

- `setp.CMP{.BOOL}{.ftz}.f32`: ordered `eq ne lt le gt ge` (false when an operand is NaN),
  unordered `equ neu ltu leu gtu geu` (true when one is), `num`, `nan`;
- `min`/`max{.ftz}.f32`: a NaN operand gives the other one, two give the canonical NaN;
- `neg`/`abs{.ftz}.f32`: the sign bit flipped / cleared;
- `testp.{finite,infinite,number,notanumber,normal,subnormal}.f32`.

`.ftz` flushes subnormal inputs to a zero of the same sign first.  `mov`, `ld`, `st` and `selp`
of `.f32` move words: `Selector` runs them as `.b32` (`selector.F32_AS_BITS`).  Every other
`.f32` instruction (add, mul, fma, div, sqrt, cvt, ...) is floating-point arithmetic and
`Selector.lower` refuses it (`selector.FLOAT_ARITHMETIC`).
"""

from __future__ import annotations

from qwengpu.isa import Cmp, Op
from qwengpu.ptx import ir
from qwengpu.ptx.select_integer import PREDICATE_OPS, commit_setp
from qwengpu.ptx.selector import Selector, handles_float, operand_b
from qwengpu.ptx.vcode import Source, VPred

SIGN = 0x8000_0000
MAGNITUDE = 0x7FFF_FFFF          # also the canonical NaN PTX's min/max return
INFINITY = 0x7F80_0000           # also the exponent field
SMALLEST_NORMAL = 0x0080_0000
ONE = 0x3F80_0000
CANONICAL_NAN = 0x7FFF_FFFF
INT_MAX, INT_MIN = 0x7FFF_FFFF, 0x8000_0000

ORDERED = {"eq": Cmp.EQ, "ne": Cmp.NE, "lt": Cmp.LT, "le": Cmp.LE, "gt": Cmp.GT, "ge": Cmp.GE}
UNORDERED = {"equ": Cmp.EQ, "neu": Cmp.NE, "ltu": Cmp.LT, "leu": Cmp.LE, "gtu": Cmp.GT,
             "geu": Cmp.GE}
NAN_TESTS = ("num", "nan")
# testp: (comparison, bias subtracted from the magnitude, bound) -- `(m - bias) CMP bound`
TESTP = {"finite": (Cmp.LO, 0, INFINITY), "infinite": (Cmp.EQ, 0, INFINITY),
         "number": (Cmp.LS, 0, INFINITY), "notanumber": (Cmp.HI, 0, INFINITY),
         "normal": (Cmp.LO, SMALLEST_NORMAL, INFINITY - SMALLEST_NORMAL),
         "subnormal": (Cmp.LO, 1, SMALLEST_NORMAL - 1)}


def check_float_modifiers(sel: Selector, ins: ir.Instruction, allowed: set[str]):
    """The type must be .f32 alone; other modifiers must be in `allowed`."""
    for modifier in ins.modifiers:
        if modifier == "f32":
            continue
        if modifier in ir.TYPE_WIDTHS:
            raise sel.unsupported(ins, f"type .{modifier} with .f32")
        if modifier not in allowed:
            raise sel.unsupported(ins, f"the .{modifier} modifier")


# ---- bit patterns --------------------------------------------------------------------------------


def choose(sel: Selector, predicate: VPred, if_true: Source, if_false: Source) -> Source:
    """`predicate ? if_true : if_false` (one selp)."""
    if if_true == if_false:
        return if_true
    result = sel.temp()
    sel.emit(Op.SELP, d=result, a=sel.register(if_true), b=operand_b(if_false), c=predicate)
    return result


def saturate(sel: Selector, bits: Source) -> Source:
    """`.sat`: clamp to [+0.0, 1.0]; every NaN and every negative value, -0.0 included, give
    +0.0 (PTX: "NaN results are flushed to +0.0f").  As unsigned words, the negatives and the NaN
    are the words above +infinity's."""
    if isinstance(bits, int):
        return 0 if bits > INFINITY else min(bits, ONE)
    clamped = sel.alu(Op.MIN_U, bits, ONE)
    return choose(sel, sel.compare(Cmp.HI, bits, INFINITY), 0, clamped)


def is_nan_bits(bits: int) -> bool:
    return bits & MAGNITUDE > INFINITY


def flush_subnormal(sel: Selector, bits: Source) -> Source:
    """.ftz: a subnormal (exponent field 0) becomes the zero of its sign."""
    if isinstance(bits, int):
        return bits & SIGN if bits & INFINITY == 0 else bits
    exponent_zero = sel.compare(Cmp.EQ, sel.alu(Op.AND, bits, INFINITY), 0)
    return choose(sel, exponent_zero, sel.alu(Op.AND, bits, SIGN), bits)


def flush_magnitude(sel: Selector, magnitude: Source) -> Source:
    """.ftz on a magnitude (sign cleared): below the smallest normal it is 0."""
    if isinstance(magnitude, int):
        return 0 if magnitude < SMALLEST_NORMAL else magnitude
    return choose(sel, sel.compare(Cmp.HS, magnitude, SMALLEST_NORMAL), magnitude, 0)


def equality_key(sel: Selector, bits: Source, magnitude: Source) -> Source:
    """A signed integer ordered as the (non-NaN) float is, with -0 and +0 both 0:
    bits >= 0 ? magnitude : -magnitude, computed as (magnitude ^ s) - s with s = bits >> 31."""
    sign = sel.alu(Op.SHR_S, bits, 31)
    return sel.alu(Op.SUB, sel.alu(Op.XOR, magnitude, sign), sign)


def total_key(sel: Selector, bits: Source) -> Source:
    """A signed integer ordered as the float is, with -0 below +0: a negative float's other
    bits flipped.  The map is its own inverse (it keeps the sign bit)."""
    return sel.alu(Op.XOR, bits, sel.alu(Op.AND, sel.alu(Op.SHR_S, bits, 31), MAGNITUDE))


def nan_test(sel: Selector, magnitudes: list[Source], any_nan: bool) -> bool | VPred:
    """Whether one of the magnitudes is a NaN (`any_nan`), or none is: a known answer or a
    predicate.  A magnitude is a NaN when it is above the infinity's."""
    known = [m for m in magnitudes if isinstance(m, int)]
    if any(m > INFINITY for m in known):
        return any_nan
    registers = [m for m in magnitudes if not isinstance(m, int)]
    if not registers:
        return not any_nan
    largest = registers[0]
    for other in registers[1:]:
        largest = sel.alu(Op.MAX_U, largest, other)
    return sel.compare(Cmp.HI if any_nan else Cmp.LS, largest, INFINITY)


def as_predicate(sel: Selector, value: bool | VPred, into: VPred | None) -> VPred:
    if isinstance(value, bool):
        return sel.compare(Cmp.EQ if value else Cmp.NE, 0, 0, into=into)
    return sel.move(value, into) if into is not None else value


# ---- setp and testp ------------------------------------------------------------------------------


@handles_float("setp")
def lower_float_setp(sel: Selector, ins: ir.Instruction):
    name = ins.modifiers[0] if ins.modifiers else ""
    if name not in ORDERED and name not in UNORDERED and name not in NAN_TESTS:
        raise sel.unsupported(ins, "this comparison (float comparisons are eq ne lt le gt ge, "
                                   "equ neu ltu leu gtu geu, num and nan)")
    boolean = next((m for m in ins.modifiers[1:] if m in PREDICATE_OPS), None)
    check_float_modifiers(sel, ins, {name, "ftz", boolean} - {None})
    a, b = sel.operands(ins, 4 if boolean else 3)[1:3]
    flush = "ftz" in ins.modifiers
    commit_setp(sel, ins, boolean,
                lambda into: compare_floats(sel, name, sel.value(a), sel.value(b), flush, into))


def compare_floats(sel: Selector, name: str, a: Source, b: Source, flush: bool,
                   into: VPred | None) -> VPred:
    """The predicate `a CMP b` of PTX's float comparison `name` on two bit patterns."""
    magnitudes = [sel.alu(Op.AND, bits, MAGNITUDE) for bits in (a, b)]
    if flush:
        magnitudes = [flush_magnitude(sel, magnitude) for magnitude in magnitudes]
    if name in NAN_TESTS:
        return as_predicate(sel, nan_test(sel, magnitudes, any_nan=name == "nan"), into)
    ordered = name in ORDERED
    # ordered: true only when neither is a NaN; unordered: true when either is.
    nan_outcome = nan_test(sel, magnitudes, any_nan=not ordered)
    if isinstance(nan_outcome, bool) and nan_outcome != ordered:
        return as_predicate(sel, nan_outcome, into)
    keys = [equality_key(sel, bits, magnitude) for bits, magnitude in zip((a, b), magnitudes)]
    cmp = ORDERED[name] if ordered else UNORDERED[name]
    if isinstance(nan_outcome, bool):            # no NaN possible: the keys decide
        return sel.compare(cmp, *keys, into=into)
    outcome = sel.compare(cmp, *keys)
    return sel.predicate_op(Op.PAND if ordered else Op.POR, outcome, nan_outcome, into=into)


@handles_float("testp")
def lower_testp(sel: Selector, ins: ir.Instruction):
    """testp.OP.f32 p, a: the class of a from its magnitude (no .ftz in PTX)."""
    mode = ins.modifiers[0] if ins.modifiers else ""
    if mode not in TESTP:
        raise sel.unsupported(ins, "this test (testp has " + ", ".join(TESTP) + ")")
    check_float_modifiers(sel, ins, {mode})
    destination, a = sel.operands(ins, 2)
    cmp, bias, bound = TESTP[mode]
    magnitude = sel.alu(Op.AND, sel.value(a), MAGNITUDE)
    sel.compare(cmp, sel.alu(Op.SUB, magnitude, bias), bound,
                into=sel.destination_predicate(destination))


# ---- min, max, neg, abs --------------------------------------------------------------------------


@handles_float("min", "max")
def lower_float_min_max(sel: Selector, ins: ir.Instruction):
    """min/max{.ftz}.f32 d, a, b, per the PTX ISA (9.7.3.11 "Floating Point Instructions: min",
    https://docs.nvidia.com/cuda/parallel-thread-execution/#floating-point-instructions-min, and
    its `max` twin): both NaN -> NaN (the canonical 0x7FFFFFFF); one NaN -> the other operand;
    else (a < b) ? a : b, where "If values of both inputs are 0.0, then +0.0 > -0.0" (so
    min(-0, +0) = -0, max(-0, +0) = +0 in either order).  `.ftz` flushes the inputs (and so
    the result, one of them) to sign-preserving zero.  `.NaN`, `.xorsign.abs` and the
    three-input form are not taken (nvcc emits none of them for CUDA's fminf/fmaxf).

    Lowering: each operand's total-order key (`total_key`), a NaN's key replaced by a sentinel
    that loses to every number (INT_MAX for min, INT_MIN for max), min.s/max.s of the keys,
    mapped back.  INT_MAX maps back to the canonical NaN itself; INT_MIN (max of two NaNs) to
    0xFFFFFFFF, which one selp turns into the canonical NaN."""
    check_float_modifiers(sel, ins, {"ftz"})
    destination, a, b = sel.operands(ins, 3)
    is_min = ins.opcode == "min"
    sentinel = INT_MAX if is_min else INT_MIN
    operands = [sel.value(a), sel.value(b)]
    if "ftz" in ins.modifiers:
        operands = [flush_subnormal(sel, bits) for bits in operands]
    keys = [key_or_sentinel(sel, bits, sentinel) for bits in operands]
    key = sel.alu(Op.MIN_S if is_min else Op.MAX_S, *keys)
    result = total_key(sel, key)
    if not is_min:
        result = canonical_nan_for_sentinel(sel, key, result)
    sel.write(destination, result)


def key_or_sentinel(sel: Selector, bits: Source, sentinel: int) -> Source:
    if isinstance(bits, int):
        return sentinel if is_nan_bits(bits) else total_key(sel, bits)
    is_nan = sel.compare(Cmp.HI, sel.alu(Op.AND, bits, MAGNITUDE), INFINITY)
    return choose(sel, is_nan, sentinel, total_key(sel, bits))


def canonical_nan_for_sentinel(sel: Selector, key: Source, result: Source) -> Source:
    """max of two NaNs: the key INT_MIN came back as 0xFFFFFFFF; PTX returns 0x7FFFFFFF."""
    if isinstance(key, int):
        return CANONICAL_NAN if key == INT_MIN else result
    return choose(sel, sel.compare(Cmp.EQ, key, INT_MIN), CANONICAL_NAN, result)


@handles_float("neg", "abs")
def lower_float_negate(sel: Selector, ins: ir.Instruction):
    """neg/abs{.ftz}.f32: flip / clear the sign bit, after `.ftz` flushes a subnormal input.
    PTX leaves a NaN input's result an unspecified NaN ("Future implementations may comply
    with the IEEE 754 standard by preserving payload and modifying only the sign bit"): this
    lowering does that, so the payload is kept."""
    check_float_modifiers(sel, ins, {"ftz"})
    destination, a = sel.operands(ins, 2)
    bits = sel.value(a)
    if "ftz" in ins.modifiers:
        bits = flush_subnormal(sel, bits)
    if ins.opcode == "neg":
        result = sel.alu(Op.XOR, bits, SIGN)
    else:
        result = sel.alu(Op.AND, bits, MAGNITUDE)
    sel.write(destination, result)
