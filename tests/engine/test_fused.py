"""The fused layers (qwengpu/engine/fused.py) against the layer-by-layer loop and the judge.

A checkpoint shaped like a compiled machine (sparse matrices, Gated DeltaNet mixers, the
full-attention layers dead): the engine runs it in one compiled call per forward, and must
give the loop's logits to the bit, after a chunked prefill, token by token, and in a batch
of rows on two threads; its greedy ids must be stock transformers'.  A checkpoint with live
attention or dense matrices keeps the loop.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qwengpu.engine import SparseEngine
from qwengpu.engine.weights import read_weights
from random_checkpoints import TOLERANCE, engine_logits, prompt_of, random_model, save, \
    stock_generate, stock_logits


def sparse_model(seed: int = 5):
    """A random Qwen3.5 whose matrices keep a tenth of their weights (so the engine keeps
    them as CSR) and whose attention layers write nothing (o_proj zero)."""
    model = random_model(seed)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.dim() == 2 and "embed" not in name and "lm_head" not in name:
                keep = torch.rand(parameter.shape, generator=generator) < 0.1
                parameter.mul_(keep)
            if "self_attn.o_proj" in name:
                parameter.zero_()
    return model


@pytest.fixture(scope="module")
def sparse_dir(tmp_path_factory):
    return save(sparse_model(), tmp_path_factory.mktemp("sparse_qwen"))


def bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)


def test_a_sparse_deltanet_checkpoint_is_fused(sparse_dir):
    assert SparseEngine.load(sparse_dir).fused is not None
    assert SparseEngine.load(sparse_dir, fuse=False).fused is None


def test_a_run_of_sparse_layers_before_dense_ones_is_fused(tmp_path):
    """Sparse layers in front of a dense one (a spliced checkpoint's shape): the run is one
    fused span, the dense layer runs in the loop; the logits are the loop's to the bit and
    the ids, in a batch of rows on one and on two threads, stock generate()'s."""
    model = sparse_model(6)
    with torch.no_grad():                     # the last layer's MLP dense again
        for parameter in model.model.layers[3].mlp.parameters():
            parameter.copy_(torch.randn(parameter.shape,
                                        generator=torch.Generator().manual_seed(7)) * 0.05)
    directory = save(model, tmp_path / "sparse_then_dense")
    engine = SparseEngine.load(directory)
    assert [(span.first, span.last, span.fused is not None) for span in engine.spans] == \
        [(0, 3, True), (3, 4, False)] and engine.fused is None
    ids = prompt_of(10, 20)
    loop = engine_logits(SparseEngine.load(directory, fuse=False), ids, 4)
    assert np.array_equal(bits(engine_logits(engine, ids, 4)), bits(loop))
    prompts = [prompt_of(11, 6), prompt_of(12, 9), prompt_of(13, 4)]
    want = [stock_generate(model, prompt, 20) for prompt in prompts]
    assert engine.generate(prompts, 20) == want
    assert engine.generate(prompts, 20, threads=2) == want


@pytest.mark.parametrize("chunk", [None, 1, 5])
def test_fused_logits_are_the_loops_to_the_bit(sparse_dir, chunk):
    weights = read_weights(sparse_dir)
    ids = prompt_of(7, 30)
    fused = engine_logits(SparseEngine(weights), ids, chunk)
    loop = engine_logits(SparseEngine(weights, fuse=False), ids, chunk)
    assert np.array_equal(bits(fused), bits(loop))
    want = stock_logits(sparse_model(), ids).numpy()
    assert np.abs(fused - want).max() < TOLERANCE


def test_fused_rows_and_threads_write_the_judges_ids(sparse_dir):
    """Two rows of different prompts, on one and on two threads: each row's ids are those
    stock generate() writes for it alone."""
    model = sparse_model()
    prompts = [prompt_of(8, 9), prompt_of(9, 14)]
    want = [stock_generate(model, prompt, 30) for prompt in prompts]
    engine = SparseEngine.load(sparse_dir)
    assert engine.generate(prompts, 30) == want
    assert engine.generate(prompts, 30, threads=2) == want


def test_live_attention_or_dense_matrices_keep_the_loop(tmp_path):
    """The random checkpoint of the other engine tests: attention is live and its matrices
    are dense, which `run_layers` does not compute."""
    engine = SparseEngine.load(save(random_model(), tmp_path / "dense"))
    assert engine.fused is None

