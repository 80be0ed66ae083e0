"""Instruction selection for float arithmetic on the machine's FPU: `add` and `sub` of `.f32`.

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
- `.ftz`: subnormal inputs and a subnormal result become the zero of their sign;
- `.sat`: the result clamped to [+0.0, 1.0], a NaN to +0.0.

The directed roundings `.rz .rm .rp` (`__fadd_rz` and kin), `mul`, `fma`, `div`, `sqrt`,
`rcp` and the `.approx` functions are refused at the CUDA line (`selector.FLOAT_ARITHMETIC`).
"""

from __future__ import annotations

from qwengpu.isa import Op
from qwengpu.ptx import fold, ir
from qwengpu.ptx.select_float import SIGN, check_float_modifiers, flush_subnormal, saturate
from qwengpu.ptx.selector import Selector, handles_float, operand_b
from qwengpu.ptx.vcode import Source

DIRECTED_ROUNDING = ("rz", "rm", "rp")


@handles_float("add", "sub")
def lower_float_add(sel: Selector, ins: ir.Instruction):
    for mode in DIRECTED_ROUNDING:
        if mode in ins.modifiers:
            raise sel.unsupported(ins, f"the .{mode} rounding (QwenGPU's FPU rounds to nearest "
                                       "even: .rn, the default)")
    check_float_modifiers(sel, ins, {"rn", "ftz", "sat"})
    destination, a, b = sel.operands(ins, 3)
    flush = "ftz" in ins.modifiers
    left, right = sel.value(a), sel.value(b)
    if flush:
        left, right = flush_subnormal(sel, left), flush_subnormal(sel, right)
    if ins.opcode == "sub":
        right = sel.alu(Op.XOR, right, SIGN)
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
