"""Gate families: the MLP units whose gate rows read the same inputs, their gate sums taken
as one small dense product.

A compiled machine's MLP gate rows come in families: a layer's units that test one field
of the residual all read that field's dims, and differ only in their weights (the min
build has 3,369 families of 8 units or more, holding 101 K of its 134 K units; in the
machine spliced into the 2B-dims stand-in, whose rows all read the text gate's dims too,
about 60 terms a row, 77% of the gate weights are in such families).  Row by row (`kernels.mlp_add`'s CSR) each
term costs an index, a gathered input and a scalar multiply-add per column.  A family
instead keeps its weights as a dense operand [inputs, units] in panels of 16 units
(`dense_kernels.pack_panels`) and multiplies them in register blocks (`register_blocks`)
that read its inputs, `x[inputs[j], c]`, straight from x: each input is loaded once for 16
units, and every unit's sum is `sum over j of weight[j, unit] * x[inputs[j], c]`, j
ascending, which is the CSR row's own sum (its terms in the same order, each a multiply
then an add, from 0): the same bits.

`GateFamilies.of` finds a layer's families when the checkpoint is read; `family_gates`
writes their sums into the MLP's gate sums before the units are walked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from qwengpu.engine.dense_kernels import PANEL_ROWS, add_panel_terms, pack_panels

# the fewest units that share a gate row's inputs for them to be taken as a family (fewer,
# and most of a panel's 16 rows would be padding)
FAMILY_UNITS = 8


@dataclass
class GateFamilies:
    """A layer's gate families, flat for the kernels: family f's inputs are
    `inputs[table[f, 0]:table[f, 1]]`, its units `units[table[f, 2]:table[f, 3]]` (ascending),
    its weights `weights[table[f, 4]:...]`, packed panels [ceil(units / PANEL_ROWS), inputs,
    PANEL_ROWS].  `in_family[u]`: unit u's gate sum comes from its family."""

    table: np.ndarray          # int64 [families, 5]
    inputs: np.ndarray         # int64
    units: np.ndarray          # int64
    weights: np.ndarray        # float32
    in_family: np.ndarray      # bool [units]

    @classmethod
    def of(cls, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray) -> "GateFamilies":
        """The families of a CSR gate (units that read exactly the same inputs, at least
        `FAMILY_UNITS` of them, every weight finite: `family_gates` leaves out an input
        that is 0, and `inf * 0` is NaN)."""
        units = indptr.shape[0] - 1
        members: dict[bytes, list[int]] = {}
        for unit in range(units):
            key = indices[indptr[unit]:indptr[unit + 1]].tobytes()
            if key:
                members.setdefault(key, []).append(unit)
        table, inputs, family_units, weights = [], [], [], []
        in_family = np.zeros(units, dtype=np.bool_)
        input_count = unit_count = weight_count = 0
        for family in members.values():
            if len(family) < FAMILY_UNITS:
                continue
            first = family[0]
            reads = indices[indptr[first]:indptr[first + 1]].astype(np.int64)
            rows = np.stack([data[indptr[unit]:indptr[unit + 1]] for unit in family])
            if not np.isfinite(rows).all():
                continue
            panels = pack_panels(np.ascontiguousarray(rows.T, dtype=np.float32))
            table.append((input_count, input_count + reads.size, unit_count,
                          unit_count + len(family), weight_count))
            inputs.append(reads)
            family_units.append(np.array(family, dtype=np.int64))
            weights.append(panels.reshape(-1))
            in_family[family] = True
            input_count += reads.size
            unit_count += len(family)
            weight_count += panels.size

        def joined(parts, dtype):
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

        return cls(np.array(table, dtype=np.int64).reshape(len(table), 5),
                   joined(inputs, np.int64), joined(family_units, np.int64),
                   joined(weights, np.float32), in_family)

    @classmethod
    def none(cls, units: int) -> "GateFamilies":
        """No families (a dense gate, or none wanted)."""
        return cls(np.zeros((0, 5), dtype=np.int64), np.zeros(0, dtype=np.int64),
                   np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32),
                   np.zeros(units, dtype=np.bool_))

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """What `family_gates` and `kernels.mlp_add` take, in their order."""
        return self.table, self.inputs, self.units, self.weights, self.in_family


@njit(cache=True, nogil=True)
def family_gates(table, inputs, units, weights, x, nonzero, gates):
    """gates[u, c] = unit u's gate sum on column c of x, for every unit in a family (the
    others' rows are left as they are): a family's panels of 16 units by eight, four, two
    or one columns in register blocks that read the family's inputs straight from x.

    An input that is not `nonzero` (`kernels.nonzero_rows`: exactly 0 in every column) is
    left out: its terms are `w * 0`, ±0 (a family's weights are finite), and a sum that
    starts at +0 never becomes -0 (in round-to-nearest `a + b` is -0 only when both are),
    so adding ±0 to it changes no bit.  (In a spliced machine every gate row reads the text
    gate's dims, 0 on machine tokens.)"""
    columns = x.shape[1]
    most_reads = 0
    for family in range(table.shape[0]):
        most_reads = max(most_reads, table[family, 1] - table[family, 0])
    panel_rows = np.empty(most_reads, dtype=np.int64)
    x_rows = np.empty(most_reads, dtype=np.int64)
    running = np.empty((columns, PANEL_ROWS), dtype=np.float32)
    for family in range(table.shape[0]):
        first_input, last_input = table[family, 0], table[family, 1]
        first_unit, last_unit = table[family, 2], table[family, 3]
        reads, count = last_input - first_input, last_unit - first_unit
        terms = 0
        for j in range(reads):                        # written always, kept where nonzero
            source = inputs[first_input + j]
            panel_rows[terms] = j
            x_rows[terms] = source
            terms += nonzero[source]
        panel_size = reads * PANEL_ROWS
        for p in range(-(-count // PANEL_ROWS)):
            start = table[family, 4] + p * panel_size
            panel = weights[start:start + panel_size].reshape((reads, PANEL_ROWS))
            running[:, :] = 0.0
            if terms:                                  # else every sum is +0
                add_panel_terms(panel, x, running, 0, terms, panel_rows, x_rows)
            first_member = first_unit + p * PANEL_ROWS
            for r in range(min(PANEL_ROWS, count - p * PANEL_ROWS)):
                unit = np.uint64(units[first_member + r])
                for c in range(columns):
                    gates[unit, c] = running[c, r]
