"""A test bench for the compiler's MLP gadgets on stock transformers.

`run_gadget(build, bench, cases, outputs, dtype)` builds a small blank `Qwen3_5ForCausalLM`,
gives every test case its own token whose embedding holds the case's inputs (one-hot, binary
or analog groups, ONE, and the constant group every gadget's steps read), lets `build(writer)`
add the gadget's units to layer 0's MLP through an `MlpWriter` (with the rms of the case
tokens, as the scheduler's norm ledger would give it), and runs the cases through the model
both ways: one forward (prefill) and token by token through the cache (decode).
`check_outputs` then demands every output value right in every path and dtype, and a
deviation and margin inside what a reader needs: a restoring step reads its inputs right up
to 0.19 of its threshold gap (docs/gadgets.md), so outputs must deviate from the ideal by far
less, `MAX_DEVIATION`, and a one-hot read needs its hot entry above the others, `MIN_MARGIN`.
The measured figures are recorded (`QWENGPU_GADGET_REPORT=path.json` writes them; they feed
docs/gadgets.md).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Callable

import torch

from qwengpu.backend_torch.gadgets.core import MlpWriter
from qwengpu.backend_torch.model import FULL, LINEAR, blank_model, decode_logits, \
    make_config, prefill_logits
from qwengpu.backend_torch.residual import ANALOG, BINARY, Group, ResidualLayout, decode_many, \
    onehot

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
PATHS = ("prefill", "decode")
# What the readers need (see the module doc), the same for every dtype.
MAX_DEVIATION = 0.1
MIN_MARGIN = 0.8
REPORT: dict[str, dict] = {}


@dataclass
class Bench:
    """The residual of a gadget test: its layout and the constant group (one hot entry on
    every token, `tok.bos` in a compiled plan)."""

    layout: ResidualLayout
    constant: Group
    exact: set = field(default_factory=set)      # groups read as embedding values

    @classmethod
    def new(cls, hidden: int = 256) -> "Bench":
        layout = ResidualLayout(hidden)
        return cls(layout, layout.alloc("constant", 2))


def _writer(mlp, units: range, rms: float, bench: Bench) -> MlpWriter:
    writer = MlpWriter(mlp, units, rms)
    writer.constant_group = bench.constant
    writer.exact_groups = {group.name for group in bench.exact}
    return writer


def units_of(build: Callable[[MlpWriter], None], bench: Bench) -> int:
    """The MLP units the gadget takes (its build on a counting writer)."""
    writer = _writer(None, range(1 << 30), 1.0, bench)
    build(writer)
    return writer.flush()


def run_gadget(build: Callable[[MlpWriter], None], bench: Bench, cases: list[dict],
               dtype: torch.dtype, *, input_noise: float = 0.0, seq_len: int = 16
               ) -> dict[str, torch.Tensor]:
    """Per path, the residual after the gadget's layer, `[cases, hidden]` (see module doc).
    `input_noise` adds seeded uniform noise of that size to every input dim (inputs that are
    not quite clean, as a gadget's own outputs are)."""
    layout = bench.layout
    inputs = list(cases[0])
    units = units_of(build, bench)
    intermediate = max(64, -(-units // 64) * 64)
    config = make_config(2, layout.hidden_size, intermediate, [LINEAR, FULL], len(cases),
                         linear_num_key_heads=1, linear_num_value_heads=1,
                         linear_key_head_dim=16, linear_value_head_dim=16,
                         num_attention_heads=1, num_key_value_heads=1, head_dim=16)
    model = blank_model(config, dtype)
    columns = {group: [case[group] for case in cases] for group in inputs}
    columns[bench.constant] = [0] * len(cases)
    table = layout.embed_many(columns)
    if input_noise:
        generator = torch.Generator().manual_seed(len(cases))
        mask = torch.zeros(layout.hidden_size, dtype=torch.bool)
        for group in inputs:
            mask[group.start:group.stop] = True
        table += (torch.rand(table.shape, generator=generator) * 2 - 1) * input_noise * mask
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(table.to(dtype))
    writer = _writer(model.model.layers[0].mlp, range(intermediate),
                     layout.rms(inputs + [bench.constant]), bench)
    build(writer)
    assert writer.flush() == units
    count = len(cases)
    width = min(seq_len, count)
    ids = (torch.arange(-(-count // width) * width) % count).reshape(-1, width)
    residuals = {}
    for path in PATHS:
        forward = prefill_logits if path == "prefill" else decode_logits
        run = forward(model, ids, hidden_states=True, last_logits_only=True)
        residuals[path] = run.hidden_states[1].reshape(-1, layout.hidden_size)[:count].float()
    return residuals


def ideal(group: Group, values) -> torch.Tensor:
    """The ideal entries of `group` for each value, `[cases, size]`, in units of its scale."""
    rows = []
    for value in values:
        if group.kind == ANALOG:
            rows.append(torch.tensor([float(value)]))
        elif group.kind == BINARY:
            rows.append(onehot(group, int(value)) / group.scale)
        else:
            row = torch.zeros(group.size)
            row[int(value)] = 1.0
            rows.append(row)
    return torch.stack(rows)


def check_outputs(residuals: dict[str, torch.Tensor], name: str, dtype_name: str,
                  outputs: dict[Group, list], *, max_deviation: float = MAX_DEVIATION,
                  min_margin: float = MIN_MARGIN) -> dict:
    """Every output right in every path, within the deviation and margin bounds; the
    measured figures are recorded under `name` before anything is asserted."""
    worst, least, wrong, first = 0.0, float("inf"), 0, None
    for path, residual in residuals.items():
        for group, expected in outputs.items():
            block = residual[:, group.start:group.stop] / group.scale
            if group.kind == ANALOG:
                got = block[:, 0]
                bad = (got - torch.tensor(expected, dtype=torch.float32)).abs() > 0.25
            else:
                values, margins = decode_many(group, residual)
                least = min(least, margins.min().item())
                bad = values != torch.tensor(expected)
            if bad.any() and first is None:
                case = bad.nonzero()[0].item()
                first = f"{path}: {group.name} case {case}: want {expected[case]}"
            wrong = max(wrong, int(bad.sum()))
            worst = max(worst, (block - ideal(group, expected)).abs().max().item())
    figures = {"max_deviation": worst, "min_margin": least, "cases": len(next(
        iter(outputs.values()))), "wrong_cases": wrong}
    REPORT.setdefault(name, {})[dtype_name] = figures
    assert not wrong, f"{name} {dtype_name}: {wrong} wrong; {first}"
    assert worst <= max_deviation, f"{name} {dtype_name}: deviation {worst:.3g}"
    assert least >= min_margin, f"{name} {dtype_name}: margin {least:.3g}"
    return figures


def write_report() -> None:
    path = os.environ.get("QWENGPU_GADGET_REPORT")
    if not path or not REPORT:
        return
    existing = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            existing = json.load(handle)
    for name, per_dtype in REPORT.items():
        existing.setdefault(name, {}).update(per_dtype)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(existing, handle, indent=1, sort_keys=True)
