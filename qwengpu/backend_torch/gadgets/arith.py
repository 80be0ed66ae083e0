"""Digit arithmetic: `digit_sum` (the graph's `sum` digits: adders' digit sums, comparisons,
any table of a weighted sum) and `carry` (the carry out of a digit addition).
"""

from __future__ import annotations

from typing import Sequence

from qwengpu.backend_torch.gadgets.core import Form, MlpWriter, const, put, value_of, weighted
from qwengpu.backend_torch.gadgets.step import Input, step, step_all
from qwengpu.backend_torch.residual import ANALOG, Group
from qwengpu.ir.digits import affine_fit, sum_values


def digit_sum(writer: MlpWriter, inputs: Sequence[Input], terms, table_of, out: Group) -> None:
    """`table_of(S)` into `out`, `S = sum_k terms[k][x_k]` over the inputs' values: the sum
    is a linear form (a one-hot input's term is a weighted read, a binary one's must be
    affine in the bits, an analog one's affine in its number); a bias writes the table at
    the lowest reachable total, then one step per breakpoint moves the hot entry."""
    form, domains, used = Form(), [], []
    for (group, domain, value), term in zip(inputs, terms):
        if group is None:
            form = form + const(term[value])
            domains.append((value,))
        elif group.kind == ANALOG:
            line = affine_fit([(v, term[v]) for v in sorted(domain)])
            if line is None:
                raise ValueError(f"{group.name}: an analog value read through a term that is "
                                 "not affine")
            form = form + value_of(group) * float(line[0]) + const(line[1])
            domains.append(domain)
        else:
            form = form + weighted(group, lambda v, t=term: t[v] if v < len(t) else 0,
                                   domain)
            domains.append(domain)
        used.append(term)
    totals = sorted(sum_values(used, domains))
    writer.bias(put(out, table_of(totals[0])))
    for s, t in zip(totals, totals[1:]):
        if table_of(s) != table_of(t):
            step(writer, form, (s + t) / 2, put(out, table_of(t)) - put(out, table_of(s)),
                 gap=(t - s) / 2)


def carry(writer: MlpWriter, inputs: Sequence[Input], out: Group) -> None:
    """The carry out of a digit addition, from the carry in and each digit's class (0 kill,
    1 propagate, 2 generate; `qwengpu.ir.digits`): 1 when it originates somewhere (the carry
    in, or a generate) and only propagates follow; the origins exclude each other, so one
    AND step each, on a bias of 0."""
    items = list(inputs)
    origins = [(items[0], 1)] + [(item, 2) for item in items[1:]]
    writer.bias(put(out, 0))
    for position, (origin, wanted) in enumerate(origins):
        required = [(origin, wanted)] + [(item, 1) for item in items[position + 1:]]
        terms, possible = [], True
        for (group, domain, value), need in required:
            if group is None:
                possible &= value == need
            elif need in domain:
                terms.append((group, {need}, domain))
            else:
                possible = False
        if possible:
            step_all(writer, terms, put(out, 1) - put(out, 0))
            if not terms:
                return
