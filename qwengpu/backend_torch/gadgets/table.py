"""Any function of digit inputs as a table: the gadget of `lut`, shared luts and the plan's
`fn` ops.

`table(writer, inputs, fn, out)` writes `fn(*values)` into `out` (a group, or a list of groups
when `fn` returns one value per group).  Rows go over every input but the one with the most
values; within a row, one AND step per distinct output value over the inner input's values
that give it (2 units each), so a row whose output does not depend on the inner input is
one step and a constant function is one bias.
"""

from __future__ import annotations

import itertools
from typing import Sequence

from qwengpu.backend_torch.gadgets.core import Form, MlpWriter, put
from qwengpu.backend_torch.gadgets.step import Input, step_all


def table(writer: MlpWriter, inputs: Sequence[Input], fn, out) -> None:
    """Rows over every input but the widest; `out` a group, or a list of groups when `fn`
    returns one value per group (luts sharing their inputs share the AND units)."""
    if isinstance(out, list):
        outs = out

        def put_all(values) -> Form:
            form = Form()
            for group, value in zip(outs, values):
                form = form + put(group, value)
            return form
    else:
        def put_all(value) -> Form:
            return put(out, value)
    items = list(inputs)
    variable = [i for i, (g, _, _) in enumerate(items) if g is not None]
    base = [value for _, _, value in items]
    if not variable:
        writer.bias(put_all(fn(*base)))
        return
    inner = max(variable, key=lambda i: (len(items[i][1]), -i))
    outer = [i for i in variable if i != inner]
    for combo in itertools.product(*(items[i][1] for i in outer)):
        values = list(base)
        for i, v in zip(outer, combo):
            values[i] = v
        by_output: dict[int, set] = {}
        for y in items[inner][1]:
            values[inner] = y
            by_output.setdefault(fn(*values), set()).add(y)
        for w, ys in sorted(by_output.items()):
            terms = [(items[i][0], {v}, items[i][1]) for i, v in zip(outer, combo)]
            if len(by_output) > 1:
                terms.append((items[inner][0], ys, items[inner][1]))
            if not terms:
                writer.bias(put_all(w))
            else:
                step_all(writer, terms, put_all(w))


BF16_SAFE_RANGE = 16
