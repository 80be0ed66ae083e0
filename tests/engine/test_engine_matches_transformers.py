"""The sparse engine against stock transformers on random Qwen3.5 checkpoints.

Random weights everywhere (see tests/random_checkpoints.py): the engine's logits must equal stock
transformers' to float32 rounding after a prefill (transformers' chunked DeltaNet) and token
by token (its recurrent path), and greedy decoding must write the same ids.  Zeroed heads
and units (what the engine skips) must not change that; tied embeddings, sharded files and
the multimodal layout are read as the text model; rows of a batch are independent to the
bit; a prefix given as prefill goes on as decoding did.  (Compiled checkpoints are held to
stock `generate` by every compile test: tests/compile_helpers.run_case.)
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qwengpu.engine import SparseEngine
from qwengpu.engine.engine import Workers
from qwengpu.engine.weights import DeltaNetMixer, read_weights
from random_checkpoints import TOLERANCE, as_multimodal, engine_logits, prompt_of, \
    random_model, save, stock_generate, stock_logits

@pytest.fixture(scope="module")
def random_dir(tmp_path_factory):
    return save(random_model(), tmp_path_factory.mktemp("random_qwen"))


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_logits_equal_transformers_prefill(random_dir, chunk):
    """Whole prompt, token by token, and chunks of 7 (chunk boundaries inside the conv
    window) all give transformers' one-pass logits."""
    model = random_model()
    ids = prompt_of(1, 40)
    want = stock_logits(model, ids).numpy()
    got = engine_logits(SparseEngine.load(random_dir), ids, chunk)
    assert np.abs(got - want).max() < TOLERANCE
    assert (got.argmax(1) == want.argmax(1)).all()


def test_logits_equal_transformers_decode(random_dir):
    """transformers token by token through its cache (recurrent DeltaNet, conv update)."""
    model = random_model()
    ids = prompt_of(2, 24)
    cache, want = None, []
    with torch.no_grad():
        for token in ids:
            output = model(torch.tensor([[token]]), cache=cache, use_cache=True)
            cache = output.cache
            want.append(output.logits[0, -1].numpy())
    got = engine_logits(SparseEngine.load(random_dir), ids, chunk=1)
    assert np.abs(got - np.stack(want)).max() < TOLERANCE


def test_greedy_ids_equal_generate(random_dir):
    model = random_model()
    prompt = prompt_of(3, 12)
    want = stock_generate(model, prompt, 40)
    engine = SparseEngine.load(random_dir)
    assert engine.generate([prompt], 40) == [want]
    assert engine.generate([prompt], 40, threads=2) == [want]


def test_a_prefix_given_as_prefill_goes_on_the_same(random_dir):
    engine = SparseEngine.load(random_dir)
    prompt = prompt_of(4, 10)
    written, = engine.generate([prompt], 30)
    for cut in (1, 13, 29):
        rest, = engine.generate([prompt + written[:cut]], 30 - cut, prefill_chunk=5)
        assert rest == written[cut:], cut


def test_rows_of_a_batch_are_independent(random_dir):
    """A row's logits do not depend on the other rows, to the bit, whatever the batch
    (the batched kernels and the one-column kernels take the same sums in the same order),
    and a batch's ids are each row's ids alone."""
    engine = SparseEngine.load(random_dir)
    prompts = [prompt_of(10 + row, 5 + 3 * row) for row in range(5)]
    alone = [engine.generate([prompt], 25) for prompt in prompts]
    together = engine.generate(prompts, 25)
    assert together == [ids for ids, in alone]
    assert engine.generate(prompts[::-1], 25, threads=2) == [ids for ids, in alone][::-1]
    state_alone, state_batch = engine.new_state(1), engine.new_state(5)
    for row, prompt in enumerate(prompts):
        engine.forward(state_batch, prompt, [row] * len(prompt), [])
    engine.forward(state_alone, prompts[2], [0] * len(prompts[2]), [])
    step = [prompt[-1] for prompt in prompts]
    batch = engine.forward(state_batch, step, range(5), range(5), logits=True)
    single = engine.forward(state_alone, step[2:3], [0], [0], logits=True)
    assert np.array_equal(batch[:, 2], single[:, 0])
    workers, state_shared = Workers(3), engine.new_state(5)
    for row, prompt in enumerate(prompts):
        engine.forward(state_shared, prompt, [row] * len(prompt), [], workers=workers)
    shared = engine.forward(state_shared, step, range(5), range(5), logits=True,
                            workers=workers)               # panels and rows over 3 threads
    workers.shutdown()
    assert np.array_equal(shared, batch)


def test_zero_heads_and_units_are_skipped_exactly(tmp_path):
    """Zeroed out_proj columns of a DeltaNet head, o_proj columns of an attention head, down
    columns of MLP units and a whole MLP: the engine keeps none of them, and its logits are
    still transformers'."""
    model = random_model(seed=5)
    with torch.no_grad():
        layers = model.model.layers
        layers[0].linear_attn.out_proj.weight[:, 12:24] = 0         # value head 1 of 4
        layers[1].self_attn.o_proj.weight[:, 16:32] = 0             # query head 1 of 4
        layers[2].mlp.down_proj.weight[:, :50] = 0                  # 50 of 96 units
        layers[3].mlp.down_proj.weight.zero_()                      # the whole MLP
        layers[2].linear_attn.in_proj_qkv.weight[16:24] = 0         # key head 0's k rows
    engine = SparseEngine.load(save(model, tmp_path))
    kept = engine.weights.layers
    assert kept[0].mixer.value_heads == [0, 2, 3]
    assert kept[1].mixer.query_heads == [0, 2, 3]
    assert len(kept[2].mlp.units) == 46 and kept[3].mlp is None
    assert kept[2].mixer.value_heads == [2, 3]                      # key head 0 serves 0, 1
    ids = prompt_of(6, 30)
    want = stock_logits(model, ids).numpy()
    assert np.abs(engine_logits(engine, ids) - want).max() < TOLERANCE


@pytest.mark.parametrize("form", ["tied", "sharded", "multimodal"])
def test_checkpoint_forms(tmp_path, form):
    """Tied embeddings (no lm_head tensor), sharded safetensors with an index, and the
    released multimodal layout (a text_config, tensors under model.language_model.) all run
    as the text model does."""
    model = random_model(seed=7, tie_word_embeddings=form == "tied")
    text_dir = save(model, tmp_path / "text", **({"max_shard_size": "40KB"}
                                                  if form == "sharded" else {}))
    if form == "sharded":
        assert (text_dir / "model.safetensors.index.json").is_file()
    directory = as_multimodal(text_dir, tmp_path / "mm") if form == "multimodal" else text_dir
    prompt = prompt_of(8, 9)
    assert SparseEngine.load(directory).generate([prompt], 20) == \
        [stock_generate(model, prompt, 20)]


def test_the_state_keeps_only_what_can_be_nonzero(tmp_path):
    """Zero rows of k and v channels (a DeltaNet layer's dead key and value dims): the state
    keeps only the live rows and columns (`weights.live_state`), and the logits are those of
    a state holding every dim, to the bit, in a prefill and token by token, batched or not;
    both are transformers'."""
    model = random_model(seed=9)
    key_dim, value_dim = 2 * 8, 4 * 12
    with torch.no_grad():
        qkv = model.model.layers[0].linear_attn.in_proj_qkv.weight
        qkv[key_dim + 1:key_dim + 4] = 0                 # k dims 1..3 of key head 0
        qkv[key_dim + 8 + 5] = 0                          # k dim 5 of key head 1
        qkv[2 * key_dim + 2:2 * key_dim + 9] = 0          # v dims 2..8 of value head 0
        qkv[2 * key_dim + 3 * 12 + 11] = 0                # v dim 11 of value head 3
        qkv[:3] = 0                                       # q dims 0..2 (the query's rows)
    directory = save(model, tmp_path)
    compact = SparseEngine.load(directory)
    mixer = compact.weights.layers[0].mixer
    assert mixer.state_row_count.tolist() == [5, 5, 7, 7]
    assert mixer.state_column_count.tolist() == [5, 12, 12, 11]
    assert mixer.state_rows[0, :5].tolist() == [0, 4, 5, 6, 7]
    assert mixer.state_shape == (4, 7, 12)
    weights = read_weights(directory)
    for layer in weights.layers:                         # every row and column kept
        if isinstance(layer.mixer, DeltaNetMixer):
            heads, dk, dv = (len(layer.mixer.value_heads), layer.mixer.key_head_dim,
                             layer.mixer.value_head_dim)
            layer.mixer.state_rows = np.tile(np.arange(dk), (heads, 1))
            layer.mixer.state_row_count = np.full(heads, dk)
            layer.mixer.state_columns = np.tile(np.arange(dv), (heads, 1))
            layer.mixer.state_column_count = np.full(heads, dv)
    whole = SparseEngine(weights)
    assert whole.new_state(1).memory[0].shape == (1, 4, 8, 12)
    prompts = [prompt_of(20 + row, 12 + 5 * row) for row in range(3)]
    for chunk in (None, 1):
        got = engine_logits(compact, prompts[0], chunk)
        assert np.array_equal(got, engine_logits(whole, prompts[0], chunk))
    assert np.abs(got - stock_logits(model, prompts[0]).numpy()).max() < TOLERANCE
    assert compact.generate(prompts, 20) == whole.generate(prompts, 20)
