"""How the default run shares its tests over the machine's cores (pytest-xdist).

pyproject.toml's `addopts` runs the suite as `-n auto --dist loadgroup --no-loadscope-reorder`:
workers as below, each test in the group its `xdist_group` mark names, a group run whole on
one worker, and the groups handed out in collection order as workers come free.
`conftest.py` takes the two hooks here:

- `pytest_xdist_auto_num_workers`: `-n auto` takes one worker a core, but no more than the
  memory holds at `MEMORY_PER_WORKER` each (2 on the 2-core, 24 GB machine the suite is
  sized for).
- `pytest_collection_modifyitems`: every test file is a group, so its module fixtures (a
  compiled machine, a spliced base) are built once; the files marked `heavy`
  (`pytestmark = pytest.mark.heavy`: a compiled whole machine, spliced checkpoints of
  several GB, or minutes of work) form one group, put first, so that no two of them are in
  memory at once and the longest queue starts earliest.  It runs before xdist's own hook,
  which reads the groups.

With `-n 0` the run is one process, the groups are only marks and the heavy files come
first.
"""

from __future__ import annotations

import os

import pytest

GIB = 1 << 30
MEMORY_PER_WORKER = 8 * GIB   # a heavy file's peak (the whole machine: 6.5 GB) beside a light one
HEAVY = "heavy"


def pytest_xdist_auto_num_workers(config) -> int:
    """Workers for `-n auto`: one a core, as many as the memory holds."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(1, min(cores or 1, memory // MEMORY_PER_WORKER))


def group_of(item: pytest.Item) -> str:
    """A test's group: `heavy`, or its file."""
    return HEAVY if item.get_closest_marker(HEAVY) else item.nodeid.split("::")[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items: list[pytest.Item]) -> None:
    """Each test marked with its group, the heavy group first (a stable sort, in place)."""
    items.sort(key=lambda item: group_of(item) != HEAVY)
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group_of(item)))
