"""The real shape: specs/counter.hdl and the tiny register machine compiled into the
Qwen3.5-2B target (hidden 2048, intermediate 6144, 16 DeltaNet heads, 45 layers with every
fourth full attention), written in bf16 (5.2 GB, about 2 minutes and 6 GB of memory each),
and the whole QwenGPU in it with binary values (fp32, 10.5 GB), loaded by stock
transformers and run greedily: the traces and records equal the interpreter's, and the
sparse engine writes the same ids (here and in every compile test, through run_case)."""

from __future__ import annotations

import gc

import pytest
import torch

from qwengpu.dsl import Simulator
from compile_helpers import PROGRAMS, compile_to, load, run_case, texts

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
    from single_step_helpers import expected_ids, random_state
    from qwengpu.trace.prompt import state_prompt

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
    """`hdlc compile specs/qwengpu.hdl --target qwen3.5-2b`, then a kernel of the corpus
    written by stock transformers (`generate()`, the judge: 10 records, 241 tokens after a
    123-token prompt) and by the sparse engine: the same ids,
    the interpreter's trace encoded, and the kernel's store past the end of memory traps as
    its independent expected.json says.  Then more kernels on the engine alone with
    `hdlc run --backend model --check` (every record checked against the interpreter, the
    buffers against expected.json), among them two of floats: the FPU's add and the
    loader's multiply."""
    import json
    from pathlib import Path

    from qwengpu.cli import main
    from qwengpu.runtime.launch import load_launch, machine_limits, run_launch_sim
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.model_backend import generate_greedy, load_checkpoint
    from qwengpu.runtime.prompt import build_prompt

    examples = Path(__file__).resolve().parents[2] / "examples"
    assert main(["compile", "specs/qwengpu.hdl", "--target", "qwen3.5-2b",
                 "-o", str(tmp_path)]) == 0
    gc.collect()
    machine = checkpoint_machine(tmp_path)
    launch = load_launch(examples / "out_of_bounds" / "launch.json", machine_limits(machine))
    written = {}
    for engine in ("transformers", "sparse"):
        model, protocol = load_checkpoint(tmp_path, "cpu", engine)
        trace = protocol.encode_records(run_launch_sim(launch, machine=machine).records)
        prompt = build_prompt(launch, protocol, machine)
        written[engine], = generate_greedy(model, protocol, [prompt], 12)
        del model
        gc.collect()
    assert written["sparse"] == written["transformers"] == trace
    kernels = ["out_of_bounds", "vector_add", "multi_warp", "unseen/gcd", "float_vector_add",
               "float_saxpy"]
    capsys.readouterr()
    code = main(["run", *(str(examples / kernel / "launch.json") for kernel in kernels),
                 "--backend", "model", "--model", str(tmp_path), "--check", "--json"])
    out, err = capsys.readouterr()
    assert code == 1 and "differs" not in err, err      # 1: out_of_bounds traps
    results = [json.loads(line) for line in out.splitlines()]
    for kernel, result in zip(kernels, results):
        expected = json.loads((examples / kernel / "expected.json").read_text())
        if "trap" in expected:
            assert result["trap"]["kind"].startswith(expected["trap"]), kernel
            assert result["records"] == 10
        else:
            assert result["trap"] is None and result["buffers"] == expected["buffers"], kernel
