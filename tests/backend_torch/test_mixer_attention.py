"""Full attention: the blank layer is an exact no-op next to working memories; the
copy-from-the-most-recent-target gadget reads exactly (fp32 with recency, bf16 without)."""

import random

import pytest
import torch

from qwengpu.backend_torch.gadgets.attention import CopyFromKind, attention_is_noop, plan
from qwengpu.backend_torch.gadgets.memory import INIT_WINDOW, Memory, address, when
from qwengpu.backend_torch.model import FULL, LINEAR, decode_logits, prefill_logits
from qwengpu.backend_torch.residual import ResidualLayout, decode_many, deviation


def streams(model, count):
    ids = torch.arange(count)
    return {path: run(model, ids, hidden_states=True).hidden_states
            for path, run in (("prefill", prefill_logits), ("decode", decode_logits))}


def test_full_attention_layer_is_exact_noop(mixer, dtype_name):
    """Memories in the linear layers, a blank full-attention layer between: it adds exactly 0
    in both paths (and gives transformers the cache it needs)."""
    rnd = random.Random(5)
    layout = ResidualLayout(320)
    init, write = layout.alloc_bit("init"), layout.alloc_bit("we")
    addr, value, read = layout.alloc("a", 16), layout.alloc_word("v"), layout.alloc("r", 16)
    live = list(layout.groups.values())
    out = layout.alloc_word("out")
    cases = [{init: 1, write: 0, addr: 0, value: 0, read: 0}] * INIT_WINDOW + [
        {init: 0, write: rnd.randrange(2), addr: rnd.randrange(16),
         value: rnd.getrandbits(32), read: rnd.randrange(16)} for _ in range(150)]
    model = mixer.model(layout, [LINEAR, FULL, LINEAR], mixer.DTYPES[dtype_name], cases)
    Memory("m", address(addr), [value], [when(write, 1)], init).install(
        model, 0, [0], layout.rms(live), address(read), [out])
    assert attention_is_noop(model, 1)
    for path, states in streams(model, len(cases)).items():
        assert torch.equal(states[2], states[1]), path     # layer 1 changed nothing
        assert states[1][0, :, out.digits[0].start:].abs().sum() > 0


def copy_sequence(rnd, layout, count, targets_every):
    init, kind = layout.alloc_bit("init"), layout.alloc("kind", 3)
    payload = layout.alloc("payload", 16)
    live = list(layout.groups.values())
    copied = layout.alloc("copied", 16)
    cases = [{init: 1, kind: 0, payload: 0}] * INIT_WINDOW
    for _ in range(count):
        is_target = rnd.random() < 1 / targets_every
        cases.append({init: 0, kind: 1 if is_target else rnd.choice([0, 2]),
                      payload: rnd.randrange(16)})
    expected, current = [], 0
    for case in cases:
        if case[kind] == 1 or case[init]:
            current = case[payload]
        expected.append(current)
    return cases, expected, (init, kind, payload, copied), live


@pytest.mark.parametrize("gaps", [3, 40])
def test_copy_from_most_recent_target_fp32(mixer, gaps):
    rnd = random.Random(gaps)
    layout = ResidualLayout(128)
    cases, expected, (init, kind, payload, copied), live = copy_sequence(rnd, layout, 500, gaps)
    model = mixer.model(layout, [LINEAR, FULL], torch.float32, cases)
    # The <launch> tokens (init) are targets too: they give the value before the first one.
    target = when(layout.alloc("is_target", 2), 1)
    for case in cases:
        case[target.group] = int(case[kind] == 1 or case[init] == 1)
    live.append(target.group)
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(torch.stack([layout.embed(c) for c in cases]))
    gadget = CopyFromKind("copy", target, [payload], max_distance=1024)
    cost = gadget.install(model, 1, 0, layout.rms(live), [copied])
    assert (cost.layer_kind, cost.heads, cost.dims_written) == ("full_attention", 1, 16)
    want = torch.tensor(expected)
    for path, states in streams(model, len(cases)).items():
        got, margin = decode_many(copied, states[2][0])
        assert torch.equal(got, want), f"{path}: wrong at {(got != want).nonzero()[:5]}"
        worst = deviation(copied, states[2][0], want).max().item()
        assert worst < 1e-3 and margin.min() > 0.998, (path, worst)
        print(f"\ncopy fp32 gaps~{gaps} {path}: deviation {worst:.3g}")


def test_copy_unique_target_any_dtype(mixer, dtype_name):
    """Without recency (one target in context, e.g. a header token) bf16 is exact too."""
    rnd = random.Random(11)
    layout = ResidualLayout(128)
    kind, payload = layout.alloc("kind", 3), layout.alloc("payload", 16)
    live = list(layout.groups.values())
    copied = layout.alloc("copied", 16)
    cases = [{kind: 1, payload: 9}] + [{kind: rnd.choice([0, 2]), payload: rnd.randrange(16)}
                                      for _ in range(300)]
    model = mixer.model(layout, [LINEAR, FULL], mixer.DTYPES[dtype_name], cases)
    CopyFromKind("header", when(kind, 1), [payload], recency=False).install(
        model, 1, 1, layout.rms(live), [copied])
    for path, states in streams(model, len(cases)).items():
        got, margin = decode_many(copied, states[2][0])
        assert (got == 9).all(), path
        assert margin.min() > 0.98


def test_recency_needs_fp32_and_a_slow_enough_frequency(mixer):
    layout = ResidualLayout(64)
    kind, payload, out = layout.alloc("k", 2), layout.alloc("p", 16), layout.alloc("o", 16)
    model = mixer.model(layout, [LINEAR, FULL], torch.bfloat16, [{}])
    with pytest.raises(ValueError, match="fp32"):
        CopyFromKind("c", when(kind, 1), [payload]).install(model, 1, 0, 1.0, [out])
    config = model.config
    assert plan(config, 1024, True).frequency * 1024 <= 1.0
    with pytest.raises(ValueError, match="slow enough"):
        plan(config, 10 ** 9, True)
