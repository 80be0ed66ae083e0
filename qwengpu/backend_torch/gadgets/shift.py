"""Shifts of a word: `shl`, `shr` (logical) and `sar` (arithmetic), by a constant or a word.

PTX semantics: the amount is unsigned; amounts of the word width or more give 0 (`shl`,
`shr`) or copies of the sign bit (`sar`).

**By a constant** (`ShiftConst`, 1 layer): bit `b` of output digit `i` is a fixed input bit
(or 0, or the sign), and an input bit is a sum of one-hot entries, so each output digit's value
`sum_b 2^b bit` is a form; a thermometer of 15 steps writes the digit (31 units per digit,
all digits share one bias unit; a digit that is constant costs only its bias).

**By a word** (`ShiftVar`, 2 layers):

1. output bit `p` (a 2-dim bit group) is `OR_n [amount == n and input bit p -/+ n]` over the
   amounts `n` below the width that reach it.  `amount == n` is an AND over the amount's hex
   digits (`digit_0 == n % 16`, `digit_1 == n // 16`, every higher digit 0), so each term is
   one step on the sum of 9 hot entries (`>= 8.5`), and at most one term fires.  For `sar`
   each bit also gets `[sign and amount >= width - p]`, one step on
   `512 sign + amount' >= 512 + width - p - 1/2` where `amount'` is the amount clipped to
   0..47 plus 48 per non-zero higher digit (so amounts >= 32, however large, count).
   32-bit: 528 steps (1057 units) for `shl`/`shr`, 560 steps (1121 units) for `sar`.
2. each output digit is repacked from its 4 bits (`bitwise.emit_digits_from_bits`, 31 units
   per digit with the shared bias).

Temporaries: the 32 output bits (64 dims).
"""

from __future__ import annotations

from typing import Sequence

from qwengpu.backend_torch.gadgets import Gadget
from qwengpu.backend_torch.gadgets.bitwise import emit_digits_from_bits
from qwengpu.backend_torch.gadgets.core import Form, MlpWriter, bit_of, const, entries, put, \
    weighted
from qwengpu.backend_torch.residual import ResidualLayout, Word

OPS = ("shl", "shr", "sar")


def _input_bit(word: Word, position: int) -> Form:
    """Bit `position` of a word as a 0/1 form."""
    return bit_of(word.digits[position // 4], position % 4)


def _source(op: str, word: Word, position: int, amount: int) -> Form | None:
    """The form of output bit `position` after shifting by `amount` (None: constant 0)."""
    width = 4 * len(word.digits)
    source = position - amount if op == "shl" else position + amount
    if 0 <= source < width:
        return _input_bit(word, source)
    if op == "sar" and source >= width:
        return _input_bit(word, width - 1)
    return None


class ShiftConst(Gadget):
    """`out = a op amount` for a constant amount (see module doc)."""

    layers = 1

    def __init__(self, op: str, a: Word, amount: int, out: Word, name: str | None = None):
        if op not in OPS:
            raise ValueError(f"unknown shift {op!r}")
        self.op, self.a, self.amount, self.out = op, a, amount, out
        self.name = name or f"{op}_{amount}"

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        (writer,) = writers
        for i, digit in enumerate(self.out.digits):
            bits = [_source(self.op, self.a, 4 * i + b, self.amount) for b in range(4)]
            if all(bit is None for bit in bits):
                writer.bias(put(digit, 0))
                continue
            value = Form()
            for b, bit in enumerate(bits):
                if bit is not None:
                    value = value + bit * float(2 ** b)
            for k in range(1, 16):
                writer.step(value, k - 0.5, put(digit, k) - put(digit, k - 1))
            writer.bias(put(digit, 0))

    def written(self):
        return [[self.out]]


def amount_equals(amount: Word, n: int) -> tuple[Form, int]:
    """A form that reaches its count (the second value) exactly when `amount == n`."""
    form = Form()
    for index, digit in enumerate(amount.digits):
        form = form + entries(digit, [(n >> (4 * index)) & 0xF])
    return form, len(amount.digits)


def amount_clipped(amount: Word) -> Form:
    """`min(amount, 47)`-like form: digit 0 plus 16 * min(digit 1, 2), plus 48 per non-zero
    higher digit; it is >= m (m <= 32) exactly when `amount >= m`.  At most 47 + 48 * 6."""
    form = weighted(amount.digits[0], lambda v: v)
    if len(amount.digits) > 1:
        form = form + weighted(amount.digits[1], lambda v: 16 * min(v, 2))
    for digit in amount.digits[2:]:
        form = form + const(48.0) - entries(digit, [0]) * 48.0
    return form


class ShiftVar(Gadget):
    """`out = a op amount` for an amount held in a word (see module doc)."""

    layers = 2

    def __init__(self, layout: ResidualLayout, op: str, a: Word, amount: Word, out: Word,
                 name: str | None = None):
        if op not in OPS:
            raise ValueError(f"unknown shift {op!r}")
        self.op, self.a, self.amount, self.out = op, a, amount, out
        self.name = name or op
        self.width = 4 * len(a.digits)
        if self.width > 32:
            raise ValueError(f"{self.name}: words of at most 32 bits")
        if 16 ** len(amount.digits) < self.width:
            raise ValueError(f"{self.name}: the amount cannot express every shift")
        self.bits = [layout.alloc_bit(f"{self.name}.bit{p}") for p in range(self.width)]

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        first, second = writers
        sign = _input_bit(self.a, self.width - 1)
        for p, bit in enumerate(self.bits):
            first.bias(put(bit, 0))
            for n in range(self.width):
                source = _source(self.op, self.a, p, n)
                if source is None or (self.op == "sar" and p + n >= self.width):
                    continue                 # zero, or sign fill (below)
                equal, count = amount_equals(self.amount, n)
                first.step(equal + source, count + 0.5, put(bit, 1) - put(bit, 0))
            if self.op == "sar":
                fill = sign * 512.0 + amount_clipped(self.amount)
                first.step(fill, 512 + self.width - p - 0.5, put(bit, 1) - put(bit, 0))
        for i, digit in enumerate(self.out.digits):
            bits = [entries(self.bits[4 * i + b], [1]) for b in range(4)]
            emit_digits_from_bits(second, bits, digit)

    def written(self):
        return [list(self.bits), [self.out]]
