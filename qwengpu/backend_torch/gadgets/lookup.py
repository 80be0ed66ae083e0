"""Table lookups: any function of one or two one-hot groups into a one-hot group, in one layer.

`TableLookup(src, dst, table)`: `dst = table[src]`.  One restoring step per output value `w`
that occurs: `[sum of src entries v with table[v] == w >= 1/2] -> w`, so the cost is
2 units per distinct output value (32 for a hex digit to hex digit table), plus no bias.

`PairLookup(a, b, dst, table)`: `dst = table(a, b)`.  For every value `x` of one input and
every output `w` that occurs in its row: `[a_x + sum of b entries y with table(x, y) == w
>= 3/2] -> w`.  The row-wise grouping costs 2 units per distinct (row, output) pair, iterating
over whichever input gives fewer: 512 for a full 16 x 16 -> 16 table, 162 for `and`/`or` of
two hex digits.  All forms are sums of at most two hot entries, so these lookups keep their
margins in bf16 as well.
"""

from __future__ import annotations

from typing import Callable, Sequence

from qwengpu.backend_torch.gadgets import Gadget
from qwengpu.backend_torch.gadgets.core import MlpWriter, entries, put
from qwengpu.backend_torch.residual import Group


class TableLookup(Gadget):
    """`dst = table[src]` for one-hot groups (see the module doc)."""

    layers = 1

    def __init__(self, src: Group, dst: Group, table: Sequence[int] | Callable[[int], int],
                 name: str = "lookup"):
        self.src, self.dst, self.name = src, dst, name
        self.table = [table(v) if callable(table) else table[v] for v in range(src.size)]
        if any(not 0 <= w < dst.size for w in self.table):
            raise ValueError(f"{name}: table value outside {dst.name}")

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        (writer,) = writers
        for w in sorted(set(self.table)):
            sources = [v for v, out in enumerate(self.table) if out == w]
            writer.step(entries(self.src, sources), 0.5, put(self.dst, w))

    def written(self):
        return [[self.dst]]


class PairLookup(Gadget):
    """`dst = table(a, b)` for one-hot groups (see the module doc)."""

    layers = 1

    def __init__(self, a: Group, b: Group, dst: Group, table: Callable[[int, int], int],
                 name: str = "pair_lookup"):
        self.a, self.b, self.dst, self.name = a, b, dst, name
        self.table = {(x, y): table(x, y) for x in range(a.size) for y in range(b.size)}
        if any(not 0 <= w < dst.size for w in self.table.values()):
            raise ValueError(f"{name}: table value outside {dst.name}")

    def _rows(self, by_a: bool):
        """(row group, row value, column group, {output: column values}) per row."""
        outer, inner = (self.a, self.b) if by_a else (self.b, self.a)
        for x in range(outer.size):
            outputs: dict[int, list[int]] = {}
            for y in range(inner.size):
                w = self.table[(x, y) if by_a else (y, x)]
                outputs.setdefault(w, []).append(y)
            yield outer, x, inner, outputs

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        (writer,) = writers
        count = {by_a: sum(len(out) for *_, out in self._rows(by_a)) for by_a in (True, False)}
        by_a = count[True] <= count[False]
        for outer, x, inner, outputs in self._rows(by_a):
            for w, ys in sorted(outputs.items()):
                writer.step(entries(outer, [x]) + entries(inner, ys), 1.5, put(self.dst, w))

    def written(self):
        return [[self.dst]]
