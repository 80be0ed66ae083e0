"""The PTX front-end: what it accepts (everything nvcc writes around integer kernels) and how
it reports what it does not (file:line:col, the offending text, a caret)."""

from __future__ import annotations

import pytest

from qwengpu.errors import PtxError
from qwengpu.ptx import ir
from qwengpu.ptx.compile import choose_kernel, compile_kernel
from qwengpu.ptx.parser import parse_integer, parse_ptx

HEADER = ".version 9.0\n.target sm_80\n.address_size 64\n"

KITCHEN_SINK = HEADER + """\
/* a block comment
   over two lines */
.global .align 4 .b8 table[8] = {1, 0, 0, 0, 2};   // trailing comment
.visible .entry first(
    .param .u64 first_param_0,
    .param .align 4 .b8 first_param_1[8],
    .param .u32 first_param_2
)
.maxntid 128, 1, 1
{
    .reg .pred %p<3>;
    .reg .b32 %r<6>, %extra;
    .reg .b64 %rd<4>;
    .loc 1 7 3
    ld.param.u64 %rd1, [first_param_0];
    ld.param.u32 %r1, [first_param_1+4];
    mov.u32 %r2, %tid.x;
    add.s32 %r3, %r2, -0x10;
    add.s32 %r4, %r3, 0x7fffffff;
    .pragma "nounroll";
$L__BB0_1:
    setp.lt.u32 %p1|%p2, %r2, 4;
    @!%p1 bra $L__BB0_2;
    { .reg .b32 %r1;
      mov.u32 %r1, 5; }
    st.global.v2.u32 [%rd1+-8], {%r1, %r2};
$L__BB0_2:
    ret;
}
.entry second() { exit; }
.file 1 "kernel.cu"
.section .debug_str { $L__info: .b8 95,90,0 }
"""


def test_everything_nvcc_writes_parses():
    module = parse_ptx(KITCHEN_SINK, "sink.ptx")
    assert module.version == "9.0" and module.target == "sm_80" and module.address_size == 64
    assert list(module.kernels) == ["first", "second"]
    assert module.variables["table"].initializer == (1, 0, 0, 0, 2)
    kernel = module.kernels["first"]
    assert [(p.name, p.type, p.array_length) for p in kernel.params] == [
        ("first_param_0", "u64", None), ("first_param_1", "b8", 8), ("first_param_2", "u32", None)]
    assert kernel.registers["%r5"] == "b32" and kernel.registers["%extra"] == "b32"
    assert "%r6" not in kernel.registers and kernel.registers["%rd3"] == "b64"
    labels = [s.name for s in kernel.body if isinstance(s, ir.Label)]
    assert labels == ["$L__BB0_1", "$L__BB0_2"]
    instructions = [s for s in kernel.body if isinstance(s, ir.Instruction)]
    assert instructions[0].cuda_loc.file == "kernel.cu" and instructions[0].cuda_loc.line == 7
    add = instructions[3]
    assert add.opcode == "add" and add.modifiers == ("s32",)
    assert add.operands[2].value == -16 and instructions[4].operands[2].value == 0x7FFF_FFFF
    setp = instructions[5]
    assert isinstance(setp.operands[0], ir.RegisterPair)
    branch = instructions[6]
    assert branch.guard.negated and branch.guard.register == "%p1"
    scoped = instructions[7]
    assert scoped.operands[0].name != "%r1"      # the block's own %r1 is renamed
    store = instructions[8]
    assert store.operands[0].offset == -8 and isinstance(store.operands[1], ir.Vector)
    assert store.loc.line == KITCHEN_SINK.splitlines().index(
        "    st.global.v2.u32 [%rd1+-8], {%r1, %r2};") + 1


@pytest.mark.parametrize("text,value", [("0", 0), ("17", 17), ("-5", -5), ("0x1F", 31),
                                        ("-0x10", -16), ("010", 8), ("0b101", 5),
                                        ("4294967295U", 0xFFFF_FFFF)])
def test_integer_literals(text, value):
    assert parse_integer(text) == value


def test_float_literals_keep_their_bits():
    module = parse_ptx(HEADER + ".entry k() { .reg .b32 %r1; mov.b32 %r1, 0f3F800000; ret; }")
    assert module.kernels["k"].body[0].operands[1].value == 0x3F80_0000


MALFORMED = [
    ("    add.s32 %r1, %r2 %r3;\n", 2, "unexpected '%r3'"),
    ("    add.s32 %r1, %r2, ;\n", 2, "unexpected ';'"),
    ("    ld.global.u32 %r1, [%r2+];\n", 2, "unexpected ']'"),
    ("    mov.u32 %r1, #5;\n", 2, "unexpected '#5'"),
    ("    .reg .b32 %r<>;\n", 2, "unexpected '>'"),
    ("    .reg .v4 .b32 %vec;\n", 2, "vector registers (.v4) are not supported"),
]


@pytest.mark.parametrize("line,line_number,message", MALFORMED)
def test_malformed_ptx_is_located(line, line_number, message):
    text = HEADER + ".entry k()\n{\n" + line + "    ret;\n}\n"
    with pytest.raises(PtxError) as caught:
        parse_ptx(text, "bad.ptx")
    error = caught.value
    assert message in error.message
    assert error.loc.file == "bad.ptx" and error.loc.line == line_number + 4
    rendered = error.render().splitlines()
    assert rendered[0].startswith(f"bad.ptx:{line_number + 4}:{error.loc.column}: error: ")
    assert rendered[1] == line.rstrip("\n")
    assert rendered[2] == " " * (error.loc.column - 1) + "^"


def test_a_function_with_register_parameters_parses():
    """`.func (.reg .b32 r) f(.reg .b32 x)` is legal PTX (hand-written and other compilers'):
    it parses, with its parameters in `params` and `returns` (tests/ptx/test_ptx_calls.py
    inlines calls of such functions)."""
    module = parse_ptx(HEADER + ".func (.reg .b32 result) twice(.reg .b32 x, .param .u32 y)\n"
                       "{ add.u32 result, x, x; ret; }\n.entry k() { ret; }\n")
    assert set(module.functions) == {"twice"} and set(module.kernels) == {"k"}
    twice = module.functions["twice"]
    assert [(p.name, p.space) for p in twice.params] == [("x", "reg"), ("y", "param")]
    assert [(p.name, p.space) for p in twice.returns] == [("result", "reg")]
    assert twice.registers["result"] == "b32" and twice.registers["x"] == "b32"


def test_unterminated_kernel():
    with pytest.raises(PtxError, match="unexpected end of file"):
        parse_ptx(HEADER + ".entry k() {\n    ret;\n", "cut.ptx")


def test_kernel_choice_lists_the_kernels():
    module = parse_ptx(HEADER + ".entry alpha() { ret; }\n.entry beta() { ret; }", "two.ptx")
    assert choose_kernel(module, "beta").name == "beta"
    with pytest.raises(PtxError, match="no kernel named 'gamma'; this file has: alpha, beta"):
        choose_kernel(module, "gamma")
    with pytest.raises(PtxError, match="say which kernel to run; this file has: alpha, beta"):
        choose_kernel(module, None)


def error_of(body: str, decls: str = "") -> PtxError:
    text = HEADER + decls + (".entry k(.param .u64 k_p, .param .u32 k_n)\n{\n"
                             "    .reg .b32 %r<8>;\n    .reg .b64 %rd<4>;\n"
                             "    .reg .pred %p<3>;\n    .reg .b16 %h<3>;\n"
                             f"{body}\n    ret;\n}}\n")
    with pytest.raises(PtxError) as caught:
        compile_kernel(parse_ptx(text, "k.ptx"), "k")
    return caught.value


@pytest.mark.parametrize("body,message", [
    ("    add.s32 %r1, %r9, 1;", "register %r9 is not declared"),
    ("    ex2.approx.f32 %r1, %r2;", "floating-point arithmetic QwenGPU does not have yet"),
    ("    add.f64 %rd1, %rd2, %rd3;", "type .f64 (QwenGPU computes with integers only)"),
    ("    add.sat.s32 %r1, %r2, %r3;", "the .sat modifier"),
    ("    add.s32 %r1, %r2;", "'add.s32' takes 3 operands, got 2"),
    ("    add.s32 %p1, %r2, %r3;", "%p1 is a predicate"),
    ("    add.s32 %r1, %p1, %r3;", "%p1 is a predicate; a value is needed here"),
    ("    bra $L__nowhere;", "unknown label $L__nowhere"),
    ("    ld.param.u32 %r1, [k_n+4];", "reads bytes 4..7 of parameter k_n, which has 4 bytes"),
    ("    ld.param.u32 %r1, [nothing];", "nothing is not a parameter of k"),
    ("    ld.global.u32 %r1, [k_p];", "parameter k_p can only be read with ld.param"),
    ("    ld.tex.u32 %r1, [%rd1];", "texture memory, which QwenGPU does not have"),
    ("    st.const.u32 [%rd1], %r1;", "constant memory cannot be written"),
    ("    mul.hi.u64 %rd1, %rd2, %rd3;", "the high half of a 64 x 64-bit product"),
    ("    rem.b64 %rd1, %rd2, %rd3;", "type .b64 (supported here: .s16, .s32, .s64, .s8, "
                                    ".u16"),
    ("    bar.sync 1;", "named barriers (a barrier number other than 0)"),
    ("    bar.sync 0, 32;", "a barrier for a number of threads"),
    ("    bar.arrive 0, 32;", "only bar.sync (__syncthreads) is"),
    ("    shfl.sync.bfly.b16 %r1, %r2, 1, 31, -1;", "supported here: .b32"),
    ("    atom.global.add.u64 %rd1, [%rd2], 1;", "64-bit atomics"),
    ("    atom.global.add.f32 %r1, [%rd1], %r2;", "atomics on .f32"),
    ("    red.global.cas.b32 [%rd1], %r1;", "red has no .cas"),
    ("    setp.equ.s32 %p1, %r1, %r2;", "this comparison"),
    ("    mov.u32 %r1, undefined_symbol;", "unknown symbol undefined_symbol"),
    ("    mul.wide.s32 %r1, %r2, %r3;", "%r1 is not a 64-bit register"),
    ("    cvt.rn.f32.f64 %r1, %rd1;", "type .f64"),
    ("    cvt.rn.f64.s32 %rd1, %r2;", "floating point (QwenGPU computes with integers only)"),
    ("    prmt.b32.rn %r1, %r2, %r3, %r4;", "the .rn modifier"),
])
def test_unsupported_or_wrong_instructions_name_their_line(body, message):
    error = error_of(body, decls=".shared .align 4 .b8 smem[16];\n")
    assert message in error.message
    assert error.loc.line == 11                       # the line of `body`
    assert error.render().splitlines()[1] == body


BARE_NAMES = HEADER + """\
.visible .entry bare(.param .u64 out_param, .param .u32 limit_param)
{
    .reg .pred in_range, out_of_range;
    .reg .b32 tid, limit, value, low, high;
    .reg .b64 out_addr, offset, pair;
    ld.param.u64 out_addr, [out_param];
    ld.param.u32 limit, [limit_param];
    mov.u32 tid, %tid.x;
    setp.lt.u32 in_range|out_of_range, tid, limit;
    @out_of_range bra DONE;
    cvta.to.global.u64 out_addr, out_addr;
    mul.wide.u32 offset, tid, 8;
    add.s64 out_addr, out_addr, offset;
    mov.b64 pair, {tid, limit};
    mov.b64 {low, _}, pair;
    selp.b32 value, 100, 200, !out_of_range;
    add.u32 value, value, low;
    st.global.u32 [out_addr], value;
    @!in_range bra DONE;
    { .reg .b32 value;
      mul.lo.u32 value, tid, tid;
      st.global.u32 [out_addr+4], value; }
DONE:
    ret;
}
"""


def test_registers_declared_without_percent_work_everywhere_a_register_does():
    """docs/ptx.md: `.reg .b32 name;` is legal PTX (hand-written PTX and other compilers use
    it): bare names as destinations, sources, guards (`@p`, `@!p`), `!p`, `p|q` pairs,
    addresses (`[name+4]`), vector elements and a name redeclared in a nested block."""
    from ptx_harness import run_ptx

    run = run_ptx(BARE_NAMES, {"out": [7] * 8}, ["out", 3], block=4)
    expected = []
    for tid in range(4):
        expected += [100 + tid, tid * tid] if tid < 3 else [7, 7]
    assert run.words["out"] == expected
