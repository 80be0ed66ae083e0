"""Memories of more than 128 words end to end: one DeltaNet head has 128 key slots, so the
compiler spreads a bigger store over banks of heads, bank b holding words 128 b to 128 b + 127
(`emit._install_banks`; docs/state.md, "Memories of more than 128 words").  Two machines,
each run by stock transformers, the sparse engine (and llama.cpp where installed) against the
reference interpreter: tests/backend_torch/specs/big_memory.hdl, a pointer chase through 200
bytes written and read at data-dependent addresses (reads and writes out of range among
them; float32 and bfloat16), and the tiny register machine with 256 program words, its program spread over both
banks and jumping between them."""

from __future__ import annotations

import random

import pytest
import torch

from qwengpu.dsl import Simulator
from tiers import EXTRA
from compile_helpers import ADD, HALT, JNZ, LOADI, TINY_SPEC, compile_and_load, compile_plan, \
    ins, run_case, texts

BIG_MEMORY = "tests/backend_torch/specs/big_memory.hdl"
WIDE_PROGRAM = {"PROG_WORDS": 256}


def memory_op(plan, element: str):
    return next(op for op in plan.ops if op.kind == "memory" and op.work.element == element
                and op.work.query[0] == "value")


def test_a_store_past_one_head_is_banked():
    """200 words and the spare slot out-of-range reads use: two banks; 256 program words
    (an 8-bit pc never out of range): two banks, each bank a head of its own."""
    mem = memory_op(compile_plan(BIG_MEMORY).plan, "mem")
    assert (mem.work.banks, mem.heads) == (2, 2)
    prog = memory_op(compile_plan(TINY_SPEC, params=WIDE_PROGRAM).plan, "prog")
    assert (prog.work.banks, prog.heads) == (2, 2)
    assert memory_op(compile_plan(TINY_SPEC).plan, "prog").work.banks == 1


@pytest.fixture(scope="module")
def big_memory(request, tmp_path_factory):
    """The machine compiled in the dtype the test's parameter names."""
    return compile_and_load(BIG_MEMORY, tmp_path_factory.mktemp("big_memory"), request.param)


BF16_RECORDS = 10      # of seed 0's 24: both banks and out-of-range reads among them
WHOLE = 1000           # run_case's default record limit: the launch to its end
# (dtype, seed, records): seed 0 in fp32 whole and in bf16 its first BF16_RECORDS by default
# (bf16 decoding costs three times fp32's), the rest extra
CHASES = [pytest.param(torch.float32, 0, WHOLE, id="fp32-0"),
          pytest.param(torch.float32, 1, WHOLE, id="fp32-1", marks=EXTRA),
          pytest.param(torch.bfloat16, 0, BF16_RECORDS, id=f"bf16-0-first{BF16_RECORDS}"),
          pytest.param(torch.bfloat16, 0, WHOLE, id="bf16-0", marks=EXTRA),
          pytest.param(torch.bfloat16, 1, WHOLE, id="bf16-1", marks=EXTRA)]


def chase_from(design, memory: list[int], pointer: int) -> Simulator:
    sim = Simulator(design)
    sim.load_memory("mem", memory)
    sim.set_register("p", pointer)
    return sim


@pytest.mark.parametrize("big_memory, seed, records", CHASES, indirect=["big_memory"])
def test_pointer_chase(big_memory, seed, records):
    """In float32 (binary values) and in bfloat16 (one-hot values).  A launch cut to its
    first records starts from a memory holding only the bytes those records read (the
    prompt leaves zero words out: seed 0's 407 tokens become 25), asserted to give the same
    records."""
    compiled, model = big_memory
    rng = random.Random(seed)
    memory, pointer = [rng.getrandbits(8) for _ in range(200)], rng.randrange(256)
    whole = chase_from(compiled.design, memory, pointer).run(100)
    chase = whole[:records]
    if len(chase) < len(whole):
        read = {r["p"] for r in chase}
        memory = [word if address in read else 0 for address, word in enumerate(memory)]
        assert chase_from(compiled.design, memory, pointer).run(records) == chase
    sim = chase_from(compiled.design, memory, pointer)
    pointers = [r["p"] for r in chase]
    assert any(p < 128 for p in pointers) and any(128 <= p < 200 for p in pointers)
    assert any(p >= 200 for p in pointers) or any(r["next"] >= 200 for r in chase)
    expected, got = run_case(compiled, model, sim, prefix=5 * seed, max_records=records)
    assert texts(compiled, got) == texts(compiled, expected)


@pytest.fixture(scope="module")
def wide_program(tmp_path_factory):
    return compile_and_load(TINY_SPEC, tmp_path_factory.mktemp("wide_program"),
                            params=WIDE_PROGRAM)


def test_a_program_across_both_banks(wide_program):
    """Code at 0, 126 to 130 (across the banks' boundary) and 200, jumps both ways."""
    compiled, model = wide_program
    program = [0] * 256
    program[0:3] = [ins(LOADI, 0, 0, 3), ins(LOADI, 1, 0, 0xFF), ins(JNZ, 0, 0, 200)]
    program[200:204] = [ins(ADD, 0, 1), ins(JNZ, 0, 0, 200), ins(LOADI, 2, 0, 7),
                        ins(JNZ, 2, 0, 126)]
    program[126:131] = [ins(ADD, 2, 2), ins(ADD, 2, 2), ins(ADD, 2, 2), ins(ADD, 3, 2),
                        ins(HALT)]
    sim = Simulator(compiled.design)
    sim.load_memory("prog", program)
    expected, got = run_case(compiled, model, sim)
    assert "pc.b0=c8" in texts(compiled, expected) and "pc.b0=80" in texts(compiled, expected)
    assert texts(compiled, got) == texts(compiled, expected)


@pytest.mark.parametrize("seed", range(3))
def test_single_step_from_random_state(wide_program, seed):
    compiled, model = wide_program
    rng = random.Random(seed)
    sim = Simulator(compiled.design)
    sim.load_memory("prog", [rng.getrandbits(16) for _ in range(256)])
    sim.load_memory("regs", [rng.getrandbits(8) for _ in range(4)])
    sim.set_register("pc", rng.randrange(256))
    expected, got = run_case(compiled, model, sim, max_records=3)
    assert texts(compiled, got) == texts(compiled, expected)
