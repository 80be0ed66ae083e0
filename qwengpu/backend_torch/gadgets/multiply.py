"""Multiplication's analog step: `mul_column`, one column of a product's partial sums held
in one residual dim (the graph's `mul_column` digits; `lower-digits` turns a multiply into
columns, carries and digit sums, docs/passes.md).

The column's number is `sum a_i b_j 2^((i+j) % 4)` over the bit pairs that meet in it: a
gated unit per bit of `a` (its 0/1 condition) times the linear form of b's bits; the output
dim holds the number times `ops.ANALOG_SCALE` (small, so its square does not move the norm
ledger), read by the digit sums that follow, and erased by the layer after its last reader.
"""

from __future__ import annotations

from typing import Sequence

from qwengpu.backend_torch.gadgets.core import Form, MlpWriter, bit_of, const, put_analog
from qwengpu.backend_torch.gadgets.step import Input
from qwengpu.backend_torch.residual import Group
from qwengpu.ir.digits import DIGIT_BITS


def mul_column(writer: MlpWriter, column: int, count: int, inputs: Sequence[Input],
               out: Group) -> None:
    """Column `column` of a product's partial sums into the analog `out`: the inputs are
    a's `count` digits then b's; per bit `a_i` (a constant bit: a linear unit, or nothing)
    one gated unit whose value is the form of b's bits it meets in the column, weighted
    `2^((i+j) % 4)`."""
    a, b = list(inputs)[:count], list(inputs)[count:]
    b_bits = []                    # bit j of b as a form (a constant digit: a constant)
    for group, _, value in b:
        b_bits += [const((value >> bit) & 1) if group is None else bit_of(group, bit)
                   for bit in range(DIGIT_BITS)]
    for p, (group, _, value) in enumerate(a):
        for bit in range(DIGIT_BITS):
            i = DIGIT_BITS * p + bit
            form = Form()
            for j, b_bit in enumerate(b_bits):
                if (i + j) // DIGIT_BITS == column:
                    form = form + b_bit * float(2 ** ((i + j) % DIGIT_BITS))
            form = Form({dim: c for dim, c in form.items() if c})
            if not form:
                continue
            if group is None:
                if (value >> bit) & 1:
                    writer.linear(form, put_analog(out))
                continue
            condition = bit_of(group, bit)
            if condition:
                writer.gated(condition, form, put_analog(out))
