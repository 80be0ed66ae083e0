"""Word addition and subtraction with carry lookahead, in 3 MLP layers.

The operands are hex digits given as forms `alpha_i`, `beta_i` (for words held in one-hot
groups, the digit's value; for subtraction `15 - beta_i` and a carry in of 1; the multiplier
passes its own column sums).  Let `S_i = alpha_i + beta_i` (plus the carry in at digit 0);
every `S_i <= 31`, so every carry is 0 or 1.

1. **carry states** — per digit a 3-entry group `kill / propagate / generate` from the steps
   `[S_i >= 15]` and `[S_i >= 16]` (4 units per digit, one bias unit).
2. **carries** — with `d_j = generate_j - kill_j` in {-1, 0, 1}, the carry into digit `i` is
   `[D_i > 0]` for `D_i = sum_{j<i} 2^j d_j`: the highest digit below `i` that is not
   `propagate` decides, and the powers of two make it dominate the rest.  One step per carry
   (2 units).  Words longer than 8 digits (the 64-bit product of `multiply`) use carry select
   on their upper 8 digits: local carries for a block carry in of 0 and of 1, combined in layer
   3 with the carry into digit 8 as `[2 c0 + c8 + c1 >= 2]`, so no form weighs a state by more
   than 2^7.
3. **sum digits** — digit `i` is `(S_i - 16 generate_i + carry_i) mod 16`, a thermometer of
   16 steps on that form (32 units per digit, one bias unit).

Cost of a 32-bit add or sub: 33 + 15 + 257 = 305 units (+2 for a carry out), 3 MLP layers,
38 temporary dims (8 carry states of 3, 7 carry bits of 2).  `carry_out` is the carry out of the
top digit (for subtraction: 1 when there is no borrow, i.e. `a >= b` unsigned).
"""

from __future__ import annotations

from typing import Sequence

from qwengpu.backend_torch.gadgets import Gadget
from qwengpu.backend_torch.gadgets.core import Form, MlpWriter, const, entries, put, value_of
from qwengpu.backend_torch.residual import Group, ResidualLayout, Word

KILL, PROPAGATE, GENERATE = 0, 1, 2
BLOCK = 8          # digits whose carries come straight from one D form


def emit_carry_states(writer: MlpWriter, sums: Sequence[Form], states: Sequence[Group]) -> None:
    """Layer 1: `states[i]` = kill/propagate/generate of digit sum `sums[i]` (0..31)."""
    for digit_sum, state in zip(sums, states):
        writer.step(digit_sum, 14.5, put(state, PROPAGATE) - put(state, KILL))
        writer.step(digit_sum, 15.5, put(state, GENERATE) - put(state, PROPAGATE))
        writer.bias(put(state, KILL))


def lookahead(states: Sequence[Group]) -> Form:
    """`D = sum_j 2^j (generate_j - kill_j)`: the carry out of `states` is `[D > 0]`."""
    form = Form()
    for j, state in enumerate(states):
        form = form + (entries(state, [GENERATE]) - entries(state, [KILL])) * float(2 ** j)
    return form


def emit_bit(writer: MlpWriter, form: Form, threshold: float, bit: Group, gap: float = 0.5
             ) -> None:
    """Write the 2-dim bit group `bit` = `[form >= threshold]`."""
    writer.step(form, threshold, put(bit, 1) - put(bit, 0), gap)
    writer.bias(put(bit, 0))


class DigitAdder(Gadget):
    """`out = sum_i 16^i (alpha_i + beta_i)` (+ carry in) for digit forms (see module doc).

    `carry_in` is 0, 1 or a bit group; `out` a word, or per digit a group or None (digits not
    written, as the multiplier's low half when only the high word is wanted)."""

    layers = 3

    def __init__(self, layout: ResidualLayout, alpha: Sequence[Form], beta: Sequence[Form],
                 out: Word | Sequence[Group | None] | None, *, carry_in: int | Group = 0,
                 carry_out: Group | None = None, name: str = "add"):
        if len(alpha) != len(beta) or not 1 <= len(alpha) <= 2 * BLOCK:
            raise ValueError(f"{name}: need 1..{2 * BLOCK} digits in both operands")
        self.name, self.carry_out = name, carry_out
        self.n = len(alpha)
        # out_digits[i]: where sum digit i goes (None: not written)
        digits = out.digits if isinstance(out, Word) else (out or [None] * self.n)
        if len(digits) != self.n:
            raise ValueError(f"{name}: {len(digits)} output digits for {self.n}-digit operands")
        self.out_digits = list(digits)
        cin = carry_in if isinstance(carry_in, Form) else (
            entries(carry_in, [1]) if isinstance(carry_in, Group) else const(carry_in))
        self.sums = [alpha[i] + beta[i] + (cin if i == 0 else Form()) for i in range(self.n)]
        self.states = [layout.alloc(f"{name}.state{i}", 3) for i in range(self.n)]
        low = min(self.n, BLOCK)
        # carries[i]: the carry into digit i (1..BLOCK); upper block: select pairs.
        self.carries = {i: layout.alloc_bit(f"{name}.carry{i}") for i in range(1, low)}
        if self.n > BLOCK:
            self.carries[BLOCK] = layout.alloc_bit(f"{name}.carry{BLOCK}")
        self.select = {(i, c): layout.alloc_bit(f"{name}.carry{i}_if{c}")
                       for i in range(BLOCK + 1, self.n + (carry_out is not None))
                       for c in (0, 1)}

    def _carry_score(self, i: int) -> tuple[Form, float]:
        """A form and threshold that say 'carry into digit i' (for layer 3)."""
        if i == 0:
            return Form(), 1.0
        if i <= BLOCK:
            return entries(self.carries[i], [1]), 1.0
        return (entries(self.select[(i, 0)], [1]) * 2.0 + entries(self.carries[BLOCK], [1])
                + entries(self.select[(i, 1)], [1])), 2.0

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        first, second, third = writers
        emit_carry_states(first, self.sums, self.states)
        for i, bit in self.carries.items():
            emit_bit(second, lookahead(self.states[:i]), 0.5, bit)
        for (i, c), bit in self.select.items():
            local = lookahead(self.states[BLOCK:i])
            emit_bit(second, local, 0.5 - c, bit)     # carry in 1: D_local >= 0 suffices
        if self.carry_out is not None:
            if self.n <= BLOCK:
                emit_bit(second, lookahead(self.states), 0.5, self.carry_out)
            else:
                score, need = self._carry_score(self.n)
                emit_bit(third, score, need - 0.5, self.carry_out)
        for i, digit in enumerate(self.out_digits):
            if digit is None:
                continue
            local = self.sums[i] - entries(self.states[i], [GENERATE]) * 16.0
            score, need = self._carry_score(i)
            # [local + carry >= k]  <=>  weight * (local - k + 1) + score >= need - 1/2
            weight = 1.0 if i <= BLOCK else 4.0
            form = local * weight + score
            for k in range(1, 17):
                third.step(form, weight * (k - 1) + need - 0.5,
                           put(digit, k % 16) - put(digit, k - 1))
            third.bias(put(digit, 0))

    def written(self):
        second = list(self.carries.values()) + list(self.select.values())
        third = [digit for digit in self.out_digits if digit is not None]
        if self.carry_out is not None:
            (second if self.n <= BLOCK else third).append(self.carry_out)
        return [list(self.states), second, third]


def digit_values(word: Word) -> list[Form]:
    """The digit forms of a one-hot word."""
    return [value_of(group) for group in word.digits]


def complement_digits(word: Word) -> list[Form]:
    """The digit forms of `~word` (each digit `15 - v`)."""
    return [const(15.0) - value_of(group) for group in word.digits]


def AddWords(layout: ResidualLayout, a: Word, b: Word, out: Word, *, carry_in: int | Group = 0,
             carry_out: Group | None = None, name: str = "add") -> DigitAdder:
    """`out = a + b (+ carry_in) mod 2^w`; `carry_out` (a bit) is the carry out of the top."""
    return DigitAdder(layout, digit_values(a), digit_values(b), out, carry_in=carry_in,
                      carry_out=carry_out, name=name)


def SubWords(layout: ResidualLayout, a: Word, b: Word, out: Word, *,
             carry_out: Group | None = None, name: str = "sub") -> DigitAdder:
    """`out = a - b mod 2^w` as `a + ~b + 1`; `carry_out` is 1 when `a >= b` (no borrow)."""
    return DigitAdder(layout, digit_values(a), complement_digits(b), out, carry_in=1,
                      carry_out=carry_out, name=name)
