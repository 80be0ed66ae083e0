"""The real shape: specs/counter.hdl and the tiny register machine compiled into the
Qwen3.5-2B target (hidden 2048, intermediate 6144, 16 DeltaNet heads, 45 layers with every
fourth full attention), written in bf16 (5.2 GB, about 2 minutes and 6 GB of memory each),
loaded by stock transformers and run greedily: the traces equal the interpreter's."""

from __future__ import annotations

import gc

import pytest
import torch

from qwengpu.dsl import Simulator
from test_compile_harness import compile_to, load, run_case, texts
from test_compile_tiny import PROGRAMS

pytestmark = pytest.mark.slow


def test_counter_on_the_2b_shape(tmp_path):
    compiled = compile_to("specs/counter.hdl", tmp_path, torch.bfloat16, "qwen3.5-2b")
    gc.collect()
    model = load(tmp_path)
    assert model.config.hidden_size == 2048 and model.config.intermediate_size == 6144
    expected, got = run_case(compiled, model, Simulator(compiled.design), prefix=2)
    assert texts(compiled, got) == texts(compiled, expected)


def test_tiny_on_the_2b_shape(tmp_path):
    compiled = compile_to("tests/backend_torch/specs/tiny_carried.hdl", tmp_path,
                          torch.bfloat16, "qwen3.5-2b")
    gc.collect()
    model = load(tmp_path)
    sim = Simulator(compiled.design)
    sim.load_memory("prog", PROGRAMS["fibonacci"])
    expected, got = run_case(compiled, model, sim)
    assert texts(compiled, got) == texts(compiled, expected)
