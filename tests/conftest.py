"""Suite-wide test settings.

torch runs the small models of the tests on one thread: on a 2-core machine the token-by-token
decode path is many times slower with two threads competing (and so is everything else running
beside it), and one thread also keeps float results independent of the thread count.  The run
uses the cores through pytest-xdist instead, a worker each (tests/workers.py).  `qwengpu` is
imported first: it sets how long OpenMP's idle threads spin before torch loads OpenMP
(qwengpu/__init__.py), so that the engine's threads in one worker leave the other's core.
"""

import qwengpu  # noqa: F401  (before torch)
import torch

torch.set_num_threads(1)


import pytest

# pytest-xdist: how many workers, and which tests share one (tests/workers.py)
from workers import pytest_collection_modifyitems, pytest_xdist_auto_num_workers  # noqa: F401


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each test's call report on the item, so fixtures can act on a failure afterwards
    (tests/browser_helpers.py keeps a screenshot of a failed page)."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.report_call = report


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session (tests/browser_helpers.py)."""
    from browser_helpers import launch_browser, skip_without_browser
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_without_browser("Playwright is not installed")
    with sync_playwright() as playwright:
        chromium = launch_browser(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def open_page(request, browser, tmp_path):
    """open_page(path) -> a Playwright Page showing the file; fails on script errors."""
    from browser_helpers import page_opener
    yield from page_opener(request, browser, tmp_path)


def run_folder(tmp_path_factory, worker_id):
    """The run's own temporary folder: shared by its workers, new every run."""
    root = tmp_path_factory.getbasetemp()
    return root if worker_id == "master" else root.parent


@pytest.fixture(scope="session", autouse=True)
def nvcc_cache(tmp_path_factory, worker_id):
    """nvcc's PTX cache (qwengpu.ptx.nvcc_cache) in the run's own folder, shared by its
    workers and the commands they start (unless QWENGPU_NVCC_CACHE is set)."""
    import os

    os.environ.setdefault("QWENGPU_NVCC_CACHE",
                          str(run_folder(tmp_path_factory, worker_id) / "nvcc_cache"))


@pytest.fixture(scope="session")
def reduced_model(tmp_path_factory, worker_id) -> str:
    """The reduced QwenGPU (one lane, one warp: compile_helpers.REDUCED) compiled with
    --target min, once a run (about 30 s, 1.7 GB): the workers of a parallel run share it,
    the first to ask compiling it while the others wait.  `QWENGPU_REDUCED_MODEL=DIR`
    reuses a checkpoint compiled with those parameters."""
    import os

    from filelock import FileLock

    from compile_helpers import REDUCED_FLAGS
    from qwengpu.cli import main

    given = os.environ.get("QWENGPU_REDUCED_MODEL")
    if given:
        return given
    root = run_folder(tmp_path_factory, worker_id)
    directory, done = root / "qwengpu_reduced", root / "qwengpu_reduced.done"
    with FileLock(str(root / "qwengpu_reduced.lock")):
        if not done.exists():
            assert main(["compile", "specs/qwengpu.hdl", "--target", "min", *REDUCED_FLAGS,
                         "-o", str(directory)]) == 0
            done.touch()
    return str(directory)
