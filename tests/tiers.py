"""The default run and the `extra` tier.

The README's `python3 -m pytest` makes every check at least once: each machine, dtype and
path (the launch token by token, and after a prefilled prefix) under stock transformers, the
engine and llama.cpp. Further seeds of a check it already makes, a check repeated over
every example or file where a spread of them shows it, and bf16 launches past their first
records (bf16 decoding costs about three times fp32's on a CPU; each launch's end is checked
in fp32 on the same machine) are marked `extra` (`first_by_default`, `EXTRA`): the
default run leaves them out (`-m 'not slow and not extra'` in pyproject.toml), and CI runs
them right after it (`python3 -m pytest -m extra`, .ci/run), so every one of them still runs
before anything lands. docs/testing.md says which tests are in each tier and why.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import pytest

EXTRA = pytest.mark.extra
SPREAD = 3
"""A check spread over every example or file runs every SPREAD-th (or one part in SPREAD)
by default and the rest in the extra tier."""


def by_default(values: Iterable, in_default: Callable[[int], bool],
               ids: Sequence[str] | None = None) -> list:
    """`values` as parameters: the `i`-th in the default run where `in_default(i)`, else
    `extra`."""
    return [pytest.param(value, id=None if ids is None else ids[i],
                         marks=() if in_default(i) else EXTRA)
            for i, value in enumerate(values)]


def first_by_default(values: Iterable, count: int = 1) -> list:
    """The first `count` of `values` in the default run, the rest `extra`."""
    return by_default(values, lambda i: i < count)


def spread_by_default(values: Sequence, every: int, ids: Sequence[str]) -> list:
    """Every `every`-th of `values` in the default run (from the first), the rest `extra`."""
    return by_default(values, lambda i: i % every == 0, ids)
