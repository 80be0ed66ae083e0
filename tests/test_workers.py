"""The default run's sharing of tests over workers (tests/workers.py), on a small test project
run by pytest-xdist in a subprocess: every module fixture is built once (a test file stays on
one worker), the heavy files share one worker and run first, and `-n auto` never asks for
more workers than the cores."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import workers

TESTS = Path(__file__).resolve().parent
FILES = {"test_light_a.py": False, "test_heavy_b.py": True, "test_light_c.py": False,
         "test_heavy_d.py": True}
TEST_FILE = '''
import os
import pytest
{mark}

@pytest.fixture(scope="module", params=[1, 2])
def built(request):
    with open(os.environ["SETUP_LOG"], "a") as log:
        log.write(f"{{__name__}} {{request.param}} {{os.environ['PYTEST_XDIST_WORKER']}}\\n")
    return request.param


@pytest.mark.parametrize("k", range(3))
def test_uses_it(built, k):
    pass


def test_uses_it_again(built):
    pass


def test_alone():
    pass
'''


def test_each_file_on_one_worker_and_the_heavy_ones_together(tmp_path):
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    heavy: one worker runs these in turn\n")
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from workers import pytest_collection_modifyitems, pytest_xdist_auto_num_workers\n")
    for name, heavy in FILES.items():
        mark = "pytestmark = pytest.mark.heavy" if heavy else ""
        (tmp_path / name).write_text(TEST_FILE.format(mark=mark))
    log = tmp_path / "setups.log"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist",
                          "loadgroup", "--no-loadscope-reorder", "-p", "no:benchmark",
                          "-p", "no:cacheprovider", str(tmp_path)],
                         cwd=tmp_path, env={**os.environ, "SETUP_LOG": str(log)},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "36 passed" in run.stdout
    setups = [line.split() for line in log.read_text().splitlines()]
    built = [(module, param) for module, param, _ in setups]
    assert sorted(built) == sorted((Path(name).stem, str(param)) for name in FILES
                                   for param in (1, 2))       # each fixture built once
    worker_of = {module: worker for module, _, worker in setups}
    assert worker_of["test_heavy_b"] == worker_of["test_heavy_d"]
    # the heavy group is handed out first: it starts on a worker before the light files do
    heavy_worker = worker_of["test_heavy_b"]
    assert [module for module, _, worker in setups if worker == heavy_worker][:2] == \
        ["test_heavy_b", "test_heavy_b"]


def test_auto_never_asks_for_more_workers_than_cores_or_memory():
    count = workers.pytest_xdist_auto_num_workers(None)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 1 <= count <= len(os.sched_getaffinity(0))
    assert count == 1 or count * workers.MEMORY_PER_WORKER <= memory
