"""Optional record fields end to end: tests/backend_torch/specs/optional_fields.hdl (two lanes,
per-lane values and stores present only under their masks, a port token only when lane 1
stores) compiled with --target min; stock transformers (and the sparse engine, in `run_case`)
write exactly the interpreter's records, of varying length, from the prompt and after a
prefilled prefix, in fp32 and bf16.  The model decides each next position from the masks it
has written; a field a record leaves out is never read by a write (the compiler's check), so
the bytes an earlier record left in the scratch do no harm — the memories below make sure a
left-out field follows one that held a value."""

from __future__ import annotations

import random

import pytest
import torch

from qwengpu.dsl import Simulator
from compile_helpers import compile_and_load, compile_to, load, run_case, texts
from tiers import EXTRA

SPEC = "tests/backend_torch/specs/optional_fields.hdl"
BF16_RECORDS = 6       # of seed 3's 14 in the default run (the rest: the extra tier)


def simulator(design, seed: int) -> Simulator:
    rng = random.Random(seed)
    sim = Simulator(design)
    sim.load_memory("mem", [rng.getrandbits(8) for _ in range(6)])
    return sim


def stale_then_absent(records) -> int:
    """Records leaving out a lane's value that the record before had (nonzero)."""
    return sum(1 for before, record in zip(records, records[1:]) for lane in (0, 1)
               if before[f"val{lane}"] and not record["wen"] >> lane & 1)


def assert_every_kind(protocol, records) -> None:
    """At least three record lengths, a stale value left out, lane 1 storing and not."""
    lengths = {len(protocol.encode_record(r)) for r in records}
    assert len(lengths) >= 3 and min(lengths) < protocol.tokens_per_record
    assert stale_then_absent(records) >= 1
    assert any(r["sen"] >> 1 & 1 for r in records) and any(not r["sen"] >> 1 & 1 for r in records)


@pytest.fixture(scope="module")
def optional(tmp_path_factory):
    return compile_and_load(SPEC, tmp_path_factory.mktemp("optional"))


@pytest.mark.parametrize("seed, prefix", [(0, 0), pytest.param(1, 0, marks=EXTRA), (2, 23)])
def test_optional_fields_trace_fp32(optional, seed, prefix):
    compiled, model = optional
    protocol = compiled.protocol
    assert_every_kind(protocol, simulator(compiled.design, seed).run(100))
    expected, got = run_case(compiled, model, simulator(compiled.design, seed), prefix=prefix)
    assert texts(compiled, got) == texts(compiled, expected)


def compile_bf16(spec: str, directory):
    """(compiled, model): `spec` compiled in bfloat16 into `directory`, loaded."""
    return compile_to(spec, directory, dtype=torch.bfloat16), load(directory)


# seed 3's first six records (every record length, a stale value left out, both port
# choices: asserted) in the default run; the whole launch, to its end, in the extra tier
# (bf16 decoding is three times fp32's cost on a CPU; a launch's end is checked in fp32)
BF16_TRACES = [BF16_RECORDS, pytest.param(1000, marks=EXTRA)]


def check_bf16_trace(machine, records: int) -> None:
    """Seed 3's launch on the bf16 `machine`, cut at `records` records."""
    compiled, model = machine
    assert_every_kind(compiled.protocol, simulator(compiled.design, 3).run(records))
    expected, got = run_case(compiled, model, simulator(compiled.design, 3),
                             max_records=records)
    assert texts(compiled, got) == texts(compiled, expected)


@pytest.fixture(scope="module")
def optional_bf16(tmp_path_factory):
    return compile_bf16(SPEC, tmp_path_factory.mktemp("optional_bf16"))


@pytest.mark.parametrize("records", BF16_TRACES)
def test_optional_fields_trace_bf16(optional_bf16, records):
    check_bf16_trace(optional_bf16, records)
