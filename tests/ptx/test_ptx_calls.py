"""Calls of device functions, inlined by the loader (qwengpu/ptx/inline.py, call_params.py).

tests/ptx/data/calls.cu holds kernels that call `__noinline__` functions (so that nvcc
keeps the calls): chains, several call sites, two return paths, a pointer, a struct in and
out, bytes and halfwords, 64-bit values, a function with no result, a return inside a
loop.  Each runs from the checked-in PTX (interpreter and ISA model, which must agree) and
is compared with a plain-Python model of the CUDA source.  Hand-written PTX covers what
nvcc does not write: `.reg` parameters and results, `@%p ret` in the middle of a function,
a guarded call, a register passed straight to a `.param` parameter, an unread result.
tests/ptx/data/call_errors.cu holds the calls that are refused (recursion, mutual
recursion, printf, a virtual function), each at the CUDA line found in its text.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from qwengpu.errors import CapacityError, Location, PtxError, UserError
from qwengpu.ptx import nvcc
from qwengpu.ptx.compile import compile_kernel, read_module
from qwengpu.ptx.inline import inline_calls
from qwengpu.ptx.parser import parse_ptx, parse_ptx_file
from qwengpu.runtime.launch import launch_for_program, run_launch_sim

from ptx_harness import HEADER, M32, M64, run_ptx, s32, sext

DATA = Path(__file__).parent / "data"
CALLS = DATA / "calls.ptx"
ERRORS_CU, ERRORS_PTX = DATA / "call_errors.cu", DATA / "call_errors.ptx"
needs_nvcc = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc is not installed")


# ---- the models of calls.cu ----------------------------------------------------------------------

def add3(a):
    return s32(a + 3)


def twice_add3(a):
    return s32(2 * add3(a) + add3(a ^ 5))


def clamp_abs(a):
    return -a if a < 0 else 100 if a > 100 else 2 * a


def model_chain(b):
    x, out = [s32(v) for v in b["x"]], list(b["out"])
    for t in range(4):
        out[t] = (twice_add3(x[t]) + clamp_abs(x[t] - 10)) & M32
        out[t + 8] = clamp_abs(x[t]) & M32          # put(out, t + 8, ...)
    return {"x": b["x"], "out": out}


def model_shapes(b):
    x, out = b["x"], list(b["out"])
    for t in range(4):
        out[t] = (x[t + 4] + t) & M32               # swap_add: q.a = p.b + k
        out[t + 4] = (x[t] - t) & M32               #           q.b = p.a - k
        out[t + 8] = (sext(x[t], 8) * 1000 + sext(x[t + 4], 16) + (x[t] & 0xFF)) & M32
        wide_x = ((s32(x[t]) << 20) | t)
        w = (wide_x * s32(x[t + 4]) + (wide_x >> 3)) & M64
        out[t + 12], out[t + 16] = w & M32, w >> 32
    return {"x": b["x"], "out": out}


def model_search(b):
    rows = [s32(v) for v in b["rows"]]
    found = [next((k for k in range(4) if rows[4 * t + k] < 0), -1) & M32 for t in range(4)]
    return {"rows": b["rows"], "found": found}


CASES = [
    ("chain", {"x": [5, -30, 200, 7], "out": [0] * 12}, ["x", "out"], model_chain),
    ("shapes", {"x": [0x1FF, -3, 130, 0x7F, 40000, -7, 0x1_8001, 12], "out": [0] * 20},
     ["x", "out"], model_shapes),
    ("search", {"rows": [1, 2, -3, 4, -1, 0, 0, 0, 5, 6, 7, 8, 0, 0, 0, -9],
                "found": [7] * 4}, ["rows", "found"], model_search),
]


@pytest.mark.parametrize("kernel,buffers,args,model", CASES, ids=[case[0] for case in CASES])
def test_kernels_that_call_functions_compute_their_models(kernel, buffers, args, model):
    run = run_ptx(CALLS.read_text(), buffers, args, kernel=kernel)
    assert run.result.trap is None, run.result.trap.message
    initial = {name: [value & M32 for value in values] for name, values in buffers.items()}
    assert run.words == model(initial)


def test_the_call_of_unsupported_cu_runs_now():
    run = run_ptx((DATA / "unsupported.ptx").read_text(), {"x": [1, -2, 30, 0]}, ["x"],
                  kernel="calls")
    assert run.words["x"] == [(3 * v + 1) & M32 for v in (1, -2, 30, 0)]


@needs_nvcc
@pytest.mark.parametrize("kernel,buffers,args,model", CASES, ids=[case[0] for case in CASES])
def test_the_cu_source_runs_the_same(kernel, buffers, args, model, tmp_path):
    shutil.copy(DATA / "calls.cu", tmp_path)
    program = compile_kernel(read_module(str(tmp_path / "calls.cu")), kernel)
    result = run_launch_sim(launch_for_program(program, 1, 4, buffers, args))
    initial = {name: [value & M32 for value in values] for name, values in buffers.items()}
    assert {name: [v & M32 for v in values] for name, values in result.buffers.items()} == \
        model(initial)


@needs_nvcc
@pytest.mark.parametrize("name", ["calls", "call_errors"])
def test_checked_in_ptx_is_what_nvcc_makes(name):
    fresh = nvcc.compile_cuda(str(DATA / f"{name}.cu"))
    code = [line for line in fresh.splitlines() if not line.startswith("//")]
    checked_in = [line for line in (DATA / f"{name}.ptx").read_text().splitlines()
                  if not line.startswith("//")]
    if _debug_free(code) != _debug_free(checked_in):
        pytest.fail(f"tests/ptx/data/{name}.ptx is stale: run python tests/ptx/data/regen_ptx.py")


def _debug_free(lines: list[str]) -> list[str]:
    """Without `.section .debug_str` (nvcc hashes the source's path into its names)."""
    text = "\n".join(lines)
    start = text.find(".section\t.debug_str")
    return text[:start].splitlines() if start >= 0 else lines


# ---- what inlining does --------------------------------------------------------------------------

def test_every_call_is_inlined_per_site_with_its_own_registers():
    module = parse_ptx_file(str(CALLS))
    kernel = inline_calls(module, module.kernels["chain"])
    instructions = [ins for ins in kernel.body if hasattr(ins, "opcode")]
    assert not any(ins.opcode == "call" for ins in instructions)
    assert not any(ins.has("param") and ins.opcode == "st" for ins in instructions)
    # add3 is called twice in twice_add3, clamp_abs at two sites of chain
    add3_body = [ins for ins in instructions if ins.text == "add.s32 %r2, %r1, 3;"]
    assert len(add3_body) == 2 and len({id(ins) for ins in add3_body}) == 2
    assert {ins.operands[0].name for ins in add3_body} == {"%r2@2", "%r2@3"}
    negations = [ins for ins in instructions if ins.opcode == "neg"]
    assert len(negations) == 2 and negations[0].operands[0] != negations[1].operands[0]
    labels = [statement.name for statement in kernel.body if not hasattr(statement, "opcode")]
    assert len(labels) == len(set(labels))


def test_each_inlined_instruction_keeps_its_own_ptx_and_cuda_line():
    program = compile_kernel(parse_ptx_file(str(CALLS)), "chain")
    ptx_lines = CALLS.read_text().splitlines()
    cu_lines = (DATA / "calls.cu").read_text().splitlines()
    clamp_start = next(n for n, line in enumerate(ptx_lines, 1) if "_Z9clamp_absi(" in line)
    clamp_end = next(n for n, line in enumerate(ptx_lines, 1) if "_Z3putPiii(" in line)
    clamp_cu = range(next(n for n, line in enumerate(cu_lines, 1) if "int clamp_abs" in line),
                     next(n for n, line in enumerate(cu_lines, 1) if "void put" in line))
    inlined = [slot for slot in program.slots if slot.ptx_loc and
               clamp_start <= slot.ptx_loc.line < clamp_end]
    assert len(inlined) >= 10                                  # two sites of clamp_abs
    for slot in inlined:
        assert ptx_lines[slot.ptx_loc.line - 1].split("//")[0].strip().startswith(
            slot.ptx_text.split()[0])
        assert slot.origin.cuda_loc.line in clamp_cu
    negate = next(n for n, line in enumerate(cu_lines, 1) if "return -a;" in line)
    assert any(slot.origin.cuda_loc.line == negate for slot in inlined)


def test_the_analyses_see_the_inlined_body():
    """put() stores through the pointer chain passed it: the range analysis follows the
    pointer through the call's .param and proves the store (the code is the same with the
    address checks left out)."""
    module = parse_ptx_file(str(CALLS))
    checked = compile_kernel(module, "chain")
    unchecked = compile_kernel(module, "chain", check_addresses=False)
    assert [s.instruction for s in checked.slots] == [s.instruction for s in unchecked.slots]


def test_a_trap_in_a_function_is_told_at_the_functions_line():
    """put(out, t + 8, ...) with `out` at words 118..121 stores past word 125: the trap is
    at the PTX line of put's store, and the CUDA line `p[i] = v`."""
    program = compile_kernel(parse_ptx_file(str(CALLS)), "chain")
    launch = launch_for_program(program, 1, 4, {"x": [1, 2, 3, 4], "pad": [0] * 114,
                                                "out": [0] * 4}, ["x", "out"])
    result = run_launch_sim(launch)
    assert result.trap is not None and result.trap.kind == "address out of range"
    assert result.trap.ptx_text == "st.global.u32 [%rd4], %r2;"
    cu_lines = (DATA / "calls.cu").read_text().splitlines()
    assert cu_lines[result.trap.cuda_loc.line - 1].strip().endswith("{ p[i] = v; }")


def function_kernel(functions: str, body: str, registers: str = "") -> str:
    return HEADER + functions + f"""
.visible .entry k(.param .u64 k_out)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;{registers}
    ld.param.u64 %rd1, [k_out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
{body}
    ret;
}}
"""


REG_FUNCTIONS = """
.func (.reg .b32 result) twice_plus(.reg .b32 x, .reg .b32 y)
{
    .reg .b32 %r<3>;
    add.u32 %r1, x, x;
    add.u32 result, %r1, y;
    ret;
}
.func (.param .b32 ret0) early(.param .b32 a)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [a];
    setp.lt.u32 %p1, %r1, 2;
    mov.u32 %r2, 100;
    st.param.b32 [ret0], %r2;
    @%p1 ret;
    mul.lo.u32 %r2, %r1, %r1;
    st.param.b32 [ret0], %r2;
    ret;
}
"""


def run_function_kernel(body: str, registers: str = "") -> list[int]:
    run = run_ptx(function_kernel(REG_FUNCTIONS, body, registers), {"out": [0] * 4}, ["out"])
    assert run.result.trap is None, run.result.trap.message
    return run.words["out"]


def test_register_parameters_and_results():
    out = run_function_kernel("""
    call (%r2), twice_plus, (%r1, 7);
    call (%r3), twice_plus, (%r2, %r1);
    st.global.u32 [%rd3], %r3;""")
    assert out == [(2 * (2 * t + 7) + t) & M32 for t in range(4)]


def test_a_guarded_return_in_the_middle_of_a_function():
    """`@%p ret` leaves the function where it stands: threads 0 and 1 keep 100."""
    out = run_function_kernel("""
    { .param .b32 a0; .param .b32 r0;
    st.param.b32 [a0], %r1;
    call.uni (r0), early, (a0);
    ld.param.b32 %r2, [r0]; }
    st.global.u32 [%rd3], %r2;""")
    assert out == [100, 100, 4, 9]


def test_a_guarded_call_runs_where_its_guard_holds():
    out = run_function_kernel("""
    mov.u32 %r2, 5;
    setp.ge.u32 %p1, %r1, 2;
    @%p1 call (%r2), twice_plus, (%r1, 1);
    @!%p1 call (%r3), twice_plus, (%r1, 1000);
    @!%p1 add.u32 %r2, %r3, 0;
    st.global.u32 [%rd3], %r2;""")
    assert out == [1000, 1002, 5, 7]


def test_a_register_passed_to_a_param_parameter_and_a_result_not_read():
    out = run_function_kernel("""
    { .param .b32 r0;
    call.uni (r0), early, (%r1);
    ld.param.b32 %r2, [r0]; }
    call.uni early, (%r1);
    st.global.u32 [%rd3], %r2;""")
    assert out == [100, 100, 4, 9]


def test_callee_and_caller_registers_of_one_name_stay_apart():
    """Both use %r1 and %r2; the callee's are renamed at the call site."""
    out = run_function_kernel("""
    mov.u32 %r2, 40;
    { .param .b32 a0; .param .b32 r0;
    st.param.b32 [a0], %r1;
    call.uni (r0), early, (a0);
    ld.param.b32 %r3, [r0]; }
    add.u32 %r3, %r3, %r2;
    add.u32 %r3, %r3, %r1;
    st.global.u32 [%rd3], %r3;""")
    assert out == [140, 141, 46, 52]


# ---- refusals ------------------------------------------------------------------------------------

def cuda_line(after: str, text: str) -> int:
    lines = ERRORS_CU.read_text().splitlines()
    start = next(number for number, line in enumerate(lines) if after in line)
    return next(number for number, line in enumerate(lines[start:], start + 1) if text in line)


REFUSED = [
    ("recursive", "recursion is not supported by QwenGPU: fib(int) calls itself; QwenGPU has "
                  "no call stack, so the loader inlines every call", "int fib(", "fib(n - 1)"),
    ("mutually_recursive", "recursion is not supported by QwenGPU: is_even(int) calls "
                           "is_odd(int), which calls is_even(int);", "int is_odd(int n)\n",
     "is_even(n - 1)"),
    ("prints", "printf is not supported by QwenGPU (nvcc calls vprintf for it): the machine "
               "has no output but its memory", " prints(", "printf("),
    ("virtual_call", "indirect calls (function pointers, virtual functions) are not supported "
                     "by QwenGPU", "int measure(", "shape->area(k)"),
]


def _expected_line(after: str, statement: str) -> tuple[int, int]:
    lines = ERRORS_CU.read_text().splitlines()
    after = after.rstrip("\n")
    start = max(number for number, line in enumerate(lines) if after in line)
    line = next(number for number, text in enumerate(lines[start:], start + 1)
                if statement in text)
    text = lines[line - 1]
    column = text.index(statement) + 1 if statement == "shape->area(k)" else \
        len(text) - len(text.lstrip()) + 1
    return line, column


@pytest.mark.parametrize("kernel,message,after,statement", REFUSED,
                         ids=[row[0] for row in REFUSED])
def test_refused_calls_name_the_cuda_line(kernel, message, after, statement):
    line, _ = _expected_line(after, statement)
    with pytest.raises(PtxError) as caught:
        compile_kernel(parse_ptx_file(str(ERRORS_PTX)), kernel)
    error = caught.value
    assert message in error.message
    assert error.loc.file == str(ERRORS_PTX)
    assert ERRORS_PTX.read_text().expandtabs(8).splitlines()[error.loc.line - 1].strip() \
        .startswith("call")
    assert [(note.loc.file, note.loc.line) for note in error.notes] == [(str(ERRORS_CU), line)]


@needs_nvcc
@pytest.mark.parametrize("kernel,message,after,statement", REFUSED,
                         ids=[row[0] for row in REFUSED])
def test_refused_calls_of_a_cu_source_are_at_the_cuda_line(kernel, message, after, statement,
                                                           tmp_path):
    line, _ = _expected_line(after, statement)
    shutil.copy(ERRORS_CU, tmp_path)
    source = str(tmp_path / ERRORS_CU.name)
    with pytest.raises(UserError) as caught:
        compile_kernel(read_module(source), kernel)
    error = caught.value
    assert error.loc.file == source and error.loc.line == line and message in error.message
    assert ".cu.ptx" not in error.render()


def error_of(functions: str, body: str, registers: str = "") -> PtxError:
    with pytest.raises(PtxError) as caught:
        compile_kernel(parse_ptx(function_kernel(functions, body, registers), "bad.ptx"), "k")
    return caught.value


def test_other_calls_that_cannot_be_inlined():
    undefined = error_of(".extern .func (.param .b32 r) elsewhere(.param .b32 a);\n", """
    { .param .b32 a0; .param .b32 r0;
    st.param.b32 [a0], %r1;
    call.uni (r0), elsewhere, (a0); }""")
    assert "a call of elsewhere, which this PTX declares but does not define" in \
        undefined.message
    assert undefined.loc.line == function_kernel(".extern .func (.param .b32 r) elsewhere("
                                                 ".param .b32 a);\n", """
    { .param .b32 a0; .param .b32 r0;
    st.param.b32 [a0], %r1;
    call.uni (r0), elsewhere, (a0); }""").splitlines().index(
        "    call.uni (r0), elsewhere, (a0); }") + 1
    assertion = error_of(".extern .func __assertfail(.param .b64 a);\n",
                         "    { .param .b64 a0; st.param.b64 [a0], %rd1;\n"
                         "    call.uni __assertfail, (a0); }")
    assert assertion.message.startswith("assert() is not supported by QwenGPU")
    count = error_of(REG_FUNCTIONS, "    call (%r2), twice_plus, (%r1);")
    assert count.message == "this call of twice_plus passes 1 arguments, but it takes 2"
    address = error_of(REG_FUNCTIONS, """
    { .param .b32 a0; .param .b32 r0;
    mov.u64 %rd2, a0;
    st.param.b32 [a0], %r1;
    call.uni (r0), early, (a0); }""")
    assert "the call parameter a0 is used as an address here" in address.message
    unaligned = error_of(REG_FUNCTIONS, """
    { .param .align 4 .b8 a0[8]; .param .b32 r0;
    st.param.b32 [a0+2], %r1;
    call.uni (r0), early, (a0); }""")
    assert "this 32-bit access at byte 2 of a0 is not aligned" in unaligned.message


def test_calls_that_multiply_past_any_program_are_refused():
    """f calls g twice, g calls h twice, ...: 2^15 copies of the innermost body."""
    functions = "".join(f"""
.func (.reg .b32 r) f{level}(.reg .b32 a)
{{
    .reg .b32 %t<3>;
    call (%t1), f{level + 1}, (a);
    call (%t2), f{level + 1}, (%t1);
    add.u32 r, %t1, %t2;
    ret;
}}""" for level in range(15)) + "\n.func (.reg .b32 r) f15(.reg .b32 a) { add.u32 r, a, 1; ret; }\n"
    with pytest.raises(CapacityError, match="inlining the calls of k gives more than 20000 PTX "
                                            "instructions"):
        compile_kernel(parse_ptx(function_kernel(functions, "    call (%r2), f0, (%r1);"),
                                 "big.ptx"), "k")
