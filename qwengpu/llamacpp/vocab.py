"""The vocabulary of a checkpoint as llama.cpp reads it: a `gpt2` (byte-level BPE) GGUF
vocabulary, every id where the checkpoint's tokenizer has it.

A compiled checkpoint's tokenizer is a WordLevel vocabulary split on whitespace, which
llama.cpp does not have (and its converter refuses: no BPE merges, an unknown
pre-tokenizer).  So it is written as a `gpt2` vocabulary whose token list is the machine's
token texts (they are printable ASCII, which byte-level BPE spells as itself) with the
`default` pre-tokenizer and one merge, `Ġ Ġ` (two spaces), that can never join two
pieces of machine text into anything (llama.cpp wants at least one merge).  The control
tokens (`<pad> <unk> <bos> <trace> <eos>`) are CONTROL tokens, every machine token a
USER_DEFINED one: llama.cpp's tokenizer cuts user-defined texts out of a text whole, longest
first, so a prompt written as whitespace-separated token texts (`hdlc launch --text`)
tokenizes to the ids the WordLevel tokenizer gives (the spaces between them are dropped:
byte-level BPE has no token for them).

A spliced checkpoint's tokenizer is the base's byte-level BPE with the machine tokens
(`<gpu:...>`) in its vocabulary and no merge that makes one (docs/splice.md, "One
vocabulary"): it is written as it is, the base's merges unchanged, the base's special
tokens CONTROL and everything else NORMAL, so no text tokenizes to a machine token in
llama.cpp either; the pre-tokenizer is `qwen35` when the base splits text with Qwen's
regular expression, else `default`.

Rows of the embedding past the tokenizer's last id are `[PAD{id}]` tokens of type UNUSED,
as the converter writes them.  Launches are given to llama.cpp as ids, so how text
tokenizes matters only to someone who types a prompt into llama.cpp's own tools.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from qwengpu.engine.weights import CheckpointError
from qwengpu.trace.protocol import CONTROL_TOKENS, TraceProtocol

# llama.cpp's token types (gguf.TokenType)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED = 1, 2, 3, 4, 5
NEVER_JOINS = "Ġ Ġ"          # a merge of two spaces: no machine text has a space
QWEN_SPLIT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


@dataclass
class Vocabulary:
    """What the GGUF's `tokenizer.ggml.*` keys hold."""

    tokens: list[str]
    types: list[int]
    merges: list[str]
    pre: str
    special: dict[str, int] = field(default_factory=dict)   # bos, eos, unk, pad -> id


def checkpoint_vocabulary(directory: Path, config: dict) -> Vocabulary:
    """The vocabulary of a compiled or spliced checkpoint (see the module doc); anything
    else is refused."""
    protocol = TraceProtocol.load(directory)       # not a compiled checkpoint: refused here
    tokenizer = _read_tokenizer(directory)
    model = tokenizer.get("model") or {}
    spliced = (directory / "splice.json").is_file()
    size = int(config["vocab_size"])
    if spliced:
        vocabulary = _spliced(directory, tokenizer, model, size)
    elif model.get("type") == "WordLevel":
        vocabulary = _compiled(directory, model, protocol, size)
    else:
        raise CheckpointError(f"{directory}/tokenizer.json: a {model.get('type')} model; a "
                              "compiled checkpoint has the machine's WordLevel vocabulary")
    return vocabulary


def _read_tokenizer(directory: Path) -> dict:
    path = directory / "tokenizer.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing (hdlc compile and hdlc splice write it)") \
            from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: not readable JSON ({error})") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: not a tokenizer file")
    return data


def _by_id(directory: Path, vocab: dict, size: int) -> list[str | None]:
    if not isinstance(vocab, dict):
        raise CheckpointError(f"{directory}/tokenizer.json: no vocabulary")
    texts: list[str | None] = [None] * size
    for text, token_id in vocab.items():
        if not isinstance(token_id, int) or not 0 <= token_id < size:
            raise CheckpointError(f"{directory}/tokenizer.json: token {text!r} has id "
                                  f"{token_id!r}, outside the model's {size} rows")
        texts[token_id] = text
    return texts


def _padded(texts: list[str | None], types: list[int]) -> tuple[list[str], list[int]]:
    tokens = [text if text is not None else f"[PAD{index}]" for index, text in enumerate(texts)]
    return tokens, [UNUSED if text is None else kind for text, kind in zip(texts, types)]


def _compiled(directory: Path, model: dict, protocol: TraceProtocol, size: int) -> Vocabulary:
    texts = _by_id(directory, model.get("vocab"), size)
    for token_id, text in enumerate(CONTROL_TOKENS):
        if texts[token_id] != text:
            raise CheckpointError(f"{directory}/tokenizer.json: id {token_id} is "
                                  f"{texts[token_id]!r}, the protocol's {text!r}")
    types = [CONTROL if token_id < len(CONTROL_TOKENS) else USER_DEFINED
             for token_id in range(size)]
    tokens, types = _padded(texts, types)
    special = {"bos": protocol.bos_id, "eos": protocol.eos_id, "unk": protocol.unk_id,
               "pad": protocol.pad_id}
    return Vocabulary(tokens, types, [NEVER_JOINS], "default", special)


def _spliced(directory: Path, tokenizer: dict, model: dict, size: int) -> Vocabulary:
    if model.get("type") != "BPE":
        raise CheckpointError(f"{directory}/tokenizer.json: a {model.get('type')} model; "
                              "a spliced checkpoint keeps its base's byte-level BPE")
    texts = _by_id(directory, model.get("vocab"), size)
    types = [NORMAL] * size
    special = {}
    for added in tokenizer.get("added_tokens") or []:
        token_id, text = added.get("id"), added.get("content")
        if isinstance(token_id, int) and 0 <= token_id < size:
            texts[token_id] = text
            types[token_id] = CONTROL if added.get("special") else USER_DEFINED
    merges = [" ".join(merge) if isinstance(merge, list) else merge
              for merge in model.get("merges") or []]
    config = _read_json(directory / "tokenizer_config.json")
    generation = _read_json(directory / "generation_config.json")
    ids = {text: token_id for token_id, text in enumerate(texts) if text is not None}
    for key in ("bos", "eos", "unk", "pad"):
        token = config.get(f"{key}_token")
        token = token.get("content") if isinstance(token, dict) else token
        if isinstance(token, str) and token in ids:
            special[key] = ids[token]
    eos = generation.get("eos_token_id")
    if isinstance(eos, list):
        eos = eos[0] if eos else None
    if isinstance(eos, int):
        special["eos"] = eos
    tokens, types = _padded(texts, types)
    return Vocabulary(tokens, types, merges or [NEVER_JOINS], _pre_tokenizer(tokenizer),
                      special)


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _pre_tokenizer(tokenizer: dict) -> str:
    """`qwen35` when the tokenizer splits text with Qwen's regular expression, else
    `default` (ids are what a launch gives llama.cpp; this matters for typed text only)."""
    text = json.dumps(tokenizer.get("pre_tokenizer"))
    return "qwen35" if json.dumps(QWEN_SPLIT)[1:-1] in text else "default"
