"""The vertical slice: specs/counter.hdl compiled with --target min, loaded by stock
transformers, generates exactly the interpreter's trace (0 .. LIMIT, then eos) greedily, in
fp32 and bf16, from the prompt alone and after a prefilled prefix of the trace; and the
compiler's output is byte-identical from run to run."""

from __future__ import annotations

import filecmp
import json

import pytest
import torch

from qwengpu.dsl import Simulator
from compile_helpers import compile_to, load, run_case, texts

SPEC = "specs/counter.hdl"


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    directory = tmp_path_factory.mktemp("counter")
    return compile_to(SPEC, directory), directory


def test_checkpoint_files_and_config(counter):
    compiled, directory = counter
    config = json.loads((directory / "config.json").read_text())
    assert config["model_type"] == "qwen3_5_text"
    assert config["architectures"] == ["Qwen3_5ForCausalLM"]
    assert config["num_hidden_layers"] == 45 and len(config["layer_types"]) == 45
    assert "full_attention" in config["layer_types"]
    generation = json.loads((directory / "generation_config.json").read_text())
    assert generation["eos_token_id"] == compiled.protocol.eos_id
    assert generation.get("do_sample") is False
    for name in ("model.safetensors", "tokenizer.json", "protocol.json", "schedule.txt"):
        assert (directory / name).exists(), name


@pytest.mark.parametrize("prefix", [0, 5])
def test_counter_trace_fp32(counter, prefix):
    compiled, directory = counter
    model = load(directory)
    expected, got = run_case(compiled, model, Simulator(compiled.design), prefix=prefix)
    assert texts(compiled, got) == texts(compiled, expected)
    assert texts(compiled, expected).split()[-2:] == ["count.b0=0a", "<eos>"]


def test_counter_from_another_state(counter):
    """Start the machine at count = 7: the trace is 7 .. 10, eos."""
    compiled, directory = counter
    sim = Simulator(compiled.design)
    sim.set_register("count", 7)
    expected, got = run_case(compiled, load(directory), sim)
    assert texts(compiled, got) == "count.b0=07 count.b0=08 count.b0=09 count.b0=0a <eos>"
    assert got == expected


def test_counter_trace_bf16(tmp_path):
    compiled = compile_to(SPEC, tmp_path, dtype=torch.bfloat16)
    model = load(tmp_path)
    assert next(model.parameters()).dtype == torch.bfloat16
    expected, got = run_case(compiled, model, Simulator(compiled.design), prefix=3)
    assert got == expected, texts(compiled, got)


def test_compile_is_deterministic(counter, tmp_path):
    _, first = counter
    compile_to(SPEC, tmp_path)
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in tmp_path.iterdir())
    match, mismatch, errors = filecmp.cmpfiles(first, tmp_path, names, shallow=False)
    assert not mismatch and not errors
