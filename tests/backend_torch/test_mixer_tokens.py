"""The token interface: embedding, lm_head emission, tokenizer files, stock generate.

`echo` models embed every token with its *own* identity in the emission groups, so the right
next token is the input token itself: the argmax must be exact for every token of a trace
vocabulary of ~3800 tokens, with the margin measured.
"""

import random

import pytest
import torch

from qwengpu.backend_torch.gadgets.fetch import PROGRAM_KINDS, op_label
from qwengpu.backend_torch.gadgets.memory import INIT_WINDOW, fixed_address, latch
from qwengpu.backend_torch.gadgets.tokens import EMIT_MARGIN, END, LAUNCH, Field, \
    TokenInterface, TokenKind, Vocabulary, emission_margins, hex_field, onehot_field
from qwengpu.backend_torch.model import FULL, LINEAR, decode_logits, prefill_logits
from qwengpu.backend_torch.residual import ResidualLayout

# A trace vocabulary of realistic size: the program prompt kinds plus record fields.
RECORD_KINDS = (
    TokenKind("w", (onehot_field("warp", 8, "n0"),)),
    TokenKind("pc", (Field("pc", 128, ("n0", "n1")),)),
    TokenKind("act", (onehot_field("mask", 16, "n0"),)),
    TokenKind("exec", (onehot_field("mask", 16, "n0"),)),
    TokenKind("op", (onehot_field("op", 31, "op", label=op_label),)),
    TokenKind("rd", (onehot_field("reg", 16, "n0"),)),
    *(TokenKind(f"v{i}", (hex_field("byte", 2, ("n0", "n1")),)) for i in range(4)),
    *(TokenKind(f"m{i}", (hex_field("byte", 2, ("n0", "n1")),)) for i in range(4)),
    TokenKind("trap", (onehot_field("code", 8, "n0"), onehot_field("lane", 4, "n1"))),
)


def test_vocabulary_numbering():
    vocab = Vocabulary([*PROGRAM_KINDS, *RECORD_KINDS])
    assert 3000 < len(vocab) < 5000
    assert vocab.texts[:3] == ["<pad>", "<launch>", "<end>"]
    assert vocab.eos_id == 2 and vocab.launch_id == 1
    assert vocab.texts[vocab.id("o", 5, 1, 0)] == "o:mulhi.s.1.0"
    assert vocab.texts[vocab.id("v2", 0xA7)] == "v2:a7"
    assert vocab.texts[vocab.id("trap", 2, 3)] == "trap:2.3"
    with pytest.raises(ValueError, match="duplicate"):
        Vocabulary([RECORD_KINDS[0], RECORD_KINDS[0]])


def test_emission_exact_for_every_token(mixer, dtype_name):
    vocab = Vocabulary([*PROGRAM_KINDS, *RECORD_KINDS])
    layout = ResidualLayout(256)
    tokens = TokenInterface(vocab, layout)
    tokens.init_bit()
    emits = tokens.alloc_emission()
    final_rms = layout.rms([*tokens.live, *emits.values()])
    model = mixer.model(layout, [LINEAR, FULL], mixer.DTYPES[dtype_name], vocab=len(vocab),
                        heads=2)
    tokens.install_embedding(model, extra=tokens.emission_of)      # echo: next = this token
    tokens.install_lm_head(model, final_rms)
    every = torch.arange(len(vocab))
    right, margin = emission_margins(prefill_logits(model, every).logits[0], every)
    assert right.all(), f"wrong argmax for {(~right).sum().item()} tokens"
    some = torch.tensor(random.Random(3).sample(range(len(vocab)), 200))
    right_decode, margin_decode = emission_margins(decode_logits(model, some).logits[0], some)
    assert right_decode.all()
    least = min(margin.min().item(), margin_decode.min().item())
    tolerance = 1e-4 if dtype_name == "fp32" else 1.0     # bf16 logits near 100: steps of 0.5
    assert least >= EMIT_MARGIN - tolerance
    print(f"\nemission {dtype_name}: {len(vocab)} tokens, least margin {least:.4g} logits")


def test_tokenizer_files(tmp_path):
    from transformers import AutoTokenizer

    vocab = Vocabulary([*PROGRAM_KINDS, *RECORD_KINDS])
    vocab.save_tokenizer(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokenizer.json",
                                                          "tokenizer_config.json"]
    tok = AutoTokenizer.from_pretrained(tmp_path)
    assert tok.eos_token_id == vocab.eos_id and tok.eos_token == END
    assert len(tok) == len(vocab)
    ids = list(range(len(vocab)))
    text = " ".join(vocab.texts)
    assert tok(text, add_special_tokens=False)["input_ids"] == ids
    assert tok.decode(ids) == text


def test_generate_with_stock_loaders(mixer, tmp_path):
    """Embedding -> a DeltaNet delay line -> emission groups -> lm_head, saved and loaded with
    `from_pretrained` / `AutoTokenizer`, greedy `generate`: the model repeats the token two
    back (a period-3 cycle) and stops at `<end>`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    vocab = Vocabulary([TokenKind("x", (hex_field("byte", 2, ("n0", "n1")),)),
                        TokenKind("y", (onehot_field("nib", 16, "n0"),))])
    layout = ResidualLayout(192)
    tokens = TokenInterface(vocab, layout)
    init = tokens.init_bit()
    live = list(tokens.live)
    emits = tokens.alloc_emission()
    delay = latch("two_back", [(tokens.kind_group, 2), (tokens.group("n0"), 2),
                               (tokens.group("n1"), 2)], write_when=(), init=init)
    model = mixer.model(layout, [LINEAR, FULL], torch.float32, vocab=len(vocab), heads=2,
                        eos_token_id=vocab.eos_id)
    tokens.install_embedding(model)
    delay.install(model, 0, [0], layout.rms(live), fixed_address(),
                  [emits["kind"], emits["n0"], emits["n1"]])
    tokens.install_lm_head(model, layout.rms([*live, *emits.values()]))
    model.save_pretrained(tmp_path)
    vocab.save_tokenizer(tmp_path)

    loaded = AutoModelForCausalLM.from_pretrained(tmp_path)
    tok = AutoTokenizer.from_pretrained(tmp_path)
    prompt = " ".join([LAUNCH] * INIT_WINDOW + ["x:3c", "y:7", "x:00"])
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    out = loaded.generate(ids, max_new_tokens=7, do_sample=False)
    assert tok.decode(out[0, ids.shape[1]:]) == "x:3c y:7 x:00 x:3c y:7 x:00 x:3c"
    prompt = " ".join([LAUNCH] * INIT_WINDOW + ["y:1", END, "x:ff"])
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    out = loaded.generate(ids, max_new_tokens=7, do_sample=False)
    assert tok.decode(out[0, ids.shape[1]:]) == "y:1 <end>"
