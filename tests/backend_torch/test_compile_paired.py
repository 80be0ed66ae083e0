"""Two record fields in one token end to end: tests/backend_torch/specs/paired_fields.hdl
(optional_fields.hdl with its small fields paired: `(t, wen)` opens a record and holds the
mask of the per-lane values in its high digit, `(low, last)` closes it) compiled with
--target min.  Stock transformers (and the sparse engine, in `run_case`) write exactly the
interpreter's records, from the prompt and after a prefilled prefix, in fp32 and bf16, and
the pairs save a token each on every record."""

from __future__ import annotations

import pytest

from qwengpu.dsl.elaborate import load_design
from qwengpu.trace.protocol import TraceProtocol
from compile_helpers import compile_and_load, run_case, texts
from tiers import EXTRA
# the same mem[6] start as the unpaired machine's, and its bf16 check
from test_compile_optional import BF16_TRACES, SPEC as UNPAIRED, check_bf16_trace, \
    compile_bf16, simulator

SPEC = "tests/backend_torch/specs/paired_fields.hdl"


@pytest.fixture(scope="module")
def paired(tmp_path_factory):
    return compile_and_load(SPEC, tmp_path_factory.mktemp("paired"))


def test_a_pair_saves_a_token_on_every_record():
    paired, unpaired = (load_design(spec) for spec in (SPEC, UNPAIRED))
    protocols = [TraceProtocol.from_design(design) for design in (paired, unpaired)]
    records = [simulator(design, 0).run(100) for design in (paired, unpaired)]
    assert [{k: v for k, v in r.items() if k != "low"} for r in records[0]] == records[1]
    for ours, theirs in zip(records[0], records[1]):
        assert len(protocols[0].encode_record(ours)) == len(protocols[1].encode_record(theirs)) - 1
    assert protocols[0].describe(protocols[0].encode_record(records[0][1])[0]).text == \
        "t=1,wen=3"


@pytest.mark.parametrize("seed, prefix", [(0, 0), pytest.param(1, 0, marks=EXTRA), (2, 23)])
def test_paired_fields_trace_fp32(paired, seed, prefix):
    compiled, model = paired
    records = simulator(compiled.design, seed).run(100)
    assert any(r["wen"] for r in records) and any(not r["wen"] for r in records)
    expected, got = run_case(compiled, model, simulator(compiled.design, seed), prefix=prefix)
    assert texts(compiled, got) == texts(compiled, expected)


@pytest.fixture(scope="module")
def paired_bf16(tmp_path_factory):
    return compile_bf16(SPEC, tmp_path_factory.mktemp("paired_bf16"))


@pytest.mark.parametrize("records", BF16_TRACES)
def test_paired_fields_trace_bf16(paired_bf16, records):
    check_bf16_trace(paired_bf16, records)
