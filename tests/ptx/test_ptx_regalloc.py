"""Register allocation and the capacity limits: registers, predicates, instruction slots and
parameter words, each at the edge (fits) and one past it (a CapacityError that says by how
much and where; past the registers, on a machine without local memory to spill to —
spilling itself is tests/ptx/test_ptx_spill.py)."""

from __future__ import annotations

import pytest

from qwengpu.errors import CapacityError
from qwengpu.isa import Op
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx
from qwengpu.ptx.program import MachineLimits

from ptx_harness import HEADER, run_ptx


def chain_kernel(values: int) -> str:
    """`values` values all live at once, plus the output pointer: values + 1 registers."""
    body = ["    mov.u32 %v0, %tid.x;"]
    body += [f"    add.s32 %v{i}, %v{i - 1}, {i};" for i in range(1, values)]
    body += [f"    st.global.u32 [%rd1+{4 * i}], %v{i};" for i in range(values)]
    return HEADER + (f".visible .entry chain(.param .u64 chain_out)\n{{\n"
                     f"    .reg .b32 %v<{values}>;\n    .reg .b64 %rd<2>;\n"
                     "    ld.param.u64 %rd1, [chain_out];\n" + "\n".join(body)
                     + "\n    ret;\n}\n")


def test_fifteen_live_values_fit_and_run():
    ptx = chain_kernel(14)
    program = compile_kernel(parse_ptx(ptx, "chain.ptx"), "chain")
    assert program.registers_used == 15
    run = run_ptx(ptx, {"out": [0] * 14}, ["out"], block=1)
    expected, value = [], 0
    for i in range(14):
        value += i
        expected.append(value)
    assert run.words["out"] == expected


def test_too_many_live_values_fail_with_the_count_and_the_line():
    """Sixteen live values spill (tests/ptx/test_ptx_spill.py); on a machine without local
    memory they are refused as before, at the line where the most are live."""
    ptx = chain_kernel(15)
    with pytest.raises(CapacityError) as caught:
        compile_kernel(parse_ptx(ptx, "chain.ptx"), "chain", MachineLimits(local_words=0))
    error = caught.value
    assert "kernel chain needs 16 registers at once here, but QwenGPU has 15, and there is no " \
        "local memory to spill them to" in error.message
    line = ptx.splitlines()[error.loc.line - 1].strip()
    assert line.startswith(("add.s32 %v14", "st.global.u32 [%rd1+0]"))


def predicate_kernel(count: int) -> str:
    setps = "\n".join(f"    setp.eq.u32 %p{i}, %r1, {i};" for i in range(count))
    uses = "\n".join(f"    selp.u32 %r2, 1, 0, %p{i};\n    add.s32 %r3, %r3, %r2;"
                     for i in range(count))
    return HEADER + (f".visible .entry preds(.param .u64 preds_out)\n{{\n"
                     f"    .reg .pred %p<{count}>;\n    .reg .b32 %r<4>;\n    .reg .b64 %rd<2>;\n"
                     "    ld.param.u64 %rd1, [preds_out];\n    mov.u32 %r1, %tid.x;\n"
                     "    mov.u32 %r3, 0;\n" + setps + "\n" + uses
                     + "\n    st.global.u32 [%rd1], %r3;\n    ret;\n}\n")


def test_seven_predicates_fit_and_eight_spill():
    program = compile_kernel(parse_ptx(predicate_kernel(7), "p.ptx"), "preds")
    assert program.predicates_used == 7 and program.local_bytes == 0
    spilled = compile_kernel(parse_ptx(predicate_kernel(8), "p.ptx"), "preds")
    assert spilled.predicates_used == 7 and spilled.local_bytes > 0
    with pytest.raises(CapacityError, match="needs 8 predicate registers at once here, but "
                                            "QwenGPU has 7, and there is no local memory"):
        compile_kernel(parse_ptx(predicate_kernel(8), "p.ptx"), "preds",
                       MachineLimits(local_words=0))


def test_a_guarded_write_keeps_the_old_value_alive():
    """Lanes whose guard fails keep %r1; the allocator must not reuse its register between
    the first write and the guarded one."""
    ptx = HEADER + """.visible .entry keep(.param .u64 keep_out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [keep_out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, %tid.x;
    setp.lt.u32 %p1, %r3, 2;
    add.s32 %r4, %r3, 7;
    mul.lo.s32 %r5, %r4, %r4;
    mul.wide.u32 %rd2, %r3, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3+16], %r5;
    @%p1 mov.u32 %r1, 5;
    st.global.u32 [%rd3], %r1;
    ret;
}
"""
    run = run_ptx(ptx, {"out": [0] * 8}, ["out"])
    assert run.words["out"] == [5, 5, 2, 3, 49, 64, 81, 100]


def test_copies_are_coalesced_and_output_is_deterministic():
    ptx = HEADER + """.visible .entry copies(.param .u64 copies_out)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [copies_out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %r1;
    add.s32 %r3, %r2, 1;
    mov.u32 %r4, %r3;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r4;
    ret;
}
"""
    first = compile_kernel(parse_ptx(ptx, "c.ptx"), "copies")
    second = compile_kernel(parse_ptx(ptx, "c.ptx"), "copies")
    assert [slot.instruction.encode() for slot in first.slots] == \
        [slot.instruction.encode() for slot in second.slots]
    ops = [slot.instruction.op for slot in first.slots]
    assert ops == [Op.LDP, Op.S2R, Op.ADD, Op.MUL, Op.ADD, Op.ST, Op.EXIT]
    assert run_ptx(ptx, {"out": [0] * 4}, ["out"]).words["out"] == [1, 2, 3, 4]


def _long_kernel(adds: int) -> str:
    body = "\n".join("    add.s32 %r1, %r1, 3;" for _ in range(adds))
    return HEADER + (".visible .entry long(.param .u64 long_out)\n{\n    .reg .b32 %r<2>;\n"
                     "    .reg .b64 %rd<2>;\n    ld.param.u64 %rd1, [long_out];\n"
                     "    mov.u32 %r1, %tid.x;\n" + body
                     + "\n    st.global.u32 [%rd1], %r1;\n    ret;\n}\n")


def test_too_many_instructions_says_by_how_much():
    """And names the machine that holds the kernel, where one of 256 slots does."""
    with pytest.raises(CapacityError, match=r"kernel long needs 134 instruction slots, but "
                                            r"QwenGPU has 128 \(6 too many; a machine "
                                            r"compiled with -P PROG_WORDS=256 holds it\)"
                       ) as caught:
        compile_kernel(parse_ptx(_long_kernel(130), "long.ptx"), "long")
    assert caught.value.loc.line > 8
    with pytest.raises(CapacityError, match=r"needs 304 instruction slots, but QwenGPU has "
                                            r"128 \(176 too many\); the first"):
        compile_kernel(parse_ptx(_long_kernel(300), "long.ptx"), "long")


def test_too_many_parameter_words():
    params = ", ".join(f".param .u32 many_{i}" for i in range(9))
    loads = "\n".join(f"    ld.param.u32 %r{i}, [many_{i}];\n    add.s32 %s, %s, %r{i};"
                      for i in range(9))
    ptx = HEADER + (f".visible .entry many({params}, .param .u64 many_out)\n{{\n"
                    "    .reg .b32 %r<9>;\n    .reg .b32 %s;\n    .reg .b64 %rd<2>;\n"
                    "    mov.u32 %s, 0;\n" + loads
                    + "\n    ld.param.u64 %rd1, [many_out];\n    st.global.u32 [%rd1], %s;\n"
                    "    ret;\n}\n")
    with pytest.raises(CapacityError, match=r"reads 10 parameter words .* QwenGPU has 8 "
                                            r"\(2 too many\)"):
        compile_kernel(parse_ptx(ptx, "many.ptx"), "many")


def test_unused_parameters_and_pointer_high_words_take_no_parameter_slots():
    ptx = HEADER + """.visible .entry sparse(.param .u64 sparse_a, .param .u32 sparse_unused,
                                  .param .u64 sparse_b)
{
    .reg .b64 %rd<4>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [sparse_a];
    ld.param.u64 %rd2, [sparse_b];
    ld.global.u32 %r1, [%rd1];
    st.global.u32 [%rd2], %r1;
    ret;
}
"""
    program = compile_kernel(parse_ptx(ptx, "s.ptx"), "sparse")
    assert program.param_slots == [("sparse_a", 0), ("sparse_b", 0)]
    run = run_ptx(ptx, {"a": [42], "b": [0]}, ["a", 9, "b"], block=1)
    assert run.words["b"] == [42]
