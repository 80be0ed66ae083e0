"""The sparse engine's torch version (`TorchSparseEngine`, what runs on a GPU), held here on
the CPU to stock transformers and to the compiled-kernel engine: logits after a prefill and
token by token, greedy ids, rows of a batch, a compiled machine's whole trace.  No GPU is
needed; on a CUDA machine `hdlc run --device cuda` runs the same code there."""

from __future__ import annotations

import numpy as np
import pytest

from qwengpu.engine import SparseEngine
from qwengpu.engine.torch_engine import TorchSparseEngine
from random_checkpoints import TOLERANCE, engine_logits, prompt_of, random_model, save, \
    stock_generate, stock_logits


@pytest.fixture(scope="module")
def random_dir(tmp_path_factory):
    return save(random_model(), tmp_path_factory.mktemp("random_qwen"))


@pytest.mark.parametrize("chunk", [None, 1])
def test_logits_equal_transformers(random_dir, chunk):
    ids = prompt_of(1, 30)
    want = stock_logits(random_model(), ids).numpy()
    got = engine_logits(TorchSparseEngine.load(random_dir), ids, chunk)
    assert np.abs(got - want).max() < TOLERANCE


def test_ids_equal_generate_and_the_cpu_engine(random_dir):
    prompts = [prompt_of(seed, 4 + seed) for seed in range(4)]
    engine = TorchSparseEngine.load(random_dir)
    together = engine.generate(prompts, 25)
    assert together == SparseEngine.load(random_dir).generate(prompts, 25)
    assert together == [stock_generate(random_model(), prompt, 25) for prompt in prompts]
    assert together[1:2] == engine.generate(prompts[1:2], 25)


def test_a_compiled_machine_on_the_torch_engine(tmp_path):
    """specs/counter.hdl compiled: the torch engine writes the interpreter's whole trace."""
    from compile_helpers import compile_to, expected_trace, simulator_state
    from qwengpu.dsl import Simulator
    from qwengpu.trace.prompt import state_prompt

    compiled = compile_to("specs/counter.hdl", tmp_path)
    sim = Simulator(compiled.design)
    prompt = state_prompt(compiled.protocol, simulator_state(sim))
    expected = expected_trace(compiled, sim)
    written, = TorchSparseEngine.load(tmp_path).generate([prompt], len(expected),
                                                         compiled.protocol.eos_id)
    assert written == expected


def test_the_cli_runs_it_on_a_device(tmp_path, capsys):
    """`hdlc generate --device cpu` with --engine sparse is the torch version."""
    from qwengpu.cli import main
    from qwengpu.runtime.model_backend import load_checkpoint

    from compile_helpers import compile_to

    compile_to("specs/counter.hdl", tmp_path)
    assert type(load_checkpoint(tmp_path, None)[0]) is SparseEngine
    assert type(load_checkpoint(tmp_path, "cpu:0")[0]) is TorchSparseEngine
    capsys.readouterr()
    assert main(["generate", "specs/counter.hdl", "--model", str(tmp_path), "--check",
                 "--device", "cpu:0"]) == 0
    assert "every record checked" in capsys.readouterr().out
