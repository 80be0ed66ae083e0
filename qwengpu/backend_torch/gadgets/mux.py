"""Selection of words: by a bit (`SelectWord`, PTX `selp`) and by a one-hot selector
(`SelectOneHot`, any number of candidates), in one MLP layer.

Every output entry is `OR_n [selector_n and candidate_n holds v]`; the candidates are one-hot,
so each (candidate, digit, value) is one restoring step on the sum of two hot entries,
`[sel_n + x_v >= 3/2] -> v`, and exactly one of them fires per output digit.  Cost: 32 units
per candidate per hex digit (512 for a two-way select of 32-bit words, 256 per candidate of
a one-hot select), no bias.  The forms hold at most two hot entries, so these are exact in
bf16 too.
"""

from __future__ import annotations

from typing import Sequence

from qwengpu.backend_torch.gadgets import Gadget
from qwengpu.backend_torch.gadgets.core import MlpWriter, entries, put
from qwengpu.backend_torch.residual import Group, Word


class SelectOneHot(Gadget):
    """`out = words[selector]`: the selector is a one-hot group with one value per word."""

    layers = 1

    def __init__(self, selector: Group, words: Sequence[Word], out: Word,
                 name: str = "select"):
        if len(words) > selector.size:
            raise ValueError(f"{name}: {len(words)} words for a {selector.size}-way selector")
        if any(len(w.digits) != len(out.digits) for w in words):
            raise ValueError(f"{name}: candidates and output of different widths")
        self.selector, self.words, self.out, self.name = selector, list(words), out, name

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        (writer,) = writers
        for index, word in enumerate(self.words):
            chosen = entries(self.selector, [index])
            for source, target in zip(word.digits, self.out.digits):
                for v in range(source.size):
                    writer.step(chosen + entries(source, [v]), 1.5, put(target, v))

    def written(self):
        return [[self.out]]


def SelectWord(bit: Group, when_true: Word, when_false: Word, out: Word,
               name: str = "selp") -> SelectOneHot:
    """`out = bit ? when_true : when_false` (PTX `selp`), `bit` a 2-dim bit group."""
    return SelectOneHot(bit, [when_false, when_true], out, name)
