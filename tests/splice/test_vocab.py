"""The spliced tokenizer (qwengpu/splice/vocab.py): machine tokens at offset + m, every text
tokenized exactly as by the base, and the bases it must refuse.

The bases are small byte-level BPE tokenizers trained here with the `tokenizers` library, one
with Qwen3.5's pre-tokenizer (regex Split, then ByteLevel without its own regex) and one with
GPT-2's (ByteLevel with its regex); the expectations are the base tokenizer's own ids.
"""

from __future__ import annotations

import json
import random
import shutil

import pytest
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import AutoTokenizer

from qwengpu.errors import UserError
from qwengpu.splice.vocab import (Placement, extend_tokenizer, machine_spelling,
                                  place_machine_tokens, tokenizer_extent)

# transformers' Qwen3_5Tokenizer.PRETOKENIZE_REGEX
QWEN_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|"""
              r""" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TRAINING_TEXT = """\
A graphics processor runs many threads at once. Threads are grouped into warps, and every
warp shares one program counter: when the threads of a warp disagree about a branch, the warp
runs both sides one after the other, with the threads that did not take a side switched off.
The scheduler picks a ready warp each cycle and issues its next instruction.

Registers are private to a thread, shared memory is private to a block, and global memory is
seen by everyone. A load from global memory takes hundreds of cycles, so the scheduler hides
the wait by running other warps in the meantime. Programs written for such a machine look like
ordinary C functions; the compiler turns them into PTX, a portable assembly language.

The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs! How
vexingly quick daft zebras jump; the five boxing wizards jump quickly. 0123456789 is ten
digits, and 3.14159 is nearly pi. "Quotes", (parentheses), [brackets] and {braces} <angles>.
Each record of the trace names the warp, the pc, the predicates and the values written:
warp.b0=00 pc.b0=3f preds[0][0][6] rval2.b1=3f ntid ctaid.x <gpu:pc> gpu: <bos> <eos>.
"""


def machine_texts() -> list[str]:
    """About 300 texts shaped like a compiled machine's vocabulary."""
    texts = ["<pad>", "<unk>", "<bos>", "<trace>", "<eos>", "ntid", "ctaid.x", "active=f,exec=3"]
    texts += [f"warp.b0={value:02x}" for value in range(32)]
    texts += [f"pc.b{byte}={value:02x}" for byte in range(2) for value in range(64)]
    texts += [f"preds[{i}][{j}][{k}]" for i in range(2) for j in range(2) for k in range(8)]
    texts += [f"rval{r}.b1={value:02x}" for r in range(4) for value in range(16)]
    return texts


TEXTS = machine_texts()
SPELLINGS = [machine_spelling(text) for text in TEXTS]


def pre_tokenizer(style: str):
    if style == "qwen":
        return pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    if style == "gpt2":
        return pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert style == "whole", style  # no splitting at all: a word is the whole text
    return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)


def train_tokenizer(style: str) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizer(style)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=SPECIAL_TOKENS)
    tokenizer.train_from_iterator(TRAINING_TEXT.split("\n\n"), trainer)
    return tokenizer


def write_base(directory, tokenizer_json: dict, slow_files: Tokenizer | None = None):
    """A base checkpoint's tokenizer files: tokenizer.json, tokenizer_config.json, a chat
    template, and the slow vocab.json/merges.txt of `slow_files`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tokenizer.json").write_text(json.dumps(tokenizer_json, ensure_ascii=False))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
         "pad_token": "<|endoftext|>", "clean_up_tokenization_spaces": False}))
    (directory / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}"
                                                   "{% endfor %}")
    if slow_files is not None:
        slow_files.model.save(str(directory))  # vocab.json, merges.txt
    return directory


def sample_texts() -> list[str]:
    """Texts whose ids must not change: prose, random ASCII and Unicode from a seeded RNG,
    the machine spellings written out as text, emoji."""
    rng = random.Random(1234)
    ascii_chars = [chr(code) for code in range(32, 127)] + ["\n", "\t", "\r\n", "  "]
    unicode_chars = ascii_chars + [chr(code) for code in (
        *range(0xC0, 0x17F), *range(0x300, 0x36F), *range(0x391, 0x3C9), *range(0x4E00, 0x4E40),
        *range(0x1F600, 0x1F640), 0x200D, 0xFE0F, 0x0, 0x7F)]
    samples = TRAINING_TEXT.split("\n") + [TRAINING_TEXT]
    samples += ["".join(rng.choices(ascii_chars, k=rng.randint(1, 60))) for _ in range(200)]
    samples += ["".join(rng.choices(unicode_chars, k=rng.randint(1, 40))) for _ in range(200)]
    samples += ["x <gpu:pc.b0=03> y", "<gpu:pc.b0=03>", "<gpu:<bos>>", "a<gpu:warp.b0=00>b",
                " ".join(SPELLINGS), "".join(SPELLINGS), "\n".join(SPELLINGS[::7]),
                "<|im_start|><gpu:ntid><|im_end|>", "emoji 😀👍🏽👨‍👩‍👧 and <gpu:😀>", "", " "]
    samples += SPELLINGS + TEXTS
    return samples


SAMPLES = sample_texts()


@pytest.fixture(scope="module", params=["qwen", "gpt2"])
def spliced(request, tmp_path_factory):
    """(base dir, spliced dir, offset) for one pre-tokenizer style."""
    root = tmp_path_factory.mktemp(f"splice-{request.param}")
    tokenizer = train_tokenizer(request.param)
    data = json.loads(tokenizer.to_str())
    assert len(data["model"]["vocab"]) > 400  # merges learnt, so merges are exercised
    base = write_base(root / "base", data, slow_files=tokenizer)
    offset = tokenizer_extent(data) + 5  # leave a gap of unused ids, as a real base may
    extend_tokenizer(base, TEXTS, offset, root / "out")
    return base, root / "out", offset


def test_every_text_tokenizes_as_with_the_base(spliced):
    base, out, _ = spliced
    before, after = AutoTokenizer.from_pretrained(base), AutoTokenizer.from_pretrained(out)
    for text in SAMPLES:
        assert after.encode(text, add_special_tokens=False) == \
            before.encode(text, add_special_tokens=False), text
    raw_before = Tokenizer.from_file(str(base / "tokenizer.json"))
    raw_after = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert [e.ids for e in raw_after.encode_batch(SAMPLES)] == \
        [e.ids for e in raw_before.encode_batch(SAMPLES)]


def test_machine_tokens_have_their_ids_and_spellings(spliced):
    _, out, offset = spliced
    tokenizer = AutoTokenizer.from_pretrained(out)
    ids = [offset + m for m in range(len(TEXTS))]
    assert tokenizer.convert_tokens_to_ids(SPELLINGS) == ids
    assert tokenizer.convert_ids_to_tokens(ids) == SPELLINGS
    assert [tokenizer.decode([id_]) for id_ in ids] == SPELLINGS
    assert tokenizer.decode(ids) == "".join(SPELLINGS)
    assert machine_spelling("pc.b0=03") == "<gpu:pc.b0=03>"


def test_text_and_machine_ids_decode_together(spliced):
    _, out, offset = spliced
    tokenizer = AutoTokenizer.from_pretrained(out)
    bos, pc = offset + TEXTS.index("<bos>"), offset + TEXTS.index("pc.b0=03")
    ids = (tokenizer.encode("Run héllo 😀:", add_special_tokens=False) + [bos, pc]
           + tokenizer.encode(" then stop.", add_special_tokens=False))
    assert tokenizer.decode(ids) == "Run héllo 😀:<gpu:<bos>><gpu:pc.b0=03> then stop."


def test_the_other_tokenizer_files_come_along(spliced):
    base, out, offset = spliced
    for name in ("tokenizer_config.json", "chat_template.jinja", "merges.txt"):
        assert (out / name).read_bytes() == (base / name).read_bytes(), name
    slow_before = json.loads((base / "vocab.json").read_text())
    slow_after = json.loads((out / "vocab.json").read_text())
    assert slow_after == {**slow_before,
                          **{spelling: offset + m for m, spelling in enumerate(SPELLINGS)}}
    fast = json.loads((out / "tokenizer.json").read_text())
    assert fast["added_tokens"] == json.loads((base / "tokenizer.json").read_text())["added_tokens"]
    assert tokenizer_extent(fast) == offset + len(TEXTS)


def test_a_tokenizer_class_that_rebuilds_from_vocab_and_merges(spliced, tmp_path):
    """transformers' Qwen3_5Tokenizer (model_type qwen3_5, as a real base) rebuilds its BPE
    from tokenizer.json's vocab and merges with its own pre-tokenizer; ids still agree."""
    base, out, offset = spliced
    loaded = []
    for directory in (base, out):
        copy = shutil.copytree(directory, tmp_path / directory.name)
        (copy / "config.json").write_text(json.dumps({"model_type": "qwen3_5"}))
        loaded.append(AutoTokenizer.from_pretrained(copy))
    before, after = loaded
    assert type(after).__name__ == "Qwen3_5Tokenizer"
    for text in SAMPLES:
        assert after.encode(text, add_special_tokens=False) == \
            before.encode(text, add_special_tokens=False), text
    assert after.convert_tokens_to_ids(SPELLINGS[:3]) == [offset, offset + 1, offset + 2]
    assert after.decode([offset + 3]) == SPELLINGS[3]


def test_ignore_merges_with_a_splitting_pre_tokenizer_is_safe(tmp_path):
    data = json.loads(train_tokenizer("qwen").to_str())
    data["model"]["ignore_merges"] = True
    base = write_base(tmp_path / "base", data)
    offset = tokenizer_extent(data)
    extend_tokenizer(base, TEXTS, offset, tmp_path / "out")
    before = Tokenizer.from_file(str(base / "tokenizer.json"))
    after = Tokenizer.from_file(str(tmp_path / "out" / "tokenizer.json"))
    assert [e.ids for e in after.encode_batch(SAMPLES)] == \
        [e.ids for e in before.encode_batch(SAMPLES)]
    assert after.token_to_id(SPELLINGS[-1]) == offset + len(TEXTS) - 1


def test_ignore_merges_with_whole_words_is_refused(tmp_path):
    data = json.loads(train_tokenizer("whole").to_str())
    # The danger is real: a whole word in the vocab comes out as that token.
    risky = json.loads(json.dumps(data))
    risky["model"]["ignore_merges"] = True
    risky["model"]["vocab"][SPELLINGS[0]] = tokenizer_extent(data)
    assert Tokenizer.from_str(json.dumps(risky)).encode(SPELLINGS[0]).ids == \
        [tokenizer_extent(data)]

    data["model"]["ignore_merges"] = True
    base = write_base(tmp_path / "base", data)
    with pytest.raises(UserError, match="ignore_merges.*pre-tokenizer keeps '<gpu:<pad>>'"):
        extend_tokenizer(base, TEXTS, tokenizer_extent(data), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_without_ignore_merges_whole_words_are_still_safe(tmp_path):
    """The pre-tokenizer leaves each spelling in one piece, yet BPE builds it from merges."""
    data = json.loads(train_tokenizer("whole").to_str())
    assert data["model"]["ignore_merges"] is False
    base = write_base(tmp_path / "base", data)
    extend_tokenizer(base, TEXTS, tokenizer_extent(data), tmp_path / "out")
    before = Tokenizer.from_file(str(base / "tokenizer.json"))
    after = Tokenizer.from_file(str(tmp_path / "out" / "tokenizer.json"))
    assert [e.ids for e in after.encode_batch(SAMPLES)] == \
        [e.ids for e in before.encode_batch(SAMPLES)]


def test_placement_of_a_qwen_sized_base():
    placement = place_machine_tokens(248320, 248077, 12775)
    assert placement == Placement(base_rows=248320, base_tokens=248077, offset=248077,
                                  count=12775, vocab_size=260864)
    assert placement.reuses_rows == 243
    assert placement.new_rows == 12544


def test_placement_in_the_base_unused_rows():
    placement = place_machine_tokens(20000, 600, 4471)
    assert (placement.offset, placement.vocab_size) == (600, 20000)
    assert (placement.reuses_rows, placement.new_rows) == (4471, 0)


def test_placement_rounds_to_the_multiple():
    assert place_machine_tokens(1000, 1000, 1).vocab_size == 1024
    assert place_machine_tokens(1000, 1000, 1, multiple=8).vocab_size == 1008
    assert place_machine_tokens(1000, 1000, 24, multiple=8).vocab_size == 1024
    assert place_machine_tokens(1000, 990, 10, multiple=128).vocab_size == 1000
    exact = place_machine_tokens(1000, 990, 11, multiple=128)
    assert (exact.vocab_size, exact.reuses_rows, exact.new_rows) == (1024, 10, 24)
    with pytest.raises(UserError, match="only 500 rows"):
        place_machine_tokens(500, 600, 10)


def test_tokenizer_extent():
    assert tokenizer_extent({"model": {"vocab": {"a": 0, "b": 7}}, "added_tokens": []}) == 8
    assert tokenizer_extent({"model": {"vocab": {"a": 0}},
                             "added_tokens": [{"id": 12, "content": "<s>"}]}) == 13


def base_with(tmp_path, edit) -> object:
    """A small qwen-style base whose tokenizer.json went through `edit(data)`."""
    data = json.loads(train_tokenizer("qwen").to_str())
    edit(data)
    return write_base(tmp_path / "base", data)


def word_level(data):
    data["model"] = {"type": "WordLevel", "vocab": {"a": 0, "[UNK]": 1}, "unk_token": "[UNK]"}


def known_spelling(data):
    data["model"]["vocab"]["<gpu:pc.b0=03>"] = tokenizer_extent(data)


def added_spelling(data):
    data["added_tokens"].append({"id": tokenizer_extent(data), "content": "<gpu:ntid>",
                                 "single_word": False, "lstrip": False, "rstrip": False,
                                 "normalized": False, "special": True})


def replacing_decoder(data):
    data["decoder"] = {"type": "Replace", "pattern": {"String": "<"}, "content": "["}


@pytest.mark.parametrize("edit, offset, message", [
    (word_level, None, r"tokenizer.json: the base's tokenizer is a WordLevel model, which "
                       r"cannot take the machine's tokens; splicing needs a byte-level BPE "
                       r"tokenizer.json"),
    (known_spelling, None, r"tokenizer.json: the base already has the machine spellings "
                           r"<gpu:pc.b0=03> \(1 in all\)"),
    (added_spelling, None, r"already has the machine spellings <gpu:ntid>"),
    (lambda data: None, 100, r"tokenizer.json: the machine block 100\.\.\d+ overlaps ids the "
                             r"base uses: 100, 101"),
    (replacing_decoder, None, r"machine token '<gpu:<pad>>' decodes to '\[gpu:\[pad>>'"),
])
def test_bases_that_are_refused(tmp_path, edit, offset, message):
    base = base_with(tmp_path, edit)
    data = json.loads((base / "tokenizer.json").read_text())
    offset = tokenizer_extent(data) if offset is None else offset
    with pytest.raises(UserError, match=message):
        extend_tokenizer(base, TEXTS, offset, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_missing_or_broken_tokenizer_json_is_refused(tmp_path):
    with pytest.raises(UserError, match=r"tokenizer.json: no such file; splicing needs"):
        extend_tokenizer(tmp_path, TEXTS, 1000, tmp_path / "out")
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(UserError, match=r"tokenizer.json: not a tokenizer.json \(not JSON"):
        extend_tokenizer(tmp_path, TEXTS, 1000, tmp_path / "out")


@pytest.mark.parametrize("texts, message", [
    (["ok", "has space"], r"machine token 1 'has space' is not printable ASCII"),
    (["ok", ""], r"machine token 1 '' is not printable ASCII"),
    (["ok", "é"], r"machine token 1 'é' is not printable ASCII"),
    (["ok", "ok"], r"machine token 1 'ok' appears twice"),
])
def test_machine_texts_that_are_refused(tmp_path, texts, message):
    base = base_with(tmp_path, lambda data: None)
    with pytest.raises(UserError, match=message):
        extend_tokenizer(base, texts, 1000, tmp_path / "out")


def test_the_base_is_not_overwritten(tmp_path):
    base = base_with(tmp_path, lambda data: None)
    with pytest.raises(UserError, match="cannot overwrite the base's"):
        extend_tokenizer(base, TEXTS, 1000, base)


def test_special_tokens_added_after_the_vocab_keep_their_ids(tmp_path):
    """As in Qwen's tokenizer.json: the special tokens are `added_tokens` right after the BPE
    vocab, not in it.  The tokenizers library re-numbers such tokens from the vocab's size
    on loading, so the extension pins them in the vocab at their ids."""
    from tokenizers import AddedToken

    tokenizer = train_tokenizer("qwen")
    extra = ["<|vision_start|>", "<|vision_end|>"]
    tokenizer.add_special_tokens([AddedToken(text, special=True) for text in extra])
    data = json.loads(tokenizer.to_str())
    assert all(text not in data["model"]["vocab"] for text in extra)
    base = write_base(tmp_path / "base", data)
    offset = tokenizer_extent(data)
    extend_tokenizer(base, TEXTS, offset, tmp_path / "out")
    before = AutoTokenizer.from_pretrained(base)
    after = AutoTokenizer.from_pretrained(tmp_path / "out")
    for text in extra + SPECIAL_TOKENS:
        assert after.convert_tokens_to_ids(text) == before.convert_tokens_to_ids(text)
    sample = "<|vision_start|>" + TRAINING_TEXT[:200] + "<|vision_end|>"
    assert after(sample)["input_ids"] == before(sample)["input_ids"]
    assert after.convert_tokens_to_ids(machine_spelling(TEXTS[0])) == offset
