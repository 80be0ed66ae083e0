"""The residual layout (`backend_torch/residual.py`): allocation, encodings, decoding with
margins, and the norm ledger checked against the RMSNorm that a real Qwen3.5 sublayer
applies."""

import math

import pytest
import torch

from qwengpu.backend_torch.gadgets.core import MlpWriter, value_of
from qwengpu.backend_torch.model import FULL, LINEAR, blank_model, make_config, prefill_logits
from qwengpu.backend_torch.residual import ResidualLayout, decode, decode_many, decode_word, \
    deviation, onehot, residual_rms, word_digits
from qwengpu.errors import CapacityError


def test_allocation_first_fit_and_release():
    layout = ResidualLayout(64)
    a = layout.alloc_digit("a")
    bit = layout.alloc_bit("bit")
    assert (a.start, a.size, bit.start) == (1, 16, 17)
    with pytest.raises(ValueError, match="twice"):
        layout.alloc_bit("bit")
    layout.release(a)
    again = layout.alloc("small", 3)
    assert again.start == 1                       # first fit reuses the released run
    with pytest.raises(CapacityError, match="residual full"):
        layout.alloc("huge", 60)
    assert layout.used_dims == 1 + 3 + 2


def test_word_encoding_round_trip():
    layout = ResidualLayout(300)
    word = layout.alloc_word("w")
    assert word.width_bits == 32 and len(word.digits) == 8
    assert word_digits(0x89ABCDEF) == [0xF, 0xE, 0xD, 0xC, 0xB, 0xA, 0x9, 0x8]
    for value in (0, 1, 0xDEADBEEF, 0xFFFFFFFF, -1):
        vector = layout.embed({word: value})
        assert vector[0] == 1.0 and vector.sum() == 9.0
        assert decode_word(word, vector) == (value & 0xFFFFFFFF, 1.0)
    many = layout.embed_many({word: [5, 0xFFFFFFFF]})
    assert torch.equal(many[1], layout.embed({word: 0xFFFFFFFF}))


def test_decode_margin_and_deviation():
    layout = ResidualLayout(32)
    digit = layout.alloc_digit("d")
    vector = layout.embed({digit: 9})
    vector[digit.dim(3)] = 0.25
    vector[digit.dim(9)] = 0.9
    assert decode(digit, vector) == (9, pytest.approx(0.65))
    assert deviation(digit, vector.unsqueeze(0), [9]).item() == pytest.approx(0.25)
    values, margins = decode_many(digit, torch.stack([vector, layout.embed({digit: 2})]))
    assert values.tolist() == [9, 2] and margins[1] == 1.0
    assert torch.equal(onehot(digit, 4), torch.eye(16)[4])


def test_ledger_matches_the_model_rms():
    """`layout.rms(live)` equals the rms the MLP's RMSNorm divides by (read by a hook), and
    a writer folding it reads the residual exactly: a linear unit copies a digit's value."""
    layout = ResidualLayout(96)
    word, bit = layout.alloc_word("w", 4), layout.alloc_bit("b")
    copy = layout.alloc_analog("copy", 1.0 / 16)
    config = make_config(2, 96, 64, [LINEAR, FULL], 3, linear_num_key_heads=1,
                         linear_num_value_heads=1, linear_key_head_dim=16,
                         linear_value_head_dim=16, num_attention_heads=1,
                         num_key_value_heads=1, head_dim=16)
    model = blank_model(config)
    cases = [{word: 0x1234, bit: 1}, {word: 0xFFFF, bit: 0}, {word: 0, bit: 1}]
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(torch.stack([layout.embed(c) for c in cases]))
    rms = layout.rms([word, bit])
    assert rms == pytest.approx(residual_rms(1 + 4 + 1, 96))
    assert rms == pytest.approx(math.sqrt(6 / 96 + 1e-6))
    seen = []
    norm = model.model.layers[0].post_attention_layernorm
    hook = norm.register_forward_hook(lambda _m, inputs, _o: seen.append(inputs[0]))
    writer = MlpWriter(model.model.layers[0].mlp, range(64), rms)
    writer.linear(value_of(word.digits[1]), {copy.start: copy.scale})
    writer.flush()
    run = prefill_logits(model, torch.tensor([[0, 1, 2]]), hidden_states=True)
    hook.remove()
    measured = seen[0].pow(2).mean(-1).add(1e-6).sqrt()
    assert torch.allclose(measured, torch.full_like(measured, rms), rtol=1e-6)
    copied = run.hidden_states[1][0, :, copy.start] / copy.scale
    assert torch.allclose(copied, torch.tensor([3.0, 15.0, 0.0]), atol=1e-5)
