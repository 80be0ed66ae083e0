"""bench/bench_tokens.py: a kernel's cost in tokens from the interpreter's records, per spec,
side by side; a kernel that does not load is listed with its error, not a traceback."""

from __future__ import annotations

from bench_scripts import bench_script


def test_tokens_per_kernel_and_record_kind(capsys):
    bench = bench_script("bench_tokens")
    assert bench.main(["--kernels", "serial_mad,out_of_bounds,too_big"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith(("serial_mad ", "out_of_bounds "))}
    # the trace's length as the protocol encodes the interpreter's records, <eos> included
    # (docs/trace.md, "Records"); the prompt of serial_mad's launch
    assert rows["serial_mad"][1:6] == ["|", "13", "162", "12.5", "130"]
    # a trap ends the trace as a stop does: 10 records and <eos>
    assert rows["out_of_bounds"][1:5] == ["|", "10", "241", "24.1"]
    assert "too_big refused: " in out and "needs 42 registers" in out
    assert "2 kernels, 23 records, 403 trace tokens: 17.5 tokens per record" in out
    assert "costliest record kinds (most tokens, mean): " in out
