"""Bitwise `and`, `or`, `xor` of two words and `not` of one.

Two forms of the binary operators, so the scheduler can trade layers for units:

- `layers=1`: one `PairLookup` per hex digit (`and`/`or` 162 units per digit, `xor` 512);
  bounded forms, exact in bf16.
- `layers=2` (default): layer 1 computes the 4 result bits of each digit as 2-dim bit groups
  from the input bits (`and` `[a_b + b_b >= 2]`, `or` `[... >= 1]`, `xor` both, 1 or 2 steps
  per bit); layer 2 repacks each digit from its bits with a thermometer of 15 steps on
  `sum_b 2^b bit_b` (`BitsToDigit`).  38 units per digit for `and`/`or`, 46 for `xor`.

`NotWord` is one `TableLookup` per digit (`15 - v`, 32 units per digit).  (A scheduler may also
treat `not` as a relabelling of a word's entries and spend nothing.)
"""

from __future__ import annotations

from typing import Sequence

from qwengpu.backend_torch.gadgets import Gadget
from qwengpu.backend_torch.gadgets.arith import emit_bit
from qwengpu.backend_torch.gadgets.core import Form, MlpWriter, bit_of, entries, put
from qwengpu.backend_torch.gadgets.lookup import PairLookup, TableLookup
from qwengpu.backend_torch.residual import Group, ResidualLayout, Word

DIGIT_FUNCTIONS = {"and": lambda x, y: x & y, "or": lambda x, y: x | y,
                   "xor": lambda x, y: x ^ y}


def emit_digits_from_bits(writer: MlpWriter, bits: Sequence[Form], digit: Group) -> None:
    """Write the hex digit `digit` whose bit `b` is the 0/1 form `bits[b]` (15 steps)."""
    value = Form()
    for b, form in enumerate(bits):
        value = value + form * float(2 ** b)
    for k in range(1, 16):
        writer.step(value, k - 0.5, put(digit, k) - put(digit, k - 1))
    writer.bias(put(digit, 0))


class BitwiseWords(Gadget):
    """`out = a op b` for op in `and`, `or`, `xor` (see module doc)."""

    def __init__(self, layout: ResidualLayout | None, op: str, a: Word, b: Word, out: Word,
                 *, layers: int = 2, name: str | None = None):
        if op not in DIGIT_FUNCTIONS:
            raise ValueError(f"unknown bitwise operator {op!r}")
        if layers not in (1, 2):
            raise ValueError("bitwise gadgets take 1 or 2 layers")
        self.op, self.a, self.b, self.out, self.layers = op, a, b, out, layers
        self.name = name or op
        self.bits: list[list[Group]] = []
        if layers == 2:
            self.bits = [[layout.alloc_bit(f"{self.name}.d{i}.bit{k}") for k in range(4)]
                         for i in range(len(out.digits))]

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        digits = list(zip(self.a.digits, self.b.digits, self.out.digits))
        if self.layers == 1:
            for x, y, z in digits:
                PairLookup(x, y, z, DIGIT_FUNCTIONS[self.op]).emit(writers)
            return
        first, second = writers
        for (x, y, z), bits in zip(digits, self.bits):
            for k, bit in enumerate(bits):
                both = bit_of(x, k) + bit_of(y, k)
                if self.op == "and":
                    emit_bit(first, both, 1.5, bit)
                elif self.op == "or":
                    emit_bit(first, both, 0.5, bit)
                else:
                    emit_bit(first, both, 0.5, bit)
                    first.step(both, 1.5, put(bit, 0) - put(bit, 1))
            emit_digits_from_bits(second, [entries(bit, [1]) for bit in bits], z)

    def written(self):
        if self.layers == 1:
            return [[self.out]]
        return [[bit for bits in self.bits for bit in bits], [self.out]]


class NotWord(Gadget):
    """`out = ~a` (each digit `15 - v`), one layer."""

    layers = 1

    def __init__(self, a: Word, out: Word, name: str = "not"):
        self.a, self.out, self.name = a, out, name

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        for x, z in zip(self.a.digits, self.out.digits):
            TableLookup(x, z, lambda v: 15 - v).emit(writers)

    def written(self):
        return [[self.out]]
