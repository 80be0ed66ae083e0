"""The residual stream's layout: named one-hot groups, their encodings and the norm ledger.

This module is the reference for how values live in the residual stream (see also
`docs/compiler.md`).

- **Dim 0 is `ONE`**: the embedding sets it to 1.0 on every token.  Qwen3.5 has no biases;
  every constant a gadget needs is read from this dim.
- A **group** (`Group`) is a run of dims holding one value as a one-hot vector over its domain:
  value `v` puts `scale` (1.0 unless said otherwise) at `start + v` and 0 elsewhere.  A bit is a
  2-dim group `[is0, is1]`, a hex digit a 16-dim group, a 32-bit word 8 hex-digit groups,
  least significant digit first (`Word`).
- A **binary** group (`Group(kind="binary")`, `size` dims for up to `2^size` values) holds
  value `v` as signs: dim `start + k` is `+scale` where bit `k` of `v` is 1 and `-scale`
  where it is 0, so its norm does not depend on the value either.  A hex digit takes 4 dims
  instead of 16; `count` is how many values it may hold.  Gadgets read it through cube forms
  (`gadgets/core.py`: `is_value`, `cube_form`) and write it through `put`; which values are
  binary is chosen per value (`backend_torch/encodings.py`).
- An **analog** group (`Group(kind="analog")`, one dim) holds a number `v` as `v * scale` in its
  one dim.  Analog dims exist only between two layers of one multi-layer gadget; `scale` is
  chosen so small that their squares are negligible in the norm (see below).
- `ResidualLayout(hidden_size)` allocates groups first-fit from dim 1 upwards, by name.  Dims
  not allocated stay 0 on every token.
- `decode(group, vector)` reads a one-hot group back by argmax and reports the **margin**
  (best entry minus the second best, in units of `scale`): the figure that says how far the
  reading is from ambiguity.  `deviation` is the worst distance of the group from its ideal
  one-hot vector.

**The norm ledger.**  Every sublayer reads `RMSNorm(h) = h / rms(h)` with
`rms(h) = sqrt(sum(h_i^2) / hidden + eps)` (weights left at 0, i.e. scale 1).  Because every
token has exactly one hot entry of known scale in every group that is live at a sublayer's
input, `sum(h_i^2)` and so `rms` are the same for every token and known at compile time:
`residual_rms(sum_of_squares, hidden)`, or `layout.rms(live_groups)` which adds `ONE`.
Gadgets fold that rms into their input weights (a read of dim `d` with coefficient `c` becomes
the weight `c * rms` on the normalised input), so they act on `h` itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence, Union

import torch

ONE_DIM = 0
HEX = 16
WORD_DIGITS = 8
ONEHOT = "onehot"
BINARY = "binary"
ANALOG = "analog"


@dataclass(frozen=True)
class Group:
    """`size` consecutive residual dims from `start` holding one value (see module doc)."""

    name: str
    start: int
    size: int
    scale: float = 1.0
    kind: str = ONEHOT
    values: int = 0         # binary: how many values it may hold (default 2^size)

    @property
    def count(self) -> int:
        """How many values the group may hold (1 for an analog dim's number)."""
        if self.kind == BINARY:
            return self.values or 1 << self.size
        return self.size

    @property
    def stop(self) -> int:
        return self.start + self.size

    @property
    def dims(self) -> range:
        return range(self.start, self.stop)

    def dim(self, value: int) -> int:
        """The residual dim that is hot when the one-hot group holds `value`."""
        if self.kind == BINARY:
            raise ValueError(f"{self.name}: a binary group has no hot dim per value")
        if not 0 <= value < self.size:
            raise ValueError(f"{self.name}: value {value} outside 0..{self.size - 1}")
        return self.start + value

    @property
    def square_norm(self) -> float:
        """What the group adds to `sum(h_i^2)` on every token (0 for an analog group)."""
        if self.kind == BINARY:
            return self.size * self.scale ** 2
        return self.scale ** 2 if self.kind == ONEHOT else 0.0

    def signs(self, value: int) -> list[float]:
        """A binary group's dims (in units of `scale`) holding `value`: +1 per set bit."""
        if not 0 <= value < self.count:
            raise ValueError(f"{self.name}: value {value} outside 0..{self.count - 1}")
        return [1.0 if (value >> bit) & 1 else -1.0 for bit in range(self.size)]


@dataclass(frozen=True)
class Word:
    """A `4 * len(digits)`-bit word as hex-digit groups, least significant digit first."""

    name: str
    digits: tuple[Group, ...]

    @property
    def width_bits(self) -> int:
        return 4 * len(self.digits)

    @property
    def groups(self) -> tuple[Group, ...]:
        return self.digits

    @property
    def square_norm(self) -> float:
        return sum(group.square_norm for group in self.digits)


Live = Union[Group, Word]
ONE = Group("one", ONE_DIM, 1)


def word_digits(value: int, digits: int = WORD_DIGITS) -> list[int]:
    """The hex digits of `value` (taken modulo 2^(4*digits)), least significant first."""
    value &= (1 << (4 * digits)) - 1
    return [(value >> (4 * i)) & 0xF for i in range(digits)]


def onehot(group: Group, value: int) -> torch.Tensor:
    """The group's own dims (length `size`) holding `value`."""
    if group.kind == BINARY:
        return torch.tensor(group.signs(value)) * group.scale
    vector = torch.zeros(group.size)
    vector[group.dim(value) - group.start] = group.scale
    return vector


def residual_rms(sum_of_squares: float, hidden_size: int, eps: float = 1e-6) -> float:
    """The RMS every token's residual has: `sqrt(sum_of_squares / hidden_size + eps)`.

    `eps` is the model's `rms_norm_eps`, which `Qwen3_5RMSNorm` adds inside the root."""
    return math.sqrt(sum_of_squares / hidden_size + eps)


@dataclass
class ResidualLayout:
    """Allocator of named groups in a residual stream of `hidden_size` dims; dim 0 is ONE."""

    hidden_size: int
    eps: float = 1e-6
    groups: dict[str, Group] = field(default_factory=dict)
    _free: list[tuple[int, int]] = field(default_factory=list)   # (start, size), sorted

    def __post_init__(self):
        if self.hidden_size < 2:
            raise ValueError("the residual needs more than the ONE dim")
        self.groups = {ONE.name: ONE}
        self._free = [(1, self.hidden_size - 1)]

    # -- allocation -------------------------------------------------------------------------
    def alloc(self, name: str, size: int, *, scale: float = 1.0, kind: str = ONEHOT) -> Group:
        """A new group of `size` dims (first fit); `CapacityError` when the residual is full."""
        if name in self.groups:
            raise ValueError(f"group {name!r} allocated twice")
        if size < 1:
            raise ValueError(f"group {name!r} needs at least one dim")
        for index, (start, free_size) in enumerate(self._free):
            if free_size >= size:
                self._free[index] = (start + size, free_size - size)
                if free_size == size:
                    del self._free[index]
                group = Group(name, start, size, scale, kind)
                self.groups[name] = group
                return group
        from qwengpu.errors import CapacityError
        raise CapacityError(f"residual full: {name!r} needs {size} dims, "
                            f"{self.free_dims} of {self.hidden_size} free (largest run "
                            f"{max((s for _, s in self._free), default=0)})")

    def alloc_bit(self, name: str) -> Group:
        """A bit as a 2-dim group `[is0, is1]`."""
        return self.alloc(name, 2)

    def alloc_digit(self, name: str) -> Group:
        """A hex digit: a 16-dim group."""
        return self.alloc(name, HEX)

    def alloc_word(self, name: str, digits: int = WORD_DIGITS) -> Word:
        """A word of `digits` hex digits (8 for 32 bits), groups `name.d0` .. little-endian."""
        return Word(name, tuple(self.alloc_digit(f"{name}.d{i}") for i in range(digits)))

    def alloc_analog(self, name: str, scale: float) -> Group:
        """One dim holding a number `v` as `v * scale` (see the module doc)."""
        return self.alloc(name, 1, scale=scale, kind=ANALOG)

    def release(self, group: Group | Word) -> None:
        """Give a group's dims back (the caller guarantees they read 0 from now on)."""
        for part in (group.digits if isinstance(group, Word) else (group,)):
            del self.groups[part.name]
            self._free.append((part.start, part.size))
        self._free = merge_runs(self._free)

    @property
    def free_dims(self) -> int:
        return sum(size for _, size in self._free)

    @property
    def used_dims(self) -> int:
        return self.hidden_size - self.free_dims

    # -- the norm ledger --------------------------------------------------------------------
    def sum_of_squares(self, live: Iterable[Live]) -> float:
        """`sum(h_i^2)` of every token when exactly `live` (and ONE) hold values."""
        parts = {id(part): part for item in live
                 for part in (item.digits if isinstance(item, Word) else (item,))}
        parts.pop(id(ONE), None)
        return ONE.square_norm + sum(part.square_norm for part in parts.values())

    def rms(self, live: Iterable[Live]) -> float:
        """The RMS every token's residual has when exactly `live` (and ONE) hold values."""
        return residual_rms(self.sum_of_squares(live), self.hidden_size, self.eps)

    # -- encoding ---------------------------------------------------------------------------
    def embed(self, values: Mapping[Live, int]) -> torch.Tensor:
        """A residual vector `[hidden]`: ONE, plus each group/word holding its value."""
        vector = torch.zeros(self.hidden_size)
        vector[ONE_DIM] = ONE.scale
        for target, value in values.items():
            write(vector, target, value)
        return vector


    def embed_many(self, columns: Mapping[Live, Sequence[int]]) -> torch.Tensor:
        """Residual vectors `[cases, hidden]`: ONE, plus each group/word holding, per case,
        its value from `columns` (all columns of one length)."""
        lengths = {len(values) for values in columns.values()}
        if len(lengths) > 1:
            raise ValueError("columns of different lengths")
        count = lengths.pop() if lengths else 1
        vectors = torch.zeros(count, self.hidden_size)
        vectors[:, ONE_DIM] = ONE.scale
        rows = torch.arange(count)
        for target, values in columns.items():
            parts = target.digits if isinstance(target, Word) else (target,)
            values = [int(v) for v in values]
            for index, group in enumerate(parts):
                if isinstance(target, Word):
                    digit = torch.tensor([(v >> (4 * index)) & 0xF for v in values])
                else:
                    digit = torch.tensor(values)
                if group.kind == ANALOG:
                    vectors[:, group.start] = digit.float() * group.scale
                elif group.kind == BINARY:
                    for row, v in enumerate(digit.tolist()):
                        vectors[row, group.start:group.stop] = onehot(group, v)
                elif ((digit < 0) | (digit >= group.size)).any():
                    raise ValueError(f"{group.name}: value outside 0..{group.size - 1}")
                else:
                    vectors[rows, group.start + digit] = group.scale
        return vectors


def merge_runs(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, size in sorted(runs):
        if merged and merged[-1][0] + merged[-1][1] == start:
            merged[-1] = (merged[-1][0], merged[-1][1] + size)
        else:
            merged.append((start, size))
    return merged


def write(vector: torch.Tensor, target: Live, value: int | float) -> None:
    """Put `value` into `target`'s dims of a residual vector `[..., hidden]` (in place)."""
    if isinstance(target, Word):
        for group, digit in zip(target.digits, word_digits(int(value), len(target.digits))):
            write(vector, group, digit)
        return
    vector[..., target.start:target.stop] = 0
    if target.kind == ANALOG:
        vector[..., target.start] = float(value) * target.scale
    elif target.kind == BINARY:
        vector[..., target.start:target.stop] = onehot(target, int(value))
    else:
        vector[..., target.dim(int(value))] = target.scale


# -- decoding -------------------------------------------------------------------------------
def decode(group: Group, vector: torch.Tensor) -> tuple[int, float]:
    """`(value, margin)` of a one-hot group in a residual vector `[hidden]`.

    The value is the argmax; the margin is best minus second best, divided by `scale`
    (1.0 for a perfect one-hot)."""
    values, margins = decode_many(group, vector.reshape(1, -1))
    return int(values[0]), float(margins[0])


def decode_many(group: Group, vectors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Batched `decode`: values and margins over the leading dims of `[..., hidden]`."""
    block = vectors[..., group.start:group.stop].float() / group.scale
    if group.kind == ANALOG:
        return block[..., 0].round().long(), (0.5 - (block[..., 0] - block[..., 0].round())
                                              .abs())
    if group.kind == BINARY:      # the sign of each dim; the margin is the least |dim|
        weights = 1 << torch.arange(group.size)
        return ((block > 0).long() * weights).sum(-1), block.abs().amin(-1)
    top = block.topk(min(2, group.size), dim=-1)
    second = top.values[..., 1] if group.size > 1 else torch.zeros_like(top.values[..., 0])
    return top.indices[..., 0], top.values[..., 0] - second


def decode_word(word: Word, vector: torch.Tensor) -> tuple[int, float]:
    """`(value, margin)` of a word in a residual vector `[hidden]`; the margin is the least
    over its digits."""
    values, margins = decode_word_many(word, vector.reshape(1, -1))
    return int(values[0]), float(margins[0])


def decode_word_many(word: Word, vectors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Batched `decode_word` over the leading dims of `[..., hidden]`."""
    value = torch.zeros(vectors.shape[:-1], dtype=torch.long)
    margin = torch.full(vectors.shape[:-1], float("inf"))
    for index, group in enumerate(word.digits):
        digit, digit_margin = decode_many(group, vectors)
        value |= digit << (4 * index)
        margin = torch.minimum(margin, digit_margin)
    return value, margin


def deviation(target: Live, vectors: torch.Tensor, values: torch.Tensor | Sequence[int] | int
              ) -> torch.Tensor:
    """Worst `|entry - ideal|` over the target's dims, per leading index of `[..., hidden]`,
    in units of `scale`; `values` are the ideal values (one per leading index)."""
    ideal = torch.zeros_like(vectors, dtype=torch.float32)
    values = torch.as_tensor(values)
    groups = target.digits if isinstance(target, Word) else (target,)
    for index, group in enumerate(groups):
        part = (values >> (4 * index)) & 0xF if isinstance(target, Word) else values
        block = ideal[..., group.start:group.stop]
        if group.kind == ANALOG:
            block[..., 0] = part.to(torch.float32) * group.scale
        else:
            block.scatter_(-1, part.reshape(*vectors.shape[:-1], 1).long()
                           .expand(*vectors.shape[:-1], 1), group.scale)
    dims = torch.cat([torch.arange(g.start, g.stop) for g in groups])
    scales = torch.tensor([g.scale for g in groups for _ in range(g.size)])
    return ((vectors[..., dims].float() - ideal[..., dims]).abs() / scales).amax(dim=-1)
