"""A test bench for MLP gadgets on stock transformers.

`run_gadget` builds a small blank `Qwen3_5ForCausalLM` (linear-attention layers plus one
full-attention layer, all no-ops), installs a gadget in the MLPs of its first layers, and gives
every test case its own token whose embedding holds the case's inputs (one-hot groups, ONE).
It runs the cases through the model in prefill and token-by-token decode and returns the final
residual of each path, so tests decode the output groups and compare them with the reference.

Measured figures (worst deviation from the ideal one-hot, least decode margin) are collected
per gadget; with `QWENGPU_GADGET_REPORT=path.json` they are written out at the end of the run
(they feed `docs/gadgets.md`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
import torch

from qwengpu.backend_torch.gadgets import Gadget, install
from qwengpu.backend_torch.model import FULL, LINEAR, blank_model, decode_logits, \
    make_config, prefill_logits
from qwengpu.backend_torch.residual import Live, ResidualLayout, decode_many, \
    decode_word_many, deviation, Word

# Tiny matrices: one thread is far faster than two fighting over shared cores.
torch.set_num_threads(1)

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
# Bounds on the reads of the mixer (memory, fetch) tests, per dtype.
MIXER_BOUNDS = {"fp32": dict(max_deviation=1e-4, min_margin=0.999),
                "bf16": dict(max_deviation=4e-3, min_margin=0.99)}
PATHS = ("prefill", "decode")
REPORT: dict[str, dict] = {}


def bench_config(hidden: int, layers: int, vocab: int, intermediate: int):
    """A tiny Qwen3.5 config: `layers` gadget layers (linear attention) + one full attention."""
    types = [LINEAR] * layers + [FULL]
    return make_config(layers + 1, hidden, intermediate, types, vocab,
                       linear_num_key_heads=1, linear_num_value_heads=1,
                       linear_key_head_dim=16, linear_value_head_dim=16,
                       num_attention_heads=1, num_key_value_heads=1, head_dim=16)


@dataclass
class BenchRun:
    """Final residuals `[cases, hidden]` per path of one gadget run."""

    residuals: dict[str, torch.Tensor]
    layout: ResidualLayout
    units: list[int] = field(default_factory=list)
    after_layer: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)

    def read(self, target: Live, path: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Decoded values and margins of a group or word, per case."""
        residual = self.residuals[path]
        if isinstance(target, Word):
            return decode_word_many(target, residual)
        return decode_many(target, residual)


def run_gadget(gadget: Gadget, layout: ResidualLayout, cases: list[dict], dtype: torch.dtype,
               *, live=None, paths=PATHS, seq_len: int = 16, max_vocab: int = 4096,
               keep_layers: tuple[int, ...] = (), input_noise: float = 0.0) -> BenchRun:
    """Run `gadget` on `cases` (dicts group/word -> value) in every path; see module doc.

    Cases are cut into chunks of at most `max_vocab`; each chunk gets its own model whose
    token `t` embeds case `t`, fed as a `[batch, seq_len]` block of token ids.  The residual
    after each gadget layer in `keep_layers` (0-based) is kept too.  `input_noise` adds seeded
    uniform noise of that size to every dim of the input groups (inputs that are not quite
    one-hot, as a gadget's own outputs are)."""
    live = list(live if live is not None else {k for case in cases[:1] for k in case})
    residuals: dict[str, list[torch.Tensor]] = {path: [] for path in paths}
    kept = {layer: {path: [] for path in paths} for layer in keep_layers}
    units: list[int] = []
    for first in range(0, len(cases), max_vocab):
        chunk = cases[first:first + max_vocab]
        model, units = _bench_model(gadget, layout, chunk, dtype, live, input_noise)
        count = len(chunk)
        width = min(seq_len, count)
        batch = -(-count // width)
        ids = (torch.arange(batch * width) % count).reshape(batch, width)
        for path in paths:
            forward = prefill_logits if path == "prefill" else decode_logits
            run = forward(model, ids, hidden_states=True, last_logits_only=True)
            final = run.hidden_states[gadget.layers].reshape(-1, layout.hidden_size)[:count]
            residuals[path].append(final.float())
            for layer in keep_layers:
                state = run.hidden_states[layer + 1].reshape(-1, layout.hidden_size)[:count]
                kept[layer][path].append(state.float())
    return BenchRun({path: torch.cat(parts) for path, parts in residuals.items()}, layout,
                    units, {layer: {path: torch.cat(parts) for path, parts in per.items()}
                            for layer, per in kept.items()})


def _bench_model(gadget: Gadget, layout: ResidualLayout, cases: list[dict],
                 dtype: torch.dtype, live, input_noise: float = 0.0):
    units_needed = max(gadget.cost().units)
    intermediate = max(64, -(-units_needed // 64) * 64)
    config = bench_config(layout.hidden_size, gadget.layers, len(cases), intermediate)
    model = blank_model(config, dtype)
    with torch.no_grad():
        table = layout.embed_many({key: [case[key] for case in cases] for key in cases[0]})
        if input_noise:
            generator = torch.Generator().manual_seed(len(cases))
            noise = (torch.rand(table.shape, generator=generator) * 2 - 1) * input_noise
            inputs = torch.zeros(layout.hidden_size, dtype=torch.bool)
            for key in cases[0]:
                for part in (key.digits if isinstance(key, Word) else (key,)):
                    inputs[part.start:part.stop] = True
            table += noise * inputs
        model.model.embed_tokens.weight.copy_(table.to(dtype))
    units = install(gadget, model, layout, list(range(gadget.layers)), live)
    return model, units


def check_outputs(run: BenchRun, name: str, dtype_name: str, outputs: dict[Live, list[int]],
                  *, max_deviation: float, min_margin: float) -> dict:
    """Check every output decodes to its expected values in every path, within the deviation
    and margin bounds.  The measured figures (wrong cases, worst deviation, least margin) are
    recorded under `name` before anything is asserted, so a failing dtype leaves its evidence."""
    worst_dev, least_margin, wrong_cases, first_wrong = 0.0, float("inf"), 0, None
    for path, residual in run.residuals.items():
        for target, expected in outputs.items():
            expected = torch.tensor([_as_int64(v) for v in expected], dtype=torch.long)
            values, margins = run.read(target, path)
            wrong = (values != expected).nonzero().flatten()
            wrong_cases = max(wrong_cases, len(wrong))
            if len(wrong) and first_wrong is None:
                case = wrong[0].item()
                first_wrong = (f"{path}: {target.name} case {case}: got "
                               f"{values[case].item():#x}, want {expected[case].item():#x}")
            worst_dev = max(worst_dev, deviation(target, residual, expected).max().item())
            least_margin = min(least_margin, margins.min().item())
    cases = len(next(iter(outputs.values())))
    figures = {"max_deviation": worst_dev, "min_margin": least_margin, "cases": cases,
               "wrong_cases": wrong_cases}
    REPORT.setdefault(name, {})[dtype_name] = figures
    assert not wrong_cases, f"{name} {dtype_name}: {wrong_cases}/{cases} wrong; {first_wrong}"
    assert worst_dev <= max_deviation, f"{name} {dtype_name}: deviation {worst_dev:.3g}"
    assert least_margin >= min_margin, f"{name} {dtype_name}: margin {least_margin:.3g}"
    return figures


def record(name: str, dtype_name: str, figures: dict) -> None:
    """Keep measured figures for the report (see module doc)."""
    REPORT.setdefault(name, {})[dtype_name] = figures


def _as_int64(value: int) -> int:
    """A word of up to 64 bits as the int64 with the same bits (decode wraps the same way)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("QWENGPU_GADGET_REPORT")
    if path and REPORT:
        existing = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                existing = json.load(handle)
        for name, per_dtype in REPORT.items():
            existing.setdefault(name, {}).update(per_dtype)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(existing, handle, indent=1, sort_keys=True)


@pytest.fixture(params=sorted(DTYPES), ids=sorted(DTYPES))
def dtype_name(request) -> str:
    return request.param


@pytest.fixture
def bench():
    """The bench helpers (`run`, `check`, `DTYPES`) for gadget tests."""
    return SimpleNamespace(run=run_gadget, check=check_outputs, DTYPES=DTYPES, record=record)


def mixer_model(layout: ResidualLayout, types, dtype: torch.dtype, cases=None, *, vocab=None,
                heads: int = 1, value_heads: int | None = None, **config):
    """A blank model for the mixer tests: one layer per entry of `types`, `heads` DeltaNet key
    heads (`value_heads` value heads, as many by default), two attention heads sharing one
    key/value head of 64 dims.  With `cases`, token `t` embeds case `t` (the vocabulary is
    `len(cases)` unless `vocab` is given)."""
    config = make_config(len(types), layout.hidden_size, 64, list(types),
                         vocab if vocab is not None else len(cases),
                         linear_num_key_heads=heads, linear_num_value_heads=value_heads or heads,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=64, **config)
    model = blank_model(config, dtype)
    if cases is not None:
        with torch.no_grad():
            table = torch.stack([layout.embed(case) for case in cases])
            model.model.embed_tokens.weight.copy_(table.to(dtype))
    return model


@pytest.fixture
def mixer():
    """The mixer-test helpers (`model`, `DTYPES`, `BOUNDS`)."""
    return SimpleNamespace(model=mixer_model, DTYPES=DTYPES, BOUNDS=MIXER_BOUNDS)
