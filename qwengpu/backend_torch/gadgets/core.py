"""The three kinds of SwiGLU unit every gadget is made of, and the writer that places them.

A Qwen3.5 MLP computes `down(silu(gate x) * up x)` on `x = h / rms`.  A *form* (`Form`) is a
linear function of the residual `h` (a dict `dim -> coefficient`; dim 0 is ONE, so a constant
`c` is `{0: c}`).  Given the rms of the sublayer input (the norm ledger,
`qwengpu.backend_torch.residual`), the writer folds it into the weights, so forms act on `h`.

- **step** (2 units, *restoring*): adds `output` to the residual when `form >= threshold`, else
  nothing.  `form` must stay at least `gap` away from `threshold` at ideal inputs.  The two
  units have pre-activations `z- = kappa * (form - threshold) / gap - B/2` and `z+ = z- + B`
  and the step is `(silu(z+) - silu(z-)) / B`: exactly 1 once both are in the region where
  `silu(z) == z`, about 0 once both are far negative.  With `kappa = Z + B/2` the nearer unit
  is `Z` from the kink at the nearest ideal input.  The output does not depend on how far the
  input was from ideal (up to `(Z - 20) / kappa * gap`), so errors do not accumulate through a
  chain of steps: this is what makes the gadgets digital.
- **gated** (1 unit, *linear in the value*): adds `output * value` when the 0/1 `condition`
  holds: `silu(K*condition - T) * value / (K - T)`.  Exact products of an enable bit and a
  number; the result carries the value's error (gain ~1), so only analog temporaries use it.
- **linear** (1 unit): adds `output * value` always (`silu(G) == G` for a large constant G);
  `bias` is `linear` of ONE, shared by the whole gadget layer (one unit per writer).

`Drive` holds the constants; `DRIVES` picks them per dtype.  A writer built with `mlp=None`
only counts units, which is how gadgets report their cost; its `entries` can be `replay`ed
into a real writer later (emit.py's `Recording`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import torch

from qwengpu.backend_torch.cubes import affine_in_bits, disjoint_cubes
from qwengpu.backend_torch.residual import ANALOG, BINARY, ONE_DIM, Group


class Form(dict):
    """A linear function of the residual: `{dim: coefficient}` (dim 0 is the ONE dim)."""

    def __add__(self, other: Mapping[int, float]) -> "Form":
        out = Form(self)
        for dim, coef in other.items():
            out[dim] = out.get(dim, 0.0) + coef
        return out

    __radd__ = __add__

    def __sub__(self, other: Mapping[int, float]) -> "Form":
        return self + Form(other) * -1.0

    def __mul__(self, factor: float) -> "Form":
        return Form({dim: coef * factor for dim, coef in self.items()})

    __rmul__ = __mul__

    def __neg__(self) -> "Form":
        return self * -1.0

    def apply(self, vectors: torch.Tensor) -> torch.Tensor:
        """The form evaluated on residual vectors `[..., hidden]` (for tests and checks)."""
        dims = torch.tensor(list(self.keys()), dtype=torch.long)
        coefs = torch.tensor(list(self.values()), dtype=torch.float64)
        return (vectors[..., dims].double() * coefs).sum(-1)


def const(value: float) -> Form:
    """The constant `value` (read from the ONE dim)."""
    return Form({ONE_DIM: float(value)})


def literal(group: Group, bit: int, value: int) -> Form:
    """1 when bit `bit` of a binary group's value is `value`, else 0 (from the dim's sign)."""
    sign = 1.0 if value else -1.0
    return Form({group.start + bit: sign / (2 * group.scale)}) + const(0.5)


def cube_form(group: Group, cube: Mapping[int, int]) -> Form:
    """For a binary group: 1 when every bit `k` of the value is `cube[k]`, else 0 or less
    (down to `1 - len(cube)`): an AND of literals, which a step or a SiLU channel reads like
    a one-hot entry.  The empty cube is always 1."""
    form = const(1.0 - len(cube)) if cube else const(1.0)
    for bit, value in sorted(cube.items()):
        form = form + literal(group, bit, value)
    return form


def value_cube(group: Group, value: int) -> dict[int, int]:
    return {bit: (value >> bit) & 1 for bit in range(group.size)}


def is_value(group: Group, value: int) -> Form:
    """1 when the group holds `value`; else 0 (one-hot) or 0 or less (binary: see
    `cube_form`).  Good wherever only one such form per group is read, as an AND term."""
    if group.kind == BINARY:
        return cube_form(group, value_cube(group, value))
    return Form({group.dim(value): 1.0 / group.scale})


def entries(group: Group, values: Iterable[int]) -> Form:
    """1 when the group holds one of `values`, else 0.  A binary group needs `values` to be
    one cube of its code space (see `cubes.disjoint_cubes` for other sets)."""
    values = sorted(set(values))
    if group.kind == BINARY:
        cubes = disjoint_cubes(set(values), range(group.count), group.size)
        if len(cubes) != 1:
            raise ValueError(f"{group.name}: {values} is not one cube of a binary group")
        return cube_form(group, cubes[0])
    return Form({group.dim(v): 1.0 / group.scale for v in values})


def weighted(group: Group, weight, domain: Iterable[int] | None = None) -> Form:
    """`weight(v)` when the group holds `v` (any table over a one-hot group's domain; for a
    binary group the table must be affine in the bits over `domain`, default every value)."""
    if group.kind == BINARY:
        domain = list(range(group.count) if domain is None else domain)
        fit = affine_in_bits([float(weight(v)) for v in domain], domain, group.size)
        if fit is None:
            raise ValueError(f"{group.name}: a table that is not affine in the bits")
        constant, slopes = fit
        form = const(constant)
        for bit, slope in enumerate(slopes):
            if slope:
                form = form + literal(group, bit, 1) * slope
        return form
    return Form({group.dim(v): float(weight(v)) / group.scale
                 for v in range(group.size) if weight(v)})


def value_of(group: Group) -> Form:
    """The number a group holds: its index for a one-hot group, the value for an analog dim."""
    if group.kind == ANALOG:
        return Form({group.start: 1.0 / group.scale})
    return weighted(group, lambda v: v)


def bit_of(group: Group, bit: int) -> Form:
    """Bit `bit` of the value a group holds (0 or 1)."""
    if group.kind == BINARY:
        return literal(group, bit, 1)
    return entries(group, [v for v in range(group.size) if (v >> bit) & 1])


def put(group: Group, value: int, amount: float = 1.0) -> Form:
    """An output that adds `amount` times the group holding `value` (a one-hot entry, or a
    binary group's signs)."""
    if group.kind == BINARY:
        return Form({group.start + bit: amount * sign * group.scale
                     for bit, sign in enumerate(group.signs(value))})
    return Form({group.dim(value): amount * group.scale})


def put_analog(group: Group, amount: float = 1.0) -> Form:
    """An output that adds `amount` to the number an analog dim holds."""
    return Form({group.start: amount * group.scale})


@dataclass(frozen=True)
class Drive:
    """How hard units are driven (see the module doc); one per dtype."""

    step_z: float           # |pre-activation| at the nearest ideal input of a step
    step_b: float           # z+ - z- of a step pair; the output is (silu(z+) - silu(z-)) / B
    gate_k: float           # gated unit: silu(K * condition - T)
    gate_t: float
    linear_g: float         # linear unit: silu(G) == G exactly

    @property
    def kappa(self) -> float:
        return self.step_z + self.step_b / 2


DRIVES = {
    torch.float32: Drive(step_z=48.0, step_b=48.0, gate_k=1000.0, gate_t=40.0, linear_g=32.0),
    torch.bfloat16: Drive(step_z=16.0, step_b=16.0, gate_k=100.0, gate_t=12.0, linear_g=8.0),
}


@dataclass
class MlpWriter:
    """Places units into `units` of one MLP (`mlp=None`: count only), for a known input rms.

    Units are taken in order from `units.start`; `flush()` writes the weights (checking the
    units were untouched) and returns how many units were used."""

    mlp: torch.nn.Module | None
    units: range
    rms: float
    drive: Drive | None = None
    _gate: list = field(default_factory=list)      # (unit, dim, value) in h units
    _up: list = field(default_factory=list)
    _down: list = field(default_factory=list)      # (unit, dim, value)
    _bias: dict = field(default_factory=lambda: defaultdict(float))
    _next: int = 0
    flushed: bool = False

    def __post_init__(self):
        if self.drive is None:
            dtype = self.mlp.gate_proj.weight.dtype if self.mlp is not None else torch.float32
            self.drive = DRIVES.get(dtype, DRIVES[torch.float32])

    # -- unit kinds -------------------------------------------------------------------------
    def step(self, form: Mapping[int, float], threshold: float, output: Mapping[int, float],
             gap: float = 0.5) -> None:
        """Add `output` when `form >= threshold` (ideal inputs keep `form` >= `gap` away)."""
        d = self.drive
        scale = d.kappa / gap
        low = Form(form) * scale + const(-scale * threshold - d.step_b / 2)
        high = low + const(d.step_b)
        plus, minus = self._take(2)
        for unit, gate, sign in ((plus, high, 1.0), (minus, low, -1.0)):
            self._row(self._gate, unit, gate)
            self._row(self._up, unit, const(1.0))
            self._column(unit, Form(output) * (sign / d.step_b))

    def gated(self, condition: Mapping[int, float], value: Mapping[int, float],
              output: Mapping[int, float]) -> None:
        """Add `output * value` when the 0/1 `condition` is 1 (linear in `value`)."""
        d = self.drive
        (unit,) = self._take(1)
        self._row(self._gate, unit, Form(condition) * d.gate_k + const(-d.gate_t))
        self._row(self._up, unit, value)
        self._column(unit, Form(output) * (1.0 / (d.gate_k - d.gate_t)))

    def linear(self, value: Mapping[int, float], output: Mapping[int, float]) -> None:
        """Add `output * value` on every token."""
        d = self.drive
        (unit,) = self._take(1)
        self._row(self._gate, unit, const(d.linear_g))
        self._row(self._up, unit, value)
        self._column(unit, Form(output) * (1.0 / d.linear_g))

    def bias(self, output: Mapping[int, float]) -> None:
        """Add the constant `output` on every token (one unit per writer, shared)."""
        for dim, value in output.items():
            self._bias[dim] += value

    # -- bookkeeping ------------------------------------------------------------------------
    @property
    def used(self) -> int:
        return self._next + (1 if any(self._bias.values()) else 0)

    def _take(self, count: int) -> list[int]:
        if self._next + count > len(self.units):
            from qwengpu.errors import CapacityError
            raise CapacityError(f"MLP units exhausted: {self._next + count} needed, "
                                f"{len(self.units)} given")
        taken = [self.units[self._next + i] for i in range(count)]
        self._next += count
        return taken

    def _row(self, rows: list, unit: int, form: Mapping[int, float]) -> None:
        rows.extend((unit, dim, coef) for dim, coef in form.items() if coef)

    def _column(self, unit: int, output: Mapping[int, float]) -> None:
        self._down.extend((unit, dim, value) for dim, value in output.items() if value)

    def flush(self) -> int:
        """Write the weights into the MLP (no-op when counting); returns the units used."""
        if self.flushed:
            return self.used
        bias = {dim: value for dim, value in self._bias.items() if value}
        if bias:
            self.linear(const(1.0), bias)
            self._bias.clear()
        self.flushed = True
        if self.mlp is None or not self._next:
            return self._next
        self._write(*(entry_arrays(rows) for rows in (self._gate, self._up, self._down)))
        return self._next

    def entries(self) -> tuple[list, list, list]:
        """The (unit, dim, value) entries of gate, up and down so far."""
        return self._gate, self._up, self._down

    def replay(self, count: int, gate: Entries, up: Entries, down: Entries) -> int:
        """Write `count` units given as entries (`entry_arrays`; units counted from 0: this
        writer's first unit), as if a gadget had placed them; returns the units used."""
        if self._next or self._bias or self.flushed:
            raise ValueError("replay needs a fresh writer")
        self._take(count)
        self.flushed = True
        if self.mlp is None or not count:
            return count
        at = torch.tensor(list(self.units[:count]), dtype=torch.long)
        self._write(*((at[units], dims, values) for units, dims, values in (gate, up, down)))
        return count

    def _write(self, gate: Entries, up: Entries, down: Entries) -> None:
        first, last = self.units[0], self.units[self._next - 1]
        used = slice(first, last + 1) if last - first + 1 == self._next else \
            torch.tensor([self.units[i] for i in range(self._next)])
        for weight in (self.mlp.gate_proj.weight, self.mlp.up_proj.weight):
            if torch.count_nonzero(weight[used]):
                raise ValueError(f"MLP units {first}..{last} already in use")
        with torch.no_grad():
            for weight, rows, fold in ((self.mlp.gate_proj.weight, gate, self.rms),
                                       (self.mlp.up_proj.weight, up, self.rms)):
                _scatter(weight, rows, fold, transpose=False)
            _scatter(self.mlp.down_proj.weight, down, 1.0, transpose=True)


# (units, dims, values): long, long and float64 tensors of equal length
Entries = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def entry_arrays(entries: list) -> Entries:
    """A writer's list of (unit, dim, value) entries as three tensors."""
    table = torch.tensor(entries, dtype=torch.float64).view(-1, 3)   # units, dims: < 2^53
    return table[:, 0].long(), table[:, 1].long(), table[:, 2].clone()


def _scatter(weight: torch.Tensor, entries: Entries, fold: float, transpose: bool) -> None:
    """Add `value * fold` at `[unit, dim]` (or `[dim, unit]`), summing in float64 first."""
    units, dims, values = entries
    if not len(units):
        return
    rows, cols = (dims, units) if transpose else (units, dims)
    flat = rows * weight.shape[1] + cols
    touched, where = torch.unique(flat, return_inverse=True)
    total = torch.zeros(len(touched), dtype=torch.float64)
    total.index_add_(0, where, values * fold)
    view = weight.view(-1)
    view[touched] = (view[touched].double() + total).to(weight.dtype)
