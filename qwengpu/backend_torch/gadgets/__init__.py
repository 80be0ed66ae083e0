"""Gadgets: exact building blocks that the compiler composes into Qwen3.5 layers.

A gadget reads residual groups (one-hot values, see `qwengpu.backend_torch.residual`) and
writes others, using one or more consecutive MLP sublayers.  It never owns a whole MLP: it is
given, per layer, an `MlpWriter` over a range of hidden units and the rms of that sublayer's
input (the norm ledger), and *adds* its units there, so several gadgets share one MLP.

The MLP gadgets (this package's `lookup`, `arith`, `compare`, `shift`, `bitwise`, `multiply`,
`mux`) are built from the three unit kinds of `core`.  Every gadget:

- is constructed from the groups it reads and writes (multi-layer gadgets also take the
  `ResidualLayout`, from which they allocate their temporaries, named `<name>.<what>`);
- `emit(writers)` adds its units, one writer per MLP layer it uses;
- `written()` lists, per layer, the groups that layer writes (for the norm ledger);
- `cost()` reports `Cost`: sublayer kind, MLP layers, units per layer, residual dims written.

`install` places a gadget into a model at given layers, computing each layer's rms from the
groups live before it (the tests use it; the scheduler does the same with its own ledger).
The measured exactness of each gadget is in `docs/gadgets.md`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from qwengpu.backend_torch.gadgets.core import MlpWriter
from qwengpu.backend_torch.residual import Live, ResidualLayout, Word


@dataclass(frozen=True)
class Cost:
    """What a gadget takes: `units[k]` hidden units of its k-th MLP layer."""

    gadget: str
    sublayer: str
    mlp_layers: int
    units: tuple[int, ...]
    dims_written: int

    @property
    def total_units(self) -> int:
        return sum(self.units)

    def __str__(self) -> str:
        per_layer = "+".join(str(u) for u in self.units)
        return (f"{self.gadget}: {self.mlp_layers} {self.sublayer} layer(s), units "
                f"{per_layer} = {self.total_units}, {self.dims_written} residual dims written")


def dims_of(groups: Iterable[Live]) -> int:
    """How many residual dims the groups (and words) span."""
    return sum(part.size for item in groups
               for part in (item.digits if isinstance(item, Word) else (item,)))


class Gadget:
    """Base class of MLP gadgets (see the package doc)."""

    name: str = "gadget"
    layers: int = 1

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        raise NotImplementedError

    def written(self) -> list[list[Live]]:
        """Per MLP layer, the groups it writes."""
        raise NotImplementedError

    def cost(self) -> Cost:
        counters = [MlpWriter(None, range(1 << 30), 1.0) for _ in range(self.layers)]
        self.emit(counters)
        units = tuple(writer.flush() for writer in counters)
        dims = dims_of(group for layer in self.written() for group in layer)
        return Cost(self.name, "mlp", self.layers, units, dims)


class Parallel(Gadget):
    """Several gadgets with the same number of layers sharing the same MLPs (and writers)."""

    def __init__(self, gadgets: Sequence[Gadget], name: str = "parallel"):
        if len({gadget.layers for gadget in gadgets}) != 1:
            raise ValueError(f"{name}: gadgets with different layer counts")
        self.gadgets, self.name, self.layers = list(gadgets), name, gadgets[0].layers

    def emit(self, writers: Sequence[MlpWriter]) -> None:
        for gadget in self.gadgets:
            gadget.emit(writers)

    def written(self) -> list[list[Live]]:
        return [sum((gadget.written()[k] for gadget in self.gadgets), [])
                for k in range(self.layers)]


def install(gadget: Gadget, model, layout: ResidualLayout, layers: Sequence[int],
            live: Iterable[Live], unit_start: int = 0) -> list[int]:
    """Add `gadget` into the MLPs of decoder `layers` (one per gadget layer), using units from
    `unit_start`; `live` are the groups holding values at the first layer's input.  Each
    layer's rms follows from the ledger; analog groups count as 0.  Returns units used per
    layer."""
    if len(layers) != gadget.layers:
        raise ValueError(f"{gadget.name} needs {gadget.layers} MLP layers, got {len(layers)}")
    live = list(live)
    writers = []
    for index, (layer_index, written) in enumerate(zip(layers, gadget.written())):
        mlp = model.model.layers[layer_index].mlp
        writers.append(MlpWriter(mlp, range(unit_start, mlp.gate_proj.weight.shape[0]),
                                 layout.rms(live)))
        live.extend(written)
    gadget.emit(writers)
    return [writer.flush() for writer in writers]
