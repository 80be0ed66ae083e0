"""bench/bench_gate_dims.py: the dims a per-sublayer text gate could use, from the schedule.

On the counter machine and on the reduced QwenGPU (one lane, one warp), every sublayer's
dims are held, untouched or erased and nothing else; the untouched ones only shrink as the
pass goes on and end at the dims the machine never takes (today's gate dims); the held ones
are the norm ledger's live values; no dim is erased before the schedule's first erasure; and
the script prints the three minima."""

from __future__ import annotations

import pytest

from bench_scripts import bench_script
from compile_helpers import REDUCED, compile_plan


@pytest.mark.parametrize("spec, params", [("specs/counter.hdl", None),
                                          ("specs/qwengpu.hdl", REDUCED)])
def test_every_dim_is_held_untouched_or_erased(spec, params):
    script = bench_script("bench_gate_dims")
    schedule = compile_plan(spec, "min", params=params).schedule
    hidden = schedule.target.hidden_size
    rows = script.sublayer_dims(schedule)
    assert len(rows) == 2 * schedule.target.num_layers
    assert all(row["held"] + row["untouched"] + row["erased"] == hidden for row in rows)
    untouched = [row["untouched"] for row in rows]
    assert untouched == sorted(untouched, reverse=True)
    assert untouched[-1] == hidden - schedule.dims
    first_erasure = min(schedule.erase_at.values(), default=len(rows))
    for row in rows:
        live = schedule.live_values(row["sublayer"])
        assert row["held"] == 1 + sum(schedule.plan.values[v].size for v in live)
        # a dim is freed only by an erasure (an erased value is held through its erasing
        # sublayer): none up to the first one
        if row["sublayer"] <= first_erasure:
            assert row["erased"] == 0


def test_it_prints_the_fewest_dims(capsys):
    script = bench_script("bench_gate_dims")
    assert script.main(["--spec", "specs/counter.hdl", "--target", "min"]) == 0
    out = capsys.readouterr().out
    assert out.count("fewest gate dims at a sublayer") == 3
