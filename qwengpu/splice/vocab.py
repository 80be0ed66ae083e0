"""The spliced checkpoint's vocabulary: the base's tokens, then one block of machine tokens.

Machine token m (its index in the machine's token list) gets model id `offset + m`, and the
base's byte-level BPE `tokenizer.json` learns it as `<gpu:TEXT>` (`machine_spelling`):

    placement = place_machine_tokens(base_rows, tokenizer_extent(json), len(texts))
    extend_tokenizer(base_dir, texts, placement.offset, out_dir)

Each spelling goes into the BPE model's `vocab` only: no merge, no `added_tokens` entry.  BPE
turns a word into its initial symbols (single byte characters) and then applies merges, and
every merge of the base yields a string of the base's vocab; a spelling is never one of those
(that is checked) and is longer than one character, so no text can tokenize to a machine
token, and the ids of every text are the base's.  The one exception is a BPE with
`ignore_merges`, which emits a whole pre-tokenized word that is in the vocab: there the base's
pre-tokenizer must cut every spelling into pieces (Qwen's splits `<gpu` from `:pc` and so on),
or the base is refused.  The machine's texts are printable ASCII without spaces, characters
the byte-level alphabet maps to themselves, so a machine token decodes to its spelling and
`convert_tokens_to_ids`/`convert_ids_to_tokens` know it.  Both claims are checked on the
written tokenizer: every spelling decodes to itself and encodes to the base's ids.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from tokenizers import Tokenizer

from qwengpu.errors import UserError

MACHINE_PREFIX = "<gpu:"
MACHINE_SUFFIX = ">"
TOKENIZER_JSON = "tokenizer.json"
SLOW_VOCAB_JSON = "vocab.json"
# The base's other tokenizer files, copied as they are (vocab.json gets the spellings too).
COPIED_FILES = ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                "merges.txt", "chat_template.jinja", "chat_template.json")
SHOWN = 5  # how many offenders an error message names


def machine_spelling(text: str) -> str:
    """How machine token `text` is written in the spliced tokenizer: `<gpu:TEXT>`."""
    return f"{MACHINE_PREFIX}{text}{MACHINE_SUFFIX}"


@dataclass(frozen=True)
class Placement:
    """Where the machine's tokens sit among the spliced model's ids and embedding rows."""

    base_rows: int      # rows of the base's embedding matrix (its config's vocab_size)
    base_tokens: int    # 1 + the highest id the base tokenizer uses (vocab + added tokens)
    offset: int         # machine token m has model id offset + m
    count: int          # number of machine tokens
    vocab_size: int     # rows of the spliced model's embedding / lm_head

    @property
    def reuses_rows(self) -> int:
        """How many machine ids fall in the base's unused rows (ids below `base_rows`)."""
        return max(0, min(self.count, self.base_rows - self.offset))

    @property
    def new_rows(self) -> int:
        """Rows the spliced embedding / lm_head has beyond the base's."""
        return self.vocab_size - self.base_rows


def place_machine_tokens(base_rows: int, base_tokens: int, count: int,
                         multiple: int = 64) -> Placement:
    """offset = base_tokens (the machine block starts right after the last id the tokenizer
    uses, taking the base's unused rows first); vocab_size = base_rows when the block fits in
    them, else offset + count rounded up to `multiple`."""
    if base_tokens > base_rows:
        raise UserError(f"the base's tokenizer uses ids up to {base_tokens - 1}, but its "
                        f"embedding has only {base_rows} rows (config vocab_size)")
    offset = base_tokens
    end = offset + count
    vocab_size = base_rows if end <= base_rows else -(-end // multiple) * multiple
    return Placement(base_rows, base_tokens, offset, count, vocab_size)


def tokenizer_extent(tokenizer_json: dict) -> int:
    """1 + the highest id in model.vocab and added_tokens."""
    vocab = tokenizer_json.get("model", {}).get("vocab") or {}
    ids = list(vocab.values()) if isinstance(vocab, dict) else list(range(len(vocab)))
    ids += [token["id"] for token in tokenizer_json.get("added_tokens") or []]
    return max(ids, default=-1) + 1


def read_json(path: Path, kind: str):
    """A tokenizer file's JSON; `UserError` naming the file when it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UserError(f"{path}: cannot read the {kind}: {error.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: not a {kind} (not JSON: {error})") from None


def read_tokenizer_json(base_dir: Path) -> tuple[Path, dict]:
    """The base's tokenizer.json as a dict, refused unless it is a BPE model."""
    path = Path(base_dir) / TOKENIZER_JSON
    if not path.is_file():
        raise UserError(f"{path}: no such file; splicing needs the base's byte-level BPE "
                        f"{TOKENIZER_JSON}")
    data = read_json(path, "tokenizer.json")
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict):
        raise UserError(f"{path}: not a tokenizer.json (no 'model' object)")
    if model.get("type") != "BPE":
        raise UserError(f"{path}: the base's tokenizer is a {model.get('type')} model, which "
                        "cannot take the machine's tokens; splicing needs a byte-level BPE "
                        "tokenizer.json")
    if not isinstance(model.get("vocab"), dict):
        raise UserError(f"{path}: the BPE model's 'vocab' is not an object of TOKEN: id")
    return path, data


def check_texts(texts: Sequence[str]) -> None:
    """Machine texts must be distinct, non-empty printable ASCII without spaces."""
    seen: set[str] = set()
    for index, text in enumerate(texts):
        if not text or not all("!" <= char <= "~" for char in text):
            raise UserError(f"machine token {index} {text!r} is not printable ASCII "
                            "without spaces")
        if text in seen:
            raise UserError(f"machine token {index} {text!r} appears twice")
        seen.add(text)


def check_free(path: Path, vocab: dict, added: Sequence[dict], spellings: Sequence[str],
               offset: int) -> None:
    """No spelling is a base token and no id of the machine block is taken."""
    taken = set(vocab) | {token["content"] for token in added}
    clashes = [spelling for spelling in spellings if spelling in taken]
    if clashes:
        raise UserError(f"{path}: the base already has the machine spellings "
                        f"{', '.join(clashes[:SHOWN])} ({len(clashes)} in all)")
    end = offset + len(spellings)
    used = sorted({id_ for id_ in vocab.values() if offset <= id_ < end}
                  | {token["id"] for token in added if offset <= token["id"] < end})
    if offset < 0 or used:
        raise UserError(f"{path}: the machine block {offset}..{end - 1} overlaps ids the base "
                        f"uses: {', '.join(map(str, used[:SHOWN]))} ({len(used)} in all)")


def check_ignore_merges(path: Path, base: Tokenizer, spellings: Sequence[str]) -> None:
    """With `ignore_merges`, a pre-tokenized word found in the vocab is emitted whole: the
    base's pre-tokenizer must not leave any spelling in one piece."""
    names = set(spellings)
    for spelling in spellings:
        text = base.normalizer.normalize_str(spelling) if base.normalizer else spelling
        pieces = (base.pre_tokenizer.pre_tokenize_str(text) if base.pre_tokenizer
                  else [(text, (0, len(text)))])
        whole = [piece for piece, _ in pieces if piece in names]
        if whole:
            raise UserError(f"{path}: the BPE model has ignore_merges and its pre-tokenizer "
                            f"keeps {whole[0]!r} in one piece, so text could turn into a "
                            "machine token; splicing needs a pre-tokenizer that splits it")


def check_extended(path: Path, base: Tokenizer, extended: Tokenizer,
                   spellings: Sequence[str], offset: int) -> None:
    """Each machine id decodes to its spelling, and each spelling as text keeps the base's
    ids."""
    ids = [[offset + index] for index in range(len(spellings))]
    decoded = extended.decode_batch(ids, skip_special_tokens=False)
    for spelling, text in zip(spellings, decoded):
        if text != spelling:
            raise UserError(f"{path}: machine token {spelling!r} decodes to {text!r}; "
                            "splicing needs a byte-level BPE tokenizer.json")
    before = base.encode_batch(list(spellings), add_special_tokens=False)
    after = extended.encode_batch(list(spellings), add_special_tokens=False)
    for token in extended_added(extended):
        if base.token_to_id(token) != extended.token_to_id(token):
            raise UserError(f"{path}: with the machine tokens, {token!r} would move from id "
                            f"{base.token_to_id(token)} to {extended.token_to_id(token)}")
    for spelling, old, new in zip(spellings, before, after):
        if old.ids != new.ids:
            raise UserError(f"{path}: with the machine tokens, the text {spelling!r} "
                            f"tokenizes to {new.ids} instead of {old.ids}")


def extended_added(tokenizer: Tokenizer) -> list[str]:
    return [token.content for token in tokenizer.get_added_tokens_decoder().values()]


def load_tokenizer(path: Path, data: dict) -> Tokenizer:
    """`data` (a tokenizer.json read from `path`) as a `tokenizers.Tokenizer`."""
    try:
        return Tokenizer.from_str(json.dumps(data))
    except Exception as error:  # the tokenizers library raises plain Exceptions
        raise UserError(f"{path}: the tokenizers library cannot load it: {error}") from None


def extended_slow_vocab(base_dir: Path, spellings: Sequence[str], offset: int) -> dict | None:
    """The base's vocab.json (the slow tokenizer's files) with the same spellings at the same
    ids; None when there is none."""
    path = Path(base_dir) / SLOW_VOCAB_JSON
    if not path.is_file():
        return None
    vocab = read_json(path, "vocab.json")
    if not isinstance(vocab, dict):
        raise UserError(f"{path}: not a vocab.json (not an object of TOKEN: id)")
    check_free(path, vocab, [], spellings, offset)
    vocab.update((spelling, offset + index) for index, spelling in enumerate(spellings))
    return vocab


def write_json(path: Path, data: dict, indent: int | None) -> None:
    try:
        path.write_text(json.dumps(data, ensure_ascii=False, indent=indent), encoding="utf-8")
    except OSError as error:
        raise UserError(f"{path}: cannot write the tokenizer: {error.strerror}") from None


def extend_tokenizer(base_dir: Path, texts: Sequence[str], offset: int, out_dir: Path) -> None:
    """Write out_dir/tokenizer.json with the machine spellings at ids
    offset..offset+len(texts)-1, and copy the base's other tokenizer files
    (tokenizer_config.json, special_tokens_map.json, merges.txt, chat_template.jinja, ...)
    unchanged; a vocab.json gets the spellings too, so the slow files agree."""
    base_dir, out_dir = Path(base_dir), Path(out_dir)
    path, data = read_tokenizer_json(base_dir)
    if out_dir.resolve() == base_dir.resolve():
        raise UserError(f"{out_dir}: the spliced tokenizer cannot overwrite the base's")
    check_texts(texts)
    spellings = [machine_spelling(text) for text in texts]
    model = data["model"]
    check_free(path, model["vocab"], data.get("added_tokens") or [], spellings, offset)
    base = load_tokenizer(path, data)
    if model.get("ignore_merges"):
        check_ignore_merges(path, base, spellings)
    # The tokenizers library gives an added token that is not in the model's vocab the id
    # after the vocab's last, whatever tokenizer.json says: with the machine's entries in the
    # vocab, the base's special tokens would move.  Pinned in the vocab, they keep their ids.
    for token in data.get("added_tokens") or []:
        model["vocab"].setdefault(token["content"], token["id"])
    model["vocab"].update((spelling, offset + index) for index, spelling in enumerate(spellings))
    check_extended(path, base, load_tokenizer(path, data), spellings, offset)
    slow_vocab = extended_slow_vocab(base_dir, spellings, offset)

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"{out_dir}: cannot make the directory: {error.strerror}") from None
    write_json(out_dir / TOKENIZER_JSON, data, indent=2)
    if slow_vocab is not None:
        write_json(out_dir / SLOW_VOCAB_JSON, slow_vocab, indent=None)
    for name in COPIED_FILES:
        if (base_dir / name).is_file():
            try:
                shutil.copyfile(base_dir / name, out_dir / name)
            except OSError as error:
                raise UserError(f"{out_dir / name}: cannot copy the base's {name}: "
                                f"{error.strerror}") from None
