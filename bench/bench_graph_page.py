"""Benchmark: how long the page of `hdlc graph -o FILE.html` takes to open in a browser.

    python bench/bench_graph_page.py                     # specs/qwengpu.hdl, min and qwen3.5-2b
    python bench/bench_graph_page.py --spec specs/counter.hdl --targets min --runs 3

For each target it schedules the spec (the compile up to the schedule step, as `hdlc graph`
does), writes the page, and opens it `--runs` times in headless Chromium (Debian's, through
Playwright, as the browser tests do), each time in a fresh tab.  It prints per target the
schedule's and the page's build times, the page's size, its chips and edges, and two open
times (median and worst of the runs): `open`, from asking for the page to the page saying it
is drawn (`document.body.dataset.ready`), and `drawn`, the page's own clock at that moment
(`performance.now()`, from the start of navigation).  The figures depend on the machine:
say which when you quote them.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-dev-shm-usage"]


def build_page(spec: str, target: str, folder: Path) -> dict:
    from qwengpu.backend_torch.graph_data import layer_graph
    from qwengpu.backend_torch.graph_view import schedule_html
    from qwengpu.compiler import compile

    started = time.perf_counter()
    schedule = compile(spec, target, stop_after="schedule").schedule
    scheduled = time.perf_counter()
    page = schedule_html(schedule)
    built = time.perf_counter()
    data = layer_graph(schedule)
    path = folder / f"{Path(spec).stem}-{target}.html"
    path.write_text(page, encoding="utf-8")
    return {"path": path, "schedule_s": scheduled - started, "page_s": built - scheduled,
            "bytes": len(page.encode()), "chips": len(data["chips"]),
            "edges": len(data["edges"])}


def open_times(browser, path: Path, runs: int) -> tuple[list[float], list[float]]:
    """Seconds from `goto` to drawn, and the page's own milliseconds at that moment."""
    opened, drawn = [], []
    for _ in range(runs):
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        started = time.perf_counter()
        page.goto(path.resolve().as_uri())
        page.wait_for_function("document.body.dataset.ready === '1'", timeout=60_000)
        opened.append(time.perf_counter() - started)
        drawn.append(page.evaluate("window.graphPage.drawnMs") / 1000)
        page.close()
        if errors:
            raise SystemExit(f"{path}: the page raised {errors[0]}")
    return opened, drawn


def main(argv=None, browser=None) -> int:
    """The benchmark; `browser` (a Playwright browser) is used when given, else Chromium is
    started here."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="specs/qwengpu.hdl")
    parser.add_argument("--targets", default="min,qwen3.5-2b",
                        help="comma-separated targets (default min,qwen3.5-2b)")
    parser.add_argument("--runs", type=int, default=5, help="opens per page (default 5)")
    args = parser.parse_args(argv)
    if browser is not None:
        return _measure(args, browser, "the caller's")
    chromium = next((found for name in ("chromium", "chromium-browser", "google-chrome")
                     if (found := shutil.which(name))), None)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        chromium = None
    if chromium is None:
        print("needs Chromium and Playwright (apt-get install chromium; pip install "
              "playwright)", file=sys.stderr)
        return 1
    with sync_playwright() as playwright:
        started = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            return _measure(args, started, chromium)
        finally:
            started.close()


def _measure(args, browser, which: str) -> int:
    print(f"machine: {platform.machine()}, {_cores()} cores; browser: {which} (headless)")
    print(f"{'spec':16} {'target':12} {'schedule s':>10} {'page s':>7} {'KB':>6} {'chips':>6} "
          f"{'edges':>6} {'open s (median/worst)':>22} {'drawn s (median/worst)':>23}")
    with tempfile.TemporaryDirectory() as folder:
        for target in args.targets.split(","):
            built = build_page(args.spec, target, Path(folder))
            opened, drawn = open_times(browser, built["path"], args.runs)
            print(f"{Path(args.spec).stem:16} {target:12} {built['schedule_s']:10.1f} "
                  f"{built['page_s']:7.2f} {built['bytes'] // 1024:6d} {built['chips']:6d} "
                  f"{built['edges']:6d} {_spread(opened):>22} {_spread(drawn):>23}")
    return 0


def _spread(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f} / {max(seconds):.2f}"


def _cores() -> int:
    import os
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
