"""The token interface: trace vocabulary, embedding into the residual, emission by lm_head.

A trace token is a *kind* plus the values of the kind's fields (`TokenKind`, `Field`): `@:17`
(a program address), `da:3.1` (two register fields), `<end>` (no field).  `Vocabulary` numbers
every token of every kind (specials first) and writes the tokenizer: a `tokenizers` WordLevel
model with a whitespace pre-tokenizer, saved as `tokenizer.json` + `tokenizer_config.json`
that `AutoTokenizer` loads; its eos token is `<end>`, the end of a launch.

`TokenInterface` ties a vocabulary to a `ResidualLayout`:

- **embedding** (`embedding_table`): each token's row is its residual encoding: `ONE`, the
  kind one-hot (`tok.kind`), each field's value in its input group(s) (a field stored as hex
  digits spans several 16-dim groups, least significant first), and any derived groups added
  with `derive` (e.g. the `init` bit of `<launch>`).  Every input group has exactly one hot
  entry on every token (a token without the field holds 0 there), so the norm ledger holds.
- **emission** (`install_lm_head`): gadgets write the *next* token into the emission groups
  `next.kind` and `next.<group>`, one hot entry each.  The logit of a token is the sum, over
  the emission groups, of `margin` times its entry there; a group the token's kind does not
  use is a wildcard (all its entries count), so a kind without fields never needs a `null`
  value.  The right token collects `margin` from every group; any other token differs from
  it in at least one group (the kind, or a field of the same kind), so it is at least
  `margin` lower.  The final norm's rms is folded into lm_head, so the margin is in logits.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import torch

from qwengpu.backend_torch.residual import HEX, Group, ResidualLayout

PAD, LAUNCH, END = "<pad>", "<launch>", "<end>"
EMIT_MARGIN = 16.0          # logit gap between the right token and any other


@dataclass(frozen=True)
class Field:
    """One field of a token kind: a value in `0..size-1`, held in the residual groups named
    `groups` (one group: one-hot over `size`; several: hex digits, least significant first)."""

    name: str
    size: int
    groups: tuple[str, ...]
    label: Callable[[int], str] = str

    def __post_init__(self):
        if len(self.groups) > 1 and self.size > HEX ** len(self.groups):
            raise ValueError(f"{self.name}: {self.size} values do not fit "
                             f"{len(self.groups)} hex digits")

    def digits(self, value: int) -> list[int]:
        """The index held by each of the field's groups."""
        if len(self.groups) == 1:
            return [value]
        return [(value >> (4 * i)) & 0xF for i in range(len(self.groups))]

    def group_size(self, index: int) -> int:
        return self.size if len(self.groups) == 1 else HEX


def onehot_field(name: str, size: int, group: str | None = None,
                 label: Callable[[int], str] = str) -> Field:
    """A field held as one one-hot group (named `group`, default the field's name)."""
    return Field(name, size, (group or name,), label)


def hex_field(name: str, digits: int, groups: Sequence[str] | None = None,
              label: Callable[[int], str] | None = None) -> Field:
    """A field of `digits` hex digits (e.g. a byte), held in that many 16-dim groups."""
    groups = tuple(groups or [f"{name}.d{i}" for i in range(digits)])
    return Field(name, HEX ** digits, groups, label or (lambda v, n=digits: f"{v:0{n}x}"))


@dataclass(frozen=True)
class TokenKind:
    """A kind of token and its fields; a token prints as `kind` or `kind:f1.f2`."""

    name: str
    fields: tuple[Field, ...] = ()

    def __post_init__(self):
        if any(ch.isspace() for ch in self.name) or ":" in self.name:
            raise ValueError(f"bad kind name {self.name!r}")

    def values(self) -> Iterable[tuple[int, ...]]:
        return itertools.product(*(range(f.size) for f in self.fields))

    def text(self, values: Sequence[int]) -> str:
        if not self.fields:
            return self.name
        return self.name + ":" + ".".join(f.label(v) for f, v in zip(self.fields, values))


SPECIAL_KINDS = (TokenKind(PAD), TokenKind(LAUNCH), TokenKind(END))


class Vocabulary:
    """Every token of every kind, numbered in order: specials, then each kind's values in
    lexicographic order."""

    def __init__(self, kinds: Sequence[TokenKind]):
        names = [kind.name for kind in kinds]
        specials = [kind for kind in SPECIAL_KINDS if kind.name not in names]
        self.kinds: list[TokenKind] = specials + list(kinds)
        if len({kind.name for kind in self.kinds}) != len(self.kinds):
            raise ValueError("duplicate token kinds")
        self.tokens: list[tuple[TokenKind, tuple[int, ...]]] = []
        self._ids: dict[tuple[str, tuple[int, ...]], int] = {}
        for kind in self.kinds:
            for values in kind.values():
                self._ids[(kind.name, tuple(values))] = len(self.tokens)
                self.tokens.append((kind, tuple(values)))
        self.texts = [kind.text(values) for kind, values in self.tokens]
        if len(set(self.texts)) != len(self.texts):
            raise ValueError("two tokens print the same")
        self.kind_index = {kind.name: index for index, kind in enumerate(self.kinds)}

    def __len__(self) -> int:
        return len(self.tokens)

    def id(self, kind: str, *values: int) -> int:
        return self._ids[(kind, tuple(values))]

    def kind(self, name: str) -> TokenKind:
        return self.kinds[self.kind_index[name]]

    @property
    def eos_id(self) -> int:
        return self.id(END)

    @property
    def pad_id(self) -> int:
        return self.id(PAD)

    @property
    def launch_id(self) -> int:
        return self.id(LAUNCH)

    # -- tokenizer ---------------------------------------------------------------------------
    def tokenizer(self):
        """A `tokenizers.Tokenizer`: WordLevel over the token texts, split on whitespace."""
        from tokenizers import Tokenizer, models, pre_tokenizers

        tok = Tokenizer(models.WordLevel({text: i for i, text in enumerate(self.texts)},
                                         unk_token=PAD))
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        return tok

    def save_tokenizer(self, directory: str | os.PathLike) -> None:
        """Write `tokenizer.json` and `tokenizer_config.json` (eos = `<end>`) for AutoTokenizer."""
        from transformers import PreTrainedTokenizerFast

        fast = PreTrainedTokenizerFast(tokenizer_object=self.tokenizer(), eos_token=END,
                                       bos_token=LAUNCH, pad_token=PAD, unk_token=PAD)
        fast.model_max_length = 1 << 20
        fast.save_pretrained(str(directory))
        _drop_unneeded(directory)


def _drop_unneeded(directory) -> None:
    """Keep the two files the brief promises (special_tokens_map.json is redundant)."""
    extra = os.path.join(str(directory), "special_tokens_map.json")
    if os.path.exists(extra):
        os.remove(extra)


@dataclass
class TokenInterface:
    """A vocabulary's embedding and emission in a residual layout (see the module doc)."""

    vocab: Vocabulary
    layout: ResidualLayout
    inputs: dict[str, Group] = field(default_factory=dict)
    emits: dict[str, Group] = field(default_factory=dict)
    derived: list[tuple[Group, Callable[[TokenKind, tuple[int, ...]], int]]] = \
        field(default_factory=list)

    def __post_init__(self):
        self.kind_group = self.layout.alloc("tok.kind", len(self.vocab.kinds))
        for name, size in self._field_groups().items():
            self.inputs[name] = self.layout.alloc(f"tok.{name}", size)

    def _field_groups(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for kind in self.vocab.kinds:
            for fld in kind.fields:
                for index, name in enumerate(fld.groups):
                    sizes[name] = max(sizes.get(name, 0), fld.group_size(index))
        return sizes

    # -- inputs ------------------------------------------------------------------------------
    def derive(self, group: Group, fn: Callable[[TokenKind, tuple[int, ...]], int]) -> Group:
        """Also set `group` to `fn(kind, values)` on every token (any per-token function)."""
        self.derived.append((group, fn))
        return group

    def init_bit(self, name: str = "tok.init") -> Group:
        """A bit that is 1 on `<launch>` only: the memories' init tokens."""
        return self.derive(self.layout.alloc_bit(name), lambda kind, _: int(kind.name == LAUNCH))

    def kind_is(self, *names: str) -> tuple[Group, tuple[int, ...]]:
        """`(tok.kind, indices)` for a `When`-style condition on the current token's kind."""
        return self.kind_group, tuple(self.vocab.kind_index[name] for name in names)

    def group(self, name: str) -> Group:
        """The input group holding field group `name` (e.g. `"n0"`)."""
        return self.inputs[name]

    @property
    def live(self) -> list[Group]:
        """The groups every token's embedding sets (for the norm ledger)."""
        return [self.kind_group, *self.inputs.values(), *(g for g, _ in self.derived)]

    def encode(self, token_id: int) -> dict[Group, int]:
        """The value of every input group on token `token_id`."""
        kind, values = self.vocab.tokens[token_id]
        held = {self.kind_group: self.vocab.kind_index[kind.name]}
        held.update({group: 0 for group in self.inputs.values()})
        for fld, value in zip(kind.fields, values):
            for name, digit in zip(fld.groups, fld.digits(value)):
                held[self.inputs[name]] = digit
        for group, fn in self.derived:
            held[group] = fn(kind, values)
        return held

    def embedding_table(self, extra: Callable[[int], dict[Group, int]] | None = None
                        ) -> torch.Tensor:
        """`[vocab, hidden]`: each token's residual encoding (plus `extra(id)` groups)."""
        rows = []
        for token_id in range(len(self.vocab)):
            held = self.encode(token_id)
            if extra is not None:
                held.update(extra(token_id))
            rows.append(self.layout.embed(held))
        return torch.stack(rows)

    def install_embedding(self, model, extra=None) -> None:
        weight = model.model.embed_tokens.weight
        if weight.shape[0] < len(self.vocab):
            raise ValueError(f"model vocab {weight.shape[0]} < {len(self.vocab)} tokens")
        with torch.no_grad():
            weight[:len(self.vocab)] = self.embedding_table(extra).to(weight.dtype)

    # -- emission ----------------------------------------------------------------------------
    def alloc_emission(self) -> dict[str, Group]:
        """Allocate `next.kind` and `next.<group>` (the gadgets' targets for the next token)."""
        self.emits["kind"] = self.layout.alloc("next.kind", len(self.vocab.kinds))
        for name, size in self._field_groups().items():
            self.emits[name] = self.layout.alloc(f"next.{name}", size)
        return self.emits

    def emission_of(self, token_id: int) -> dict[Group, int]:
        """What the emission groups hold to emit `token_id` (unused groups: 0)."""
        kind, values = self.vocab.tokens[token_id]
        held = {group: 0 for group in self.emits.values()}
        held[self.emits["kind"]] = self.vocab.kind_index[kind.name]
        for fld, value in zip(kind.fields, values):
            for name, digit in zip(fld.groups, fld.digits(value)):
                held[self.emits[name]] = digit
        return held

    def lm_head_table(self, final_rms: float, margin: float = EMIT_MARGIN) -> torch.Tensor:
        """`[vocab, hidden]`: each token's lm_head row (see the module doc)."""
        if not self.emits:
            raise ValueError("alloc_emission() first")
        table = torch.zeros(len(self.vocab), self.layout.hidden_size, dtype=torch.float64)
        unit = margin * final_rms
        for token_id, (kind, values) in enumerate(self.vocab.tokens):
            row = table[token_id]
            kind_group = self.emits["kind"]
            row[kind_group.dim(self.vocab.kind_index[kind.name])] = unit / kind_group.scale
            used = set()
            for fld, value in zip(kind.fields, values):
                for name, digit in zip(fld.groups, fld.digits(value)):
                    group = self.emits[name]
                    row[group.dim(digit)] = unit / group.scale
                    used.add(name)
            for name, group in self.emits.items():
                if name != "kind" and name not in used:
                    row[group.start:group.stop] = unit / group.scale
        return table

    def install_lm_head(self, model, final_rms: float, margin: float = EMIT_MARGIN) -> None:
        """Write lm_head; `final_rms` is the rms of the residual after the last layer."""
        weight = model.lm_head.weight
        with torch.no_grad():
            weight.zero_()
            weight[:len(self.vocab)] = self.lm_head_table(final_rms, margin).to(weight.dtype)


def emission_margins(logits: torch.Tensor, expected: torch.Tensor) -> tuple[torch.Tensor,
                                                                            torch.Tensor]:
    """Per position: whether argmax is `expected`, and the logit of `expected` minus the best
    other logit (the emission margin)."""
    logits = logits.float()
    right = logits.gather(-1, expected.unsqueeze(-1)).squeeze(-1)
    others = logits.scatter(-1, expected.unsqueeze(-1), float("-inf")).amax(-1)
    return logits.argmax(-1) == expected, right - others


def token_texts(vocab: Vocabulary, ids: Iterable[int]) -> str:
    return " ".join(vocab.texts[i] for i in ids)

