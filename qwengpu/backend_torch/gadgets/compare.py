"""Comparisons of two words into bits, in 2 MLP layers (PTX `setp` names).

Layer 1 computes the carry states (kill / propagate / generate, see `arith`) of `a + ~b`, digit
by digit: digit `i` propagates exactly when `a_i == b_i`, generates when `a_i > b_i`, kills
when `a_i < b_i`.  With `D = sum_i 2^i (generate_i - kill_i)` the sign of `D` is the sign of
`a - b` (the most significant differing digit dominates), so layer 2 writes each requested
bit with one step on `D`:

    hs (a >= b)  D >= 0      hi (a > b)  D > 0      lo = not hs     ls = not hi
    eq           all digits propagate               ne = not eq

The signed comparisons (`ge gt lt le`) are the unsigned ones on `a ^ 0x80..0` and
`b ^ 0x80..0`; flipping the sign bit only relabels the top digit's one-hot entries, so they
need one more carry state (the top digit's, flipped) and nothing else.

Cost: layer 1 4 units per digit (+4 for signed, +1 bias), layer 2 2 units per output bit
(+1 bias); 3 dims per digit of temporaries plus 2 per output bit.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from qwengpu.backend_torch.gadgets import Gadget
from qwengpu.backend_torch.gadgets.arith import PROPAGATE, emit_bit, emit_carry_states, \
    lookahead
from qwengpu.backend_torch.gadgets.core import Form, MlpWriter, const, entries, weighted
from qwengpu.backend_torch.residual import Group, ResidualLayout, Word

UNSIGNED = {"hs", "hi", "lo", "ls"}
SIGNED = {"ge", "gt", "lt", "le"}
EQUALITY = {"eq", "ne"}
OPERATORS = UNSIGNED | SIGNED | EQUALITY


def reference(op: str, a: int, b: int, width: int = 32) -> int:
    """The Python meaning of `op` on `width`-bit words (through `qwengpu.dsl.semantics`)."""
    from qwengpu.dsl.semantics import evaluate

    widths = (width, width)
    table = {"eq": ("eq", a, b), "ne": ("ne", a, b),
             "lo": ("ult", a, b), "ls": ("ule", a, b), "hi": ("ult", b, a), "hs": ("ule", b, a),
             "lt": ("slt", a, b), "le": ("sle", a, b), "gt": ("slt", b, a), "ge": ("sle", b, a)}
    name, x, y = table[op]
    return evaluate(name, (x, y), widths)


class CompareWords(Gadget):
    """Bits `outputs[op] = a op b` for ops among `OPERATORS` (see module doc)."""

    layers = 2

    def __init__(self, layout: ResidualLayout, a: Word, b: Word, outputs: Mapping[str, Group],
                 name: str = "compare"):
        unknown = sorted(set(outputs) - OPERATORS)
        if unknown:
            raise ValueError(f"{name}: unknown comparisons {unknown}")
        if len(a.digits) != len(b.digits):
            raise ValueError(f"{name}: operands of different widths")
        self.name, self.a, self.b, self.outputs = name, a, b, dict(outputs)
        n = len(a.digits)
        self.sums = [_difference_sum(a.digits[i], b.digits[i], flip=False) for i in range(n)]
        self.states = [layout.alloc(f"{name}.state{i}", 3) for i in range(n)]
        self.signed_top = None
        if SIGNED & set(outputs):
            self.sums.append(_difference_sum(a.digits[-1], b.digits[-1], flip=True))
            self.signed_top = layout.alloc(f"{name}.state_signed_top", 3)

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        first, second = writers
        states = self.states + ([self.signed_top] if self.signed_top else [])
        emit_carry_states(first, self.sums, states)
        for op, bit in sorted(self.outputs.items()):
            form, threshold = self._test(op)
            emit_bit(second, form, threshold, bit)

    def _test(self, op: str) -> tuple[Form, float]:
        """The form and threshold whose step is the bit `op` (D is an integer; see doc)."""
        if op in EQUALITY:
            equal = Form()
            for state in self.states:
                equal = equal + entries(state, [PROPAGATE])
            n = len(self.states)
            return (equal, n - 0.5) if op == "eq" else (-equal, 0.5 - n)
        top = self.signed_top if op in SIGNED else self.states[-1]
        difference = lookahead(self.states[:-1] + [top])          # sign of a - b
        at_least = {"hs": -0.5, "ge": -0.5, "hi": 0.5, "gt": 0.5}     # D >= 0, D > 0
        at_most = {"lo": 0.5, "lt": 0.5, "ls": -0.5, "le": -0.5}      # D < 0, D <= 0
        if op in at_least:
            return difference, at_least[op]
        return -difference, at_most[op]

    def written(self):
        first = self.states + ([self.signed_top] if self.signed_top else [])
        return [first, list(self.outputs.values())]


def _difference_sum(a: Group, b: Group, flip: bool) -> Form:
    """`a_i + (15 - b_i)` of one digit pair; `flip` reads both with their top bit inverted."""
    relabel = (lambda v: v ^ 8) if flip else (lambda v: v)
    return weighted(a, relabel) + const(15.0) - weighted(b, relabel)
