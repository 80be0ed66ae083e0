"""Targets: the Qwen3.5 shape a compiled machine fills (`specs/targets/*.toml`, or `min`).

`load_target("qwen3.5-2b")` reads `specs/targets/qwen3.5-2b.toml` (a path to any .toml file
works too).  `min` is not a file: it stands for "the smallest shape the schedule fits", and
is resolved after scheduling by `fit_min_target` (hidden, intermediate and DeltaNet heads
sized from what the schedule uses; the layer count stays 45).  `layer_types` puts a
`full_attention` layer every fourth layer (as Qwen3.5 does) for file targets, and only the
last layer for `min` (transformers needs at least one; the compiler leaves its mixer empty).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from qwengpu.errors import UserError

NUM_LAYERS = 45
TARGETS_DIR = Path(__file__).resolve().parents[2] / "specs" / "targets"
LINEAR, FULL = "linear_attention", "full_attention"


@dataclass(frozen=True)
class Target:
    name: str
    num_layers: int = NUM_LAYERS
    hidden_size: int = 0                 # 0: sized by the schedule (min)
    intermediate_size: int = 0
    linear_heads: int = 0                # DeltaNet key heads = value heads
    key_head_dim: int = 128
    value_head_dim: int = 128
    attention_heads: int = 1
    kv_heads: int = 1
    head_dim: int = 16
    rms_norm_eps: float = 1e-6
    full_every: int = 0                  # 0: only the last layer is full attention
    # A splice's machine: the schedule takes the narrowest residual it finds rather than the
    # first that fits, leaving the rest of the width to the text gate (docs/splice.md).
    narrowest: bool = False

    @property
    def is_min(self) -> bool:
        return self.hidden_size == 0

    @property
    def layer_types(self) -> list[str]:
        if not self.full_every:
            return [LINEAR] * (self.num_layers - 1) + [FULL]
        return [FULL if (i + 1) % self.full_every == 0 else LINEAR
                for i in range(self.num_layers)]

    # Limits the scheduler works under (min: practically unlimited).
    @property
    def units_per_layer(self) -> int:
        return self.intermediate_size or 1 << 30

    @property
    def heads_per_layer(self) -> int:
        return self.linear_heads or 1 << 20

    @property
    def residual_dims(self) -> int:
        return self.hidden_size or 1 << 30


MIN = Target("min")


def load_target(name: str) -> Target:
    """A target by name (`min`, or a file under specs/targets/) or by path."""
    if name == "min":
        return MIN
    path = Path(name) if name.endswith(".toml") else TARGETS_DIR / f"{name}.toml"
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        known = ", ".join(["min"] + sorted(p.stem for p in TARGETS_DIR.glob("*.toml")))
        raise UserError(f"unknown target {name!r} (known: {known})") from None
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"{path}: {error}") from None
    linear = data.get("linear_attention", {})
    full = data.get("full_attention", {})
    if linear.get("num_key_heads") != linear.get("num_value_heads"):
        raise UserError(f"{path}: the compiler needs as many DeltaNet key heads as value heads")
    layers = int(data.get("num_layers", NUM_LAYERS))
    if layers != NUM_LAYERS:
        raise UserError(f"{path}: num_layers must be {NUM_LAYERS}, not {layers}")
    return Target(name=data.get("name", path.stem), num_layers=layers,
                  hidden_size=int(data["hidden_size"]),
                  intermediate_size=int(data["intermediate_size"]),
                  linear_heads=int(linear.get("num_value_heads", 16)),
                  key_head_dim=int(linear.get("key_head_dim", 128)),
                  value_head_dim=int(linear.get("value_head_dim", 128)),
                  attention_heads=int(full.get("num_attention_heads", 8)),
                  kv_heads=int(full.get("num_key_value_heads", 2)),
                  head_dim=int(full.get("head_dim", 256)),
                  rms_norm_eps=float(data.get("rms_norm_eps", 1e-6)), full_every=4)


def fit_min_target(target: Target, dims: int, units: int, heads: int) -> Target:
    """The shape to build: `target` itself, or for `min` the sizes the schedule needs."""
    if not target.is_min:
        return target
    return replace(target, hidden_size=_round_up(dims, 8),
                   intermediate_size=_round_up(max(units, 1), 8),
                   linear_heads=max(heads, 1))


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step
