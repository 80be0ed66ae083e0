"""The blank model: its config, that every parameter and buffer is deterministic, that every
layer is an exact no-op on the residual in both paths and dtypes, and the conv tap order."""

import pytest
import torch
from transformers import Qwen3_5ForCausalLM
from transformers.models.qwen3_5 import modeling_qwen3_5 as qwen

from qwengpu.backend_torch.model import FULL, LINEAR, blank_model, decode_logits, layer, \
    make_config, prefill_logits


def tiny_config(vocab=40):
    return make_config(4, 64, 96, [LINEAR, FULL, LINEAR, LINEAR], vocab,
                       linear_num_key_heads=2, linear_num_value_heads=2,
                       linear_key_head_dim=16, linear_value_head_dim=16,
                       num_attention_heads=2, num_key_value_heads=1, head_dim=32)


def test_config_fields():
    config = tiny_config()
    assert config.model_type == "qwen3_5_text"
    assert config.tie_word_embeddings is False
    assert config.layer_types == [LINEAR, FULL, LINEAR, LINEAR]
    assert config.rope_parameters["partial_rotary_factor"] == 0.25
    assert config.rope_parameters["rope_theta"] == 1e7
    assert config.linear_conv_kernel_dim == 4
    with pytest.raises(ValueError, match="full_attention"):
        make_config(2, 64, 96, [LINEAR, LINEAR], 10)
    with pytest.raises(ValueError, match="layer types"):
        make_config(3, 64, 96, [LINEAR, FULL], 10)


def test_qwen35_2b_shape_builds_on_meta():
    """The real target's shape is accepted (built on meta: no memory)."""
    config = make_config(45, 2048, 6144, [LINEAR, LINEAR, LINEAR, FULL] * 11 + [LINEAR],
                         248320)
    with torch.device("meta"):
        model = Qwen3_5ForCausalLM(config)
    assert model.model.layers[3].self_attn.q_proj.weight.shape == (2 * 8 * 256, 2048)
    assert model.model.layers[0].linear_attn.in_proj_qkv.weight.shape == (2 * 2048 + 2048, 2048)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_blank_parameters(dtype):
    model = blank_model(tiny_config(), dtype)
    for name, param in model.named_parameters():
        assert param.dtype == dtype, name
        assert torch.isfinite(param).all(), name
        if name.endswith("A_log"):
            assert (param == -1e4).all(), name
        elif name.endswith("linear_attn.norm.weight"):
            assert (param == 1).all(), name
        elif name.endswith("conv1d.weight"):
            assert (param[..., -1] == 1).all() and (param[..., :-1] == 0).all(), name
        else:
            assert (param == 0).all(), name           # projections, norms, dt_bias, embeddings
    assert layer(model, 1).self_attn is not None and layer(model, 0).linear_attn is not None


def test_blank_is_deterministic():
    first, second = blank_model(tiny_config()), blank_model(tiny_config())
    state_a, state_b = first.state_dict(), second.state_dict()
    assert state_a.keys() == state_b.keys()
    for key in state_a:
        assert torch.equal(state_a[key], state_b[key]), key
    for (name, a), (_, b) in zip(first.named_buffers(), second.named_buffers()):
        assert torch.equal(a, b), name
    stock = Qwen3_5ForCausalLM(tiny_config())        # the rotary buffers match stock ones
    assert torch.equal(stock.model.rotary_emb.inv_freq, first.model.rotary_emb.inv_freq)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_every_layer_is_a_noop(dtype):
    model = blank_model(tiny_config(), dtype)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(torch.randn(40, 64, generator=generator))
    ids = torch.randint(0, 40, (3, 11), generator=generator)
    embedded = model.model.embed_tokens(ids)
    for run in (prefill_logits(model, ids, hidden_states=True),
                decode_logits(model, ids, hidden_states=True),
                decode_logits(model, ids, hidden_states=True, prefix=7)):
        assert len(run.hidden_states) == 5
        for state in run.hidden_states:
            assert torch.equal(state, embedded)
        assert torch.equal(run.logits, torch.zeros_like(run.logits))
        assert run.logits.shape == (3, 11, 40)


def test_last_logits_only():
    model = blank_model(tiny_config())
    ids = torch.arange(10).reshape(2, 5)
    assert prefill_logits(model, ids, last_logits_only=True).logits.shape == (2, 1, 40)
    assert decode_logits(model, ids, last_logits_only=True).logits.shape == (2, 1, 40)
    for prefix in (3, 5, 9):                       # 9: longer than the ids, all in one forward
        assert decode_logits(model, ids, last_logits_only=True,
                             prefix=prefix).logits.shape == (2, 1, 40)


def test_conv_tap_is_the_current_token():
    """The blank conv passes the current token's channels through unchanged, in the chunked
    function and in the one-token update used by decoding."""
    model = blank_model(tiny_config())
    mixer = layer(model, 0).linear_attn
    weight = mixer.conv1d.weight.squeeze(1)
    x = torch.randn(1, weight.shape[0], 7, generator=torch.Generator().manual_seed(1))
    out = qwen.causal_conv1d_fn(x, weight, None, activation=None)
    assert torch.equal(out, x)
    state = torch.randn(1, weight.shape[0], 4, generator=torch.Generator().manual_seed(2))
    step = qwen.causal_conv1d_update(x[:, :, :1], state, weight, None, activation=None)
    assert torch.equal(step, x[:, :, :1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_save_and_load_round_trip(tmp_path, dtype):
    """What `from_pretrained` loads is the built model: every tensor, the rotary buffers
    (float32 in both), and the residual stream."""
    from transformers import AutoModelForCausalLM

    model = blank_model(tiny_config(), dtype)
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(torch.eye(40, 64))
        layer(model, 0).mlp.up_proj.weight[0, 0] = 0.5
    model.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=dtype)
    assert type(loaded) is Qwen3_5ForCausalLM
    ours, theirs = model.state_dict(), loaded.state_dict()
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key
    assert loaded.model.rotary_emb.inv_freq.dtype == torch.float32
    assert torch.equal(loaded.model.rotary_emb.inv_freq, model.model.rotary_emb.inv_freq)
    ids = torch.arange(12).reshape(2, 6)
    assert torch.equal(prefill_logits(loaded, ids, hidden_states=True).final_residual,
                       prefill_logits(model, ids, hidden_states=True).final_residual)
