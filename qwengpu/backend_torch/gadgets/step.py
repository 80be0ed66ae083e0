"""The restoring step and the AND of terms: what every digit gadget of the compiler is made of.

`step(writer, form, threshold, output)` adds `output` to the residual when `form >=
threshold` (a pair of SwiGLU units, `core.MlpWriter.step`, with its offset read from the
constant group so that it stays exact in bf16); `step_all(writer, terms, output)` adds
`output` when every term holds, a term being (group, accepted values, domain): one step on
the sum of the terms' forms (several where a binary group's accepted set needs several
cubes).  An input of a gadget is an `Input`: `(group, domain, None)` for a residual value, or
`(None, (value,), value)` for a constant.  The writer carries `constant_group` (a group with
one hot entry on every token) and `exact_groups` (embedding values, always exactly clean).
"""

from __future__ import annotations

import itertools
from typing import Optional, Sequence

from qwengpu.backend_torch.cubes import disjoint_cubes
from qwengpu.backend_torch.gadgets.core import Form, MlpWriter, const, cube_form, entries
from qwengpu.backend_torch.residual import BINARY, Group

# A gadget's input: (group, domain, None) for a value in the residual, (None, (c,), c) for a
# constant c.
Input = tuple[Optional[Group], Sequence[int], Optional[int]]


def term_forms(group: Group, accepted, domain) -> list[Form]:
    """Forms that are 1 when `group` holds one of `accepted` (a one-hot group: one form; a
    binary group: one per disjoint cube, values outside `domain` being free)."""
    if group.kind == BINARY:
        cubes = disjoint_cubes(accepted, domain, group.size)
        return [cube_form(group, cube) for cube in cubes]
    return [entries(group, [v for v in accepted if 0 <= v < group.size])]


def step(writer: MlpWriter, form, threshold: float, output, gap: float = 0.5) -> None:
    """`MlpWriter.step` with the pair's offset `B` read from a constant group instead of ONE.

    The two units of a restoring step differ only by `B` in their pre-activation.  Written on
    ONE, `B` is added to a constant of the size of `scale * threshold`, and both are rounded
    separately in bf16 (a threshold of 30 puts the constant near 4000, where bf16's spacing is
    32 and `B` is 48): the step's output would be 1 +- 0.7.  Here the large part is the same
    in both rows (rounded the same way, cancelling in the difference) and `+-B/2` comes from
    the dims of `tok.bos` (whose entries sum to 1 on every token), so the output is 1 within
    bf16's relative precision."""
    drive = writer.drive
    scale = drive.kappa / gap
    base = Form(form) * scale + const(-scale * threshold)
    constant = writer.constant_group
    half = Form({constant.dim(v): drive.step_b / 2 / constant.scale
                 for v in range(constant.size)})
    plus, minus = writer._take(2)
    for unit, gate, sign in ((plus, base + half, 1.0), (minus, base - half, -1.0)):
        writer._row(writer._gate, unit, gate)
        writer._row(writer._up, unit, const(1.0))
        writer._column(unit, Form(output) * (sign / drive.step_b))


# An AND term on an embedding value (always exactly +-1 or one-hot) weighs this much: where
# it is false, the other terms cannot outweigh it even if they are far from clean (values
# computed from a prompt token's scratch are; a binary cube form adds every bit's deviation).
EXACT_WEIGHT = 8.0


def step_all(writer: MlpWriter, terms: list[tuple[Group, set, Sequence[int]]],
              output: Form) -> None:
    """`output` when every (group, accepted values, domain) term holds; no terms: always.
    One step, or one per combination of cubes where binary groups need several; terms on
    embedding values weigh `EXACT_WEIGHT`."""
    if not terms:
        writer.bias(output)
        return
    choices = [term_forms(group, accepted, domain) for group, accepted, domain in terms]
    exact = getattr(writer, "exact_groups", set())
    weights = [EXACT_WEIGHT if group.name in exact and len(terms) > 1 else 1.0
               for group, _, _ in terms]
    for parts in itertools.product(*choices):
        form = Form()
        for part, weight in zip(parts, weights):
            form = form + part * weight
        step(writer, form, sum(weights) - 0.5, output)
