"""The base checkpoint `hdlc splice` builds on: a Qwen3.5 model as users download it.

    base = read_base("Qwen3.5-2B")
    base.text["hidden_size"], base.multimodal, base.tied, base.text_prefix
    base.tensor("model.norm.weight")          # read lazily from its safetensors shards

Two forms are accepted: the text model (`Qwen3_5ForCausalLM`, `model_type` `qwen3_5_text`, its
decoder under `model.`) and the released multimodal one (`Qwen3_5ForConditionalGeneration`,
`model_type` `qwen3_5`, a `text_config` inside, the decoder under `model.language_model.` and
the vision tower under `model.visual.`), with tied or untied embeddings, one safetensors file or
shards with an index, in any float dtype.  Tensors are read one at a time (`safe_open`), so a
2B base is never held in memory whole.  Anything else is refused with a `UserError`, and so is
a base whose `tokenizer.json` is not a BPE model (`vocab.read_tokenizer_json`), before any
compile: the machine's tokens go into a BPE vocabulary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from qwengpu.errors import UserError
from qwengpu.splice.vocab import read_tokenizer_json

TEXT_TYPES = {"qwen3_5_text": "Qwen3_5ForCausalLM"}
MULTIMODAL_TYPES = {"qwen3_5": "Qwen3_5ForConditionalGeneration"}
SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"


@dataclass
class Base:
    directory: Path
    config: dict                 # config.json as written
    multimodal: bool
    tied: bool
    text_prefix: str             # "model." or "model.language_model."
    files: dict[str, Path] = field(default_factory=dict)   # tensor name -> safetensors file

    @property
    def text(self) -> dict:
        """The text model's config (the whole config, or its `text_config`)."""
        return self.config["text_config"] if self.multimodal else self.config

    @property
    def num_layers(self) -> int:
        return int(self.text["num_hidden_layers"])

    @property
    def rows(self) -> int:
        return int(self.text["vocab_size"])

    @property
    def embedding_name(self) -> str:
        return self.text_prefix + "embed_tokens.weight"

    @property
    def lm_head_name(self) -> str:
        return self.embedding_name if self.tied else "lm_head.weight"

    @property
    def dtype(self) -> torch.dtype:
        return self.tensor(self.embedding_name).dtype

    def tensor(self, name: str) -> torch.Tensor:
        from safetensors import safe_open

        with safe_open(str(self.files[name]), framework="pt") as handle:
            return handle.get_tensor(name)

    def shape(self, name: str) -> list[int]:
        """A tensor's shape, from its file's header."""
        from safetensors import safe_open

        with safe_open(str(self.files[name]), framework="pt") as handle:
            return list(handle.get_slice(name).get_shape())

    def layer_of(self, name: str) -> int | None:
        """The decoder layer a tensor belongs to, or None."""
        head = self.text_prefix + "layers."
        if not name.startswith(head):
            return None
        return int(name[len(head):].split(".", 1)[0])


def read_base(directory: str | Path) -> Base:
    """The base at `directory`, checked: a Qwen3.5 checkpoint whose tensors can be found."""
    path = Path(directory)
    if not path.is_dir():
        raise UserError(f"{directory}: no such base checkpoint directory")
    try:
        config = json.loads((path / "config.json").read_text())
    except FileNotFoundError:
        raise UserError(f"{directory}: no config.json, not a checkpoint") from None
    except OSError as error:
        raise UserError(f"{path / 'config.json'}: cannot read it: {error.strerror}") from None
    except ValueError as error:   # JSONDecodeError, UnicodeDecodeError
        raise UserError(f"{path / 'config.json'}: not JSON: {error}") from None
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if model_type not in TEXT_TYPES and model_type not in MULTIMODAL_TYPES:
        known = ", ".join(sorted(TEXT_TYPES | MULTIMODAL_TYPES))
        raise UserError(f"{path / 'config.json'}: model_type {model_type!r} is not Qwen3.5 "
                        f"(splice takes {known})")
    multimodal = model_type in MULTIMODAL_TYPES
    if multimodal and not isinstance(config.get("text_config"), dict):
        raise UserError(f"{path / 'config.json'}: a {model_type} config needs a text_config")
    text = config["text_config"] if multimodal else config
    tied = bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False)))
    files = _tensor_files(path)
    prefix = "model.language_model." if multimodal else "model."
    base = Base(path, config, multimodal, tied, prefix, files)
    wanted = [base.embedding_name, prefix + "norm.weight"]
    if not tied:
        wanted.append("lm_head.weight")
    missing = [name for name in wanted if name not in files]
    if missing:
        raise UserError(f"{directory}: the safetensors hold no {missing[0]} (is it a "
                        f"{'multimodal' if multimodal else 'text'} Qwen3.5 checkpoint?)")
    try:
        shape = [int(text["vocab_size"]), int(text["hidden_size"])]
    except (KeyError, TypeError, ValueError):
        raise UserError(f"{path / 'config.json'}: no integer vocab_size and hidden_size in the "
                        "text config") from None
    for name in wanted[:1] + wanted[2:]:
        if base.shape(name) != shape:
            raise UserError(f"{base.files[name]}: {name} is {base.shape(name)}, the config "
                            f"says {shape} (vocab_size, hidden_size)")
    # the tokenizer must take the machine's tokens: refused now, not after the compile
    read_tokenizer_json(path)
    return base


def _tensor_files(path: Path) -> dict[str, Path]:
    """Tensor name -> the safetensors file holding it."""
    if (path / INDEX_FILE).is_file():
        try:
            weight_map = json.loads((path / INDEX_FILE).read_text())["weight_map"]
        except OSError as error:
            raise UserError(f"{path / INDEX_FILE}: cannot read it: {error.strerror}") from None
        except (ValueError, KeyError, TypeError) as error:
            raise UserError(f"{path / INDEX_FILE}: not a safetensors index ({error})") from None
        if not isinstance(weight_map, dict) or not all(
                isinstance(shard, str) for shard in weight_map.values()):
            raise UserError(f"{path / INDEX_FILE}: its weight_map is not an object of "
                            "TENSOR: FILE")
        files = {name: path / shard for name, shard in weight_map.items()}
        absent = sorted({str(f) for f in files.values() if not f.is_file()})
        if absent:
            raise UserError(f"{path / INDEX_FILE}: names {absent[0]}, which does not exist")
        for shard in sorted(set(files.values())):
            held = _names_in(shard)
            named = sorted(name for name, file in files.items() if file == shard)
            lost = [name for name in named if name not in held]
            if lost:
                raise UserError(f"{shard}: holds no {lost[0]}, which {INDEX_FILE} places "
                                "there")
        return files
    if not (path / SINGLE_FILE).is_file():
        raise UserError(f"{path}: no {SINGLE_FILE} or {INDEX_FILE} (splice reads safetensors "
                        "checkpoints)")
    return {name: path / SINGLE_FILE for name in _names_in(path / SINGLE_FILE)}


def _names_in(file: Path) -> set[str]:
    """The tensor names a safetensors file holds (its header only is read)."""
    from safetensors import safe_open

    try:
        with safe_open(str(file), framework="pt") as handle:
            return set(handle.keys())
    except Exception as error:   # safetensors raises its own error types
        raise UserError(f"{file}: not a readable safetensors file: {error}") from None
