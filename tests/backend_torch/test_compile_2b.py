"""The real shape: specs/counter.hdl and the tiny register machine compiled into the
Qwen3.5-2B target (hidden 2048, intermediate 6144, 16 DeltaNet heads, 45 layers with every
fourth full attention), written in bf16 (5.2 GB, about 2 minutes and 6 GB of memory each),
and the whole QwenGPU in it with binary values (fp32, 10.5 GB), loaded by stock
transformers and run greedily: the traces and records equal the interpreter's."""

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


def test_the_whole_qwengpu_on_the_2b_shape(tmp_path):
    """Issue #4's checkpoint: specs/qwengpu.hdl (4 lanes, 8 warps) compiled into the 2B shape
    with binary values, float32 (10.5 GB, about a minute to write; each step below is one
    prefill of about 4,100 tokens, about 4 minutes on 2 cores). Random machine states, put
    into the model through the prompt; the interpreter's record (and the token after it)
    is the model's greedy choice at every position, by the lm_head's full margin."""
    import random

    from qwengpu.backend_torch.model import prefill_logits
    from qwengpu.backend_torch.single_step import expected_ids, random_state
    from qwengpu.runtime.prompt import state_prompt

    compiled = compile_to("specs/qwengpu.hdl", tmp_path, torch.float32, "qwen3.5-2b",
                          encoding="binary")
    gc.collect()
    model = load(tmp_path)
    config = model.config
    assert (config.hidden_size, config.intermediate_size, config.num_hidden_layers,
            config.linear_num_value_heads) == (2048, 6144, 45, 16)
    for seed in range(2):
        state = random_state(compiled.design, random.Random(seed))
        want = expected_ids(compiled.protocol, compiled.design, state)
        prompt = state_prompt(compiled.protocol, state)
        logits = prefill_logits(model, prompt + want).logits[0, len(prompt) - 1:-1].float()
        target = torch.tensor(want)
        assert torch.equal(logits.argmax(1), target), seed
        right = logits.gather(1, target[:, None])[:, 0]
        other = logits.scatter(1, target[:, None], float("-inf")).amax(1)
        assert (right - other).min() >= 8, seed


def test_a_cuda_kernel_inside_the_2b_model(tmp_path, capsys):
    """`hdlc compile specs/qwengpu.hdl --target qwen3.5-2b` and `hdlc run --backend model
    --check` on an example of the corpus: stock transformers writes the whole launch (10
    records, 541 tokens after a 1,163-token prompt; about 6 minutes on 2 cores), the
    interpreter agrees record for record, and the kernel's store past the end of memory
    traps as its independent expected.json says."""
    import json
    from pathlib import Path

    from qwengpu.cli import main

    example = Path(__file__).resolve().parents[2] / "examples" / "out_of_bounds"
    assert main(["compile", "specs/qwengpu.hdl", "--target", "qwen3.5-2b",
                 "-o", str(tmp_path)]) == 0
    gc.collect()
    capsys.readouterr()
    code = main(["run", str(example / "launch.json"), "--backend", "model",
                 "--model", str(tmp_path), "--check", "--json"])
    out, err = capsys.readouterr()
    result = json.loads(out)
    expected = json.loads((example / "expected.json").read_text())
    assert code == 1 and "differs" not in err, err      # 1: the kernel traps
    assert result["trap"]["kind"].startswith(expected["trap"])
    assert result["records"] == 10 and result["tokens"] > 0
