"""Fixtures of the backend tests: the dtypes every gadget is proven in, and blank models for
the mixer (DeltaNet head) tests.

torch runs these tiny models on one thread: one thread is far faster than two fighting over
shared cores, and keeps float results independent of the thread count.  The MLP gadgets'
bench is tests/backend_torch/gadgets/gadget_bench.py; with `QWENGPU_GADGET_REPORT=path.json`
the figures it measures are written out at the end of the run (they feed docs/gadgets.md).
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
import torch

from qwengpu.backend_torch.model import blank_model, make_config
from qwengpu.backend_torch.residual import ResidualLayout

torch.set_num_threads(1)

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
# Bounds on the reads of the mixer (memory, scratch) tests, per dtype.
MIXER_BOUNDS = {"fp32": dict(max_deviation=1e-4, min_margin=0.999),
                "bf16": dict(max_deviation=4e-3, min_margin=0.99)}


def pytest_sessionfinish(session, exitstatus):
    bench = sys.modules.get("gadget_bench")      # imported by the gadget tests that ran
    if bench is not None:
        bench.write_report()


@pytest.fixture(params=sorted(DTYPES), ids=sorted(DTYPES))
def dtype_name(request) -> str:
    return request.param


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
