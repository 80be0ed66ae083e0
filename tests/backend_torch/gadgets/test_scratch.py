"""The scratch (`gadgets/scratch.py`) on stock transformers: a head of three slots, written
by tokens that name a slot and read on every token, over 300 seeded random tokens, in fp32
and bf16, in one forward (chunked prefill) and token by token (recurrent decode).

As a launch prompt does (qwengpu/trace/prompt.py), the sequence starts with `<bos>` (which
spreads one write over every slot) and then writes every slot once (the prompt's init
tokens) before any read counts.  The expected reads come from a Python dict of slots: a
token naming slot s writes its byte digit there (the write comes before the read within a
token); every other token leaves the slots alone."""

from __future__ import annotations

import random

import torch

from qwengpu.backend_torch.gadgets.scratch import scratch
from qwengpu.backend_torch.model import FULL, LINEAR, decode_logits, prefill_logits
from qwengpu.backend_torch.residual import ResidualLayout, decode_many, deviation

SLOTS = 3


def test_slots_hold_the_last_byte_written(mixer, dtype_name):
    rng = random.Random(7)
    layout = ResidualLayout(96)
    slot, bos, lo = layout.alloc("slot", SLOTS + 1), layout.alloc_bit("bos"), \
        layout.alloc_digit("lo")
    live = list(layout.groups.values())
    outs = [layout.alloc_digit(f"held{s}") for s in range(SLOTS)]
    groups = {group.name: group for group in layout.groups.values()}
    cases = [{slot: SLOTS, bos: 1, lo: 0}]                   # <bos>
    cases += [{slot: s, bos: 0, lo: 0} for s in range(SLOTS)]  # every slot written once
    start = len(cases)
    held, expected = [0] * SLOTS, [[] for _ in range(SLOTS)]
    for _ in range(300):
        named = rng.choice([*range(SLOTS), SLOTS, SLOTS])       # a third name no slot
        case = {slot: named, bos: 0, lo: rng.randrange(16)}
        if named < SLOTS:
            held[named] = case[lo]
        cases.append(case)
        for s in range(SLOTS):
            expected[s].append(held[s])
    model = mixer.model(layout, [LINEAR, FULL], mixer.DTYPES[dtype_name], cases)
    scratch(model.model.layers[0].linear_attn, [0], layout.rms(live), "scratch", slot, bos,
            [[(s, [("lo", 16, f"held{s}")]) for s in range(SLOTS)]], groups)
    ids = torch.arange(len(cases))
    for path, run in (("prefill", prefill_logits), ("decode", decode_logits)):
        stream = run(model, ids, hidden_states=True).hidden_states[1][0][start:]
        for s, out in enumerate(outs):
            values, margins = decode_many(out, stream)
            want = torch.tensor(expected[s])
            wrong = (values != want).nonzero().flatten()
            assert not len(wrong), f"{path} {dtype_name} slot {s}: token {wrong[0].item()}"
            bounds = mixer.BOUNDS[dtype_name]
            assert deviation(out, stream, want).max() <= bounds["max_deviation"]
            assert margins.min() >= bounds["min_margin"]
