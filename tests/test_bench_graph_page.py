"""bench/bench_graph_page.py: the open times of `hdlc graph`'s page in headless Chromium, a
row per target with the page's size, chips and edges (run here on the counter, once; the
figures of the whole machine are in docs/schedule.md)."""

from __future__ import annotations

from bench_scripts import bench_script


def test_a_row_per_target(browser, capsys):
    bench = bench_script("bench_graph_page")
    assert bench.main(["--spec", "specs/counter.hdl", "--targets", "min", "--runs", "1"],
                      browser=browser) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("machine: ") and "headless" in out[0]
    row = next(line.split() for line in out if line.startswith("counter "))
    assert row[1] == "min" and row[5:7] == ["25", "38"]       # chips, edges
    opened, worst = float(row[7]), float(row[9])
    assert 0 < opened <= worst
