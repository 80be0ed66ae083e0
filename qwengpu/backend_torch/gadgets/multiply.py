"""Multiplication of words: low word, high word (unsigned or signed), and multiply-add, in 6
MLP layers (fp32).

With `a = sum_i 2^i a_i` and `b = sum_j 2^j b_j` in bits, the product is `sum_k 16^k Q_k`
where the *column sum* `Q_k = sum_{i,j: (i+j)//4 == k} 2^((i+j) % 4) a_i b_j` (at most 469
for 32-bit words).  The layers:

1. **products** — for each bit `a_i` and column `k` one *gated* unit (`core`): when `a_i` is
   1 it adds `sum_j 2^((i+j)%4) b_j` (a form of `b`'s one-hot digits) to the analog dim `Q_k`
   (264 units for all 16 columns of a 32x32 product, 144 for the low 8).  The signed high word
   adds `s_a (~b + 1) + s_b (~a + 1)` at columns 8.. (two's complement of the correction
   `-2^32 (s_a b + s_b a)`), and `mad` adds the addend's digits to `Q_k` (1 unit each).
2. **split columns** — steps `[Q_k >= 16 m]` give `f_k = Q_k // 16`; the analog dim `S_k`
   receives `Q_k - 16 f_k + f_(k-1)` (at most 46), and `Q_k` is erased.
3. **split again** — `h_k = S_k // 16` in {0, 1, 2} as a one-hot group (2 steps).
4. to 6. **add** — the product is `sum_k 16^k (z_k + h_(k-1))` with `z_k = S_k - 16 h_k`
   (<= 15): every digit sum is at most 17, so the carry-lookahead adder of `arith`
   (`DigitAdder`) finishes it in 3 layers; the last erases the `S_k`.

The analog dims hold `value * 2^-16`, so their squares change the residual's rms by less than
1e-4 (the norm ledger counts them as 0).  Layers 1-3 are not restoring (analog); the output is.

**Splitting over tokens.**  The interfaces between layers are small: after layer 1 the `Q_k`
(16 analog dims), after layer 3 the `S_k` and `h_k` (16 analog + 16 x 3 one-hot dims), after
layer 4/5 the adder's carry states/carries.  To spread a multiplication over several tokens,
the scheduler would cut after layer 3 (or 5) and carry the one-hot parts through a Gated
DeltaNet memory like any other value; analog dims do not survive the DeltaNet's conv SiLU
exactly, so a cut must first turn the `S_k` into one-hot digits (one thermometer layer).
"""

from __future__ import annotations

from typing import Sequence

from qwengpu.backend_torch.gadgets import Gadget
from qwengpu.backend_torch.gadgets.arith import DigitAdder
from qwengpu.backend_torch.gadgets.core import Form, MlpWriter, bit_of, const, put, \
    put_analog, value_of
from qwengpu.backend_torch.residual import Group, ResidualLayout, Word

ANALOG_SCALE = 2.0 ** -16


def mul_reference(a: int, b: int, width: int, part: str) -> int:
    """`lo`, `hi_u` or `hi_s` of `a * b` for `width`-bit words (PTX `mul.lo/.hi`)."""
    mask = (1 << width) - 1
    if part == "hi_s":
        sa = a - (1 << width) if a >> (width - 1) else a
        sb = b - (1 << width) if b >> (width - 1) else b
        return ((sa * sb) >> width) & mask
    product = a * b
    return (product >> width) & mask if part == "hi_u" else product & mask


class MultiplyWords(Gadget):
    """`lo = (a * b + addend) mod 2^w` and/or `hi` = the high word of `a * b` (see module doc).

    `signed` selects the signed high word (`mul.hi.s32`); the low word is the same either
    way.  `addend` (a word) makes it `mad.lo` and needs `hi is None`."""

    layers = 6

    def __init__(self, layout: ResidualLayout, a: Word, b: Word, *, lo: Word | None = None,
                 hi: Word | None = None, signed: bool = False, addend: Word | None = None,
                 name: str = "mul"):
        if lo is None and hi is None:
            raise ValueError(f"{name}: nothing to compute")
        if addend is not None and hi is not None:
            raise ValueError(f"{name}: an addend only with the low word (mad.lo)")
        self.name, self.a, self.b, self.signed, self.addend = name, a, b, signed, addend
        self.n = len(a.digits)
        self.columns = self.n * (2 if hi is not None else 1)
        analog = layout.alloc_analog
        self.q = [analog(f"{name}.q{k}", ANALOG_SCALE) for k in range(self.columns)]
        self.s = [analog(f"{name}.s{k}", ANALOG_SCALE) for k in range(self.columns)]
        self.h = [layout.alloc(f"{name}.h{k}", 3) for k in range(self.columns)]
        self.q_max = self._column_bounds()
        alpha = [value_of(self.s[k]) - value_of(self.h[k]) * 16.0 for k in range(self.columns)]
        beta = [value_of(self.h[k - 1]) if k else Form() for k in range(self.columns)]
        out: list[Group | None] = list(lo.digits) if lo is not None else [None] * self.n
        if hi is not None:
            out += list(hi.digits)
        self.adder = DigitAdder(layout, alpha, beta, out, name=f"{name}.add")
        self.lo, self.hi = lo, hi

    def _bits(self, word: Word) -> list[Form]:
        return [bit_of(word.digits[p // 4], p % 4) for p in range(4 * len(word.digits))]

    def _column_terms(self) -> dict[tuple[int, int], Form]:
        """(bit i of a, column k) -> the form of b it multiplies into column k."""
        terms: dict[tuple[int, int], Form] = {}
        b_bits = self._bits(self.b)
        for i in range(4 * self.n):
            for j, b_bit in enumerate(b_bits):
                k = (i + j) // 4
                if k < self.columns:
                    terms[(i, k)] = terms.get((i, k), Form()) + b_bit * float(2 ** ((i + j) % 4))
        return terms

    def _sign_corrections(self) -> list[tuple[Form, Form, int]]:
        """(condition, value, column) of the signed high word's corrections."""
        if not (self.signed and self.columns > self.n):
            return []
        corrections = []
        for x, y in ((self.a, self.b), (self.b, self.a)):
            sign = bit_of(x.digits[-1], 3)
            for j, digit in enumerate(y.digits):
                value = const(15.0 + (j == 0)) - value_of(digit)     # ~y + 1, digit by digit
                corrections.append((sign, value, self.n + j))
        return corrections

    def _column_bounds(self) -> list[int]:
        """The largest value each column sum can take."""
        bounds = [0] * self.columns
        for i in range(4 * self.n):
            for j in range(4 * self.n):
                if (i + j) // 4 < self.columns:
                    bounds[(i + j) // 4] += 2 ** ((i + j) % 4)
        for _, _, k in self._sign_corrections():
            bounds[k] += 16
        if self.addend is not None:
            for k in range(self.n):
                bounds[k] += 15
        return bounds

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        products, split, split_again = writers[:3]
        for (i, k), form in sorted(self._column_terms().items()):
            products.gated(bit_of(self.a.digits[i // 4], i % 4), form, put_analog(self.q[k]))
        for condition, value, k in self._sign_corrections():
            products.gated(condition, value, put_analog(self.q[k]))
        if self.addend is not None:
            for k, digit in enumerate(self.addend.digits):
                products.linear(value_of(digit), put_analog(self.q[k]))
        for k in range(self.columns):
            q = value_of(self.q[k])
            split.linear(q, put_analog(self.s[k]) - put_analog(self.q[k]))
            for m in range(1, self.q_max[k] // 16 + 1):
                carry = put_analog(self.s[k + 1]) if k + 1 < self.columns else Form()
                split.step(q, 16 * m - 0.5, carry - put_analog(self.s[k], 16.0))
            s = value_of(self.s[k])
            split_again.step(s, 15.5, put(self.h[k], 1) - put(self.h[k], 0))
            split_again.step(s, 31.5, put(self.h[k], 2) - put(self.h[k], 1))
            split_again.bias(put(self.h[k], 0))
        self.adder.emit(writers[3:])
        for k in range(self.columns):
            writers[5].linear(value_of(self.s[k]), -put_analog(self.s[k]))

    def written(self):
        return [list(self.q), list(self.s), list(self.h)] + self.adder.written()
