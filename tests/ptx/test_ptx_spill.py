"""Spilling to local memory (docs/ptx.md, "Spilling"): at the edge (15 live values use no
local memory, 16 spill), under heavy pressure, inside loops, under divergence and guards,
predicates, the listing's marks, the choice of what to spill, slot sharing, and what does
not fit.

Expected values come from plain-Python readings of each kernel (here, or of the CUDA source
of tests/ptx/data/spill.cu); every run goes through the interpreter and the independent ISA
model (ptx_harness.run_ptx), which must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qwengpu.errors import CapacityError
from qwengpu.isa import Op, Space
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx, parse_ptx_file
from qwengpu.ptx.program import MachineLimits
from qwengpu.ptx.spill import SpillSlot, assign_slots
from qwengpu.ptx.vcode import ZERO, VInstr, VReg

from ptx_harness import HEADER, M32, run_ptx, s32
from test_ptx_regalloc import chain_kernel, predicate_kernel

DATA = Path(__file__).parent / "data"
SPILL = (DATA / "spill.ptx").read_text()
LOCAL = int(Space.LOCAL)


def compile_text(ptx: str, name: str, limits: MachineLimits = MachineLimits()):
    return compile_kernel(parse_ptx(ptx, f"{name}.ptx"), name, limits)


def spill_code(program) -> list[str]:
    return [slot.note for slot in program.slots if slot.note]


def row_chain_kernel(values: int) -> str:
    """chain_kernel with a row of `out` per thread: v0 = tid, v_i = v_(i-1) + i, all live at
    the stores."""
    body = ["    mov.u32 %v0, %tid.x;", f"    mul.wide.u32 %rd2, %v0, {4 * values};",
            "    add.s64 %rd1, %rd1, %rd2;"]
    body += [f"    add.s32 %v{i}, %v{i - 1}, {i};" for i in range(1, values)]
    body += [f"    st.global.u32 [%rd1+{4 * i}], %v{i};" for i in range(values)]
    return HEADER + (f".visible .entry chain(.param .u64 chain_out)\n{{\n"
                     f"    .reg .b32 %v<{values}>;\n    .reg .b64 %rd<3>;\n"
                     "    ld.param.u64 %rd1, [chain_out];\n" + "\n".join(body)
                     + "\n    ret;\n}\n")


def chain_values(count: int, threads: int) -> list[int]:
    return [t + i * (i + 1) // 2 for t in range(threads) for i in range(count)]


# ---- the edge ------------------------------------------------------------------------------

def test_fifteen_live_values_take_no_local_memory():
    program = compile_text(chain_kernel(14), "chain")
    assert program.registers_used == 15 and program.local_bytes == 0
    assert spill_code(program) == []
    assert "spill" not in program.listing() and "reload" not in program.listing()


def test_sixteen_live_values_spill_and_compute_the_same():
    program = compile_text(chain_kernel(15), "chain")
    assert program.registers_used == 15
    assert spill_code(program)                          # spill code was added ...
    listing = program.listing()
    assert "[spill %v" in listing or "[remat %v" in listing   # ... and is marked
    ptx = row_chain_kernel(15)
    assert spill_code(compile_text(ptx, "chain"))
    run = run_ptx(ptx, {"out": [0] * 60}, ["out"], block=4)
    assert run.words["out"] == chain_values(15, 4)


@pytest.mark.parametrize("values", [20, 25, 30])
def test_heavy_pressure_spills_many_values(values):
    ptx = row_chain_kernel(values)
    program = compile_text(ptx, "chain")
    assert 4 * (values + 1 - 15) - 8 <= program.local_bytes <= 64
    run = run_ptx(ptx, {"out": [0] * (2 * values)}, ["out"], block=2)
    assert run.words["out"] == chain_values(values, 2)


def test_spills_past_the_local_window_say_by_how_much():
    with pytest.raises(CapacityError) as caught:
        compile_text(chain_kernel(31), "chain")
    message = caught.value.message
    assert message.startswith("kernel chain needs 32 registers at once here, but QwenGPU has "
                              "15, and its spills need 17 words of local memory a thread, but "
                              "a thread has 16 (LOCAL_WORDS; 1 too many)")
    fits = compile_text(chain_kernel(31), "chain", MachineLimits(local_words=17))
    assert fits.local_bytes == 68


def test_a_machine_without_local_memory_refuses_as_before():
    with pytest.raises(CapacityError, match=r"needs 16 registers at once here, but QwenGPU has "
                                            r"15, and there is no local memory to spill them "
                                            r"to \(LOCAL_WORDS = 0\)"):
        compile_text(chain_kernel(15), "chain", MachineLimits(local_words=0))


def test_spilled_code_is_deterministic():
    first, second = (compile_text(chain_kernel(24), "chain") for _ in range(2))
    assert [slot.instruction.encode() for slot in first.slots] == \
        [slot.instruction.encode() for slot in second.slots]
    assert first.listing() == second.listing()


def test_spill_accesses_are_local_word_accesses_at_fixed_offsets():
    program = compile_text(chain_kernel(22), "chain")
    accesses = [slot.instruction for slot in program.slots
                if slot.note.startswith(("spill", "reload"))
                and slot.instruction.op in (Op.LD, Op.ST)]
    assert accesses and all(ins.space == LOCAL and ins.a == 15 and ins.imm % 4 == 0
                            and ins.imm < program.local_bytes for ins in accesses)


# ---- loops, divergence, guards --------------------------------------------------------------

def spill_loop_model(x: list[int], t: int, n: int) -> list[int]:
    a = [0, 1, 2, 3, 4, 5, -100, 100, 8, 9, 10, 11]
    for k in range(n):
        v = s32(x[(t + k) & 15])
        a[0] = s32(a[0] + v)
        a[1] = s32(a[1] ^ (v << 1))
        a[2] = s32(a[2] + v * 3)
        a[3] = s32(a[3] - v)
        a[4] = s32(a[4] | v)
        a[5] = s32(a[5] + k * v)
        a[6] = max(a[6], v)
        a[7] = min(a[7], v)
        a[8] = s32(a[8] + (v >> 2))
        a[9] ^= k
        a[10] = s32(a[10] + (v & k))
        a[11] = s32(a[11] + a[0])
    return [value & M32 for value in a]


def spill_divergent_model(x: list[int], t: int, n: int) -> list[int]:
    a = [t, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    for k in range(n):
        v = s32(x[(t + k) & 15])
        if (t + k) & 1:
            a[0] = s32(a[0] + v)
            a[1] ^= v
            a[2] = s32(a[2] + 3 * v)
            a[3] -= k
            a[4] = s32(a[4] + a[0])
            a[5] ^= a[1]
        else:
            a[6] = s32(a[6] + v)
            a[7] = s32(a[7] ^ (v << 2))
            a[8] = s32(a[8] - v)
            a[9] += k
            a[10] = s32(a[10] + a[6])
            a[11] = s32(a[11] ^ a[7])
        a[0] = s32(a[0] + (a[11] & 7))
    return [value & M32 for value in a]


X16 = [7, -3, 100, 0x7FFF, -1, 12, 9, -250, 31, 64, -7, 5, 1000, -1000, 3, 2]


@pytest.mark.parametrize("kernel,model", [("spill_loop", spill_loop_model),
                                          ("spill_divergent", spill_divergent_model)])
def test_nvcc_kernels_that_spill_in_loops_and_under_divergence(kernel, model):
    program = compile_kernel(parse_ptx_file(str(DATA / "spill.ptx")), kernel)
    assert program.local_bytes > 0 and spill_code(program)
    block, n = 6, 7
    run = run_ptx(SPILL, {"x": list(X16), "out": [0] * (12 * block)}, ["x", "out", n],
                  block=block, kernel=kernel)
    assert run.result.trap is None
    expected = [word for t in range(block) for word in model(X16, t, n)]
    assert run.words["out"] == expected


def guarded_kernel(values: int) -> str:
    """`values` values live at once, each then rewritten under a guard that holds in some
    lanes (tid & (1, 2, 3)[i % 3] != 0): lanes whose guard fails keep the old value."""
    body = ["    mov.u32 %t, %tid.x;", "    and.b32 %g0, %t, 1;", "    and.b32 %g1, %t, 2;",
            "    and.b32 %g2, %t, 3;", "    setp.ne.u32 %p0, %g0, 0;",
            "    setp.ne.u32 %p1, %g1, 0;", "    setp.ne.u32 %p2, %g2, 0;",
            "    mul.wide.u32 %rd2, %t, " + str(4 * values) + ";",
            "    add.s64 %rd3, %rd1, %rd2;"]
    body += [f"    mad.lo.s32 %v{i}, %t, {i + 1}, {100 * i};" for i in range(values)]
    body += [f"    @%p{i % 3} add.s32 %v{i}, %v{(i + 1) % values}, 1000;" for i in range(values)]
    body += [f"    st.global.u32 [%rd3+{4 * i}], %v{i};" for i in range(values)]
    return HEADER + (f".visible .entry guarded(.param .u64 guarded_out)\n{{\n"
                     f"    .reg .b32 %v<{values}>;\n    .reg .b32 %t;\n    .reg .b32 %g<3>;\n"
                     "    .reg .pred %p<3>;\n    .reg .b64 %rd<4>;\n"
                     "    ld.param.u64 %rd1, [guarded_out];\n" + "\n".join(body)
                     + "\n    ret;\n}\n")


def guarded_model(values: int, t: int) -> list[int]:
    v = [t * (i + 1) + 100 * i for i in range(values)]
    for i in range(values):
        if t & (1, 2, 3)[i % 3]:
            v[i] = v[(i + 1) % values] + 1000
    return [value & M32 for value in v]


def test_guarded_partial_writes_of_spilled_values_keep_the_old_value():
    values, block = 18, 4
    ptx = guarded_kernel(values)
    program = compile_text(ptx, "guarded")
    guarded_stores = [slot for slot in program.slots if slot.note.startswith("spill")
                      and slot.instruction.op == Op.ST and slot.instruction.pg != 7]
    assert guarded_stores, "a guarded write of a spilled value is stored under its guard"
    run = run_ptx(ptx, {"out": [0] * (values * block)}, ["out"], block=block)
    assert run.words["out"] == [w for t in range(block) for w in guarded_model(values, t)]


def test_values_used_in_a_loop_stay_in_registers():
    """Sixteen values live across a loop that only counts: the spill cost (weighted by loop
    depth) spills the values outside it, so the loop body has no spill code."""
    values = 16
    setup = "\n".join(f"    add.s32 %v{i}, %t, {i * 7};" for i in range(values))
    uses = "\n".join(f"    st.global.u32 [%rd1+{4 * i}], %v{i};" for i in range(values))
    ptx = HEADER + f""".visible .entry looped(.param .u64 looped_out, .param .u32 looped_n)
{{
    .reg .b32 %v<{values}>;
    .reg .b32 %t, %n, %k, %s;
    .reg .pred %p;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [looped_out];
    ld.param.u32 %n, [looped_n];
    mov.u32 %t, %tid.x;
{setup}
    mov.u32 %k, 0;
    mov.u32 %s, 0;
$L_loop:
    mad.lo.s32 %s, %s, 3, %k;
    add.s32 %k, %k, 1;
    setp.lt.u32 %p, %k, %n;
    @%p bra $L_loop;
    st.global.u32 [%rd1+{4 * values}], %s;
{uses}
    ret;
}}
"""
    program = compile_text(ptx, "looped")
    lines = [slot.ptx_loc.line if slot.ptx_loc else 0 for slot in program.slots]
    text = ptx.splitlines()
    loop_lines = {number for number, line in enumerate(text, 1)
                  if line.strip().startswith(("mad.lo.s32 %s", "add.s32 %k", "setp.lt.u32 %p",
                                              "@%p bra"))}
    assert program.local_bytes > 0
    assert not [slot for slot, line in zip(program.slots, lines)
                if line in loop_lines and slot.note], program.listing()
    run = run_ptx(ptx, {"out": [0] * (values + 1)}, ["out", 5], block=1)
    s = 0
    for k in range(5):
        s = s * 3 + k
    assert run.words["out"] == [i * 7 for i in range(values)] + [s]


# ---- predicates -----------------------------------------------------------------------------

@pytest.mark.parametrize("count", [8, 12])
def test_more_than_seven_live_predicates_spill_through_registers(count):
    ptx = predicate_kernel(count)
    program = compile_text(ptx, "preds")
    assert program.predicates_used == 7 and program.local_bytes > 0
    notes = [(slot.instruction.op, slot.note) for slot in program.slots if slot.note]
    assert any(op == Op.SELP and note.startswith("spill %p") for op, note in notes)
    assert any(op == Op.SETP and note.startswith("reload %p") for op, note in notes)
    for block in (1, 8):
        run = run_ptx(ptx, {"out": [0] * 1}, ["out"], block=block)
        # thread t counts the predicates p_i = (t == i) that hold: one for t < count
        assert run.words["out"] == [1 if block - 1 < count else 0]


def test_a_spilled_predicate_guards_branches_and_guarded_writes():
    count = 9
    setps = "\n".join(f"    setp.eq.u32 %p{i}, %t, {i};" for i in range(count))
    guarded = "\n".join(f"    @%p{i} setp.ne.u32 %p{(i + 1) % count}, %t, 99;" for i in range(count))
    uses = "\n".join(f"    @%p{i} add.s32 %s, %s, {1 << i};" for i in range(count))
    ptx = HEADER + f""".visible .entry gp(.param .u64 gp_out)
{{
    .reg .pred %p<{count}>;
    .reg .b32 %t, %s;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [gp_out];
    mov.u32 %t, %tid.x;
    mov.u32 %s, 0;
{setps}
{guarded}
    @%p0 bra $L_skip;
{uses}
$L_skip:
    mul.wide.u32 %rd2, %t, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %s;
    ret;
}}
"""
    run = run_ptx(ptx, {"out": [0] * 12}, ["out"], block=12)
    expected = []
    for t in range(12):
        p = [t == i for i in range(count)]
        for i in range(count):
            if p[i]:
                p[(i + 1) % count] = t != 99
        expected.append(0 if p[0] else sum(1 << i for i in range(count) if p[i]))
    assert compile_text(ptx, "gp").local_bytes > 0
    assert run.words["out"] == expected


# ---- slots ----------------------------------------------------------------------------------

def _access(op: Op, slot: str, register: str) -> VInstr:
    if op == Op.ST:
        return VInstr(op=Op.ST, a=ZERO, b=VReg(register), imm=SpillSlot(slot), space=LOCAL)
    return VInstr(op=Op.LD, d=VReg(register), a=ZERO, imm=SpillSlot(slot), space=LOCAL)


def test_values_never_in_memory_at_once_share_a_slot():
    code = [_access(Op.ST, "a", "x"), _access(Op.LD, "a", "x"),
            _access(Op.ST, "b", "y"), _access(Op.LD, "b", "y")]
    assert assign_slots(code, 8) == 1
    assert [ins.imm for ins in code] == [8, 8, 8, 8]


def test_values_in_memory_at_once_get_their_own_slots():
    code = [_access(Op.ST, "a", "x"), _access(Op.ST, "b", "y"),
            _access(Op.LD, "a", "x"), _access(Op.LD, "b", "y")]
    assert assign_slots(code, 0) == 2
    assert [ins.imm for ins in code] == [0, 4, 0, 4]
