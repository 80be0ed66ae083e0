"""bench/bench_dense.py on a small matrix: it runs, its baseline (the kernel before panels)
takes the engine's sums to the bit (the script stops otherwise), and it prints a row for
every column count."""

from __future__ import annotations

from bench_scripts import bench_script


def test_the_dense_bench_runs_and_checks_its_baseline(capsys):
    bench = bench_script("bench_dense")
    assert bench.main(["--rows", "300", "--inner", "70", "--columns", "1", "9",
                       "--matrices", "2"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert [row.split("|")[1].strip() for row in rows[1:]] == ["1", "9"]
