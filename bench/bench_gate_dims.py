"""Residual dims a text gate could use at each sublayer, beyond the dims the machine never takes.

    python bench/bench_gate_dims.py [--target qwen3.5-2b] [--spec specs/qwengpu.hdl] [-P LANES=2]

`hdlc splice` gates every compiled unit off on text with one direction on the dims the
machine leaves free at every layer (50 of Qwen3.5-2B's 2,048: docs/splice.md, "The text
gate").  A gate row at one sublayer only needs its direction to be 0 on every machine
token's residual *there*, so a gate per sublayer could also use the dims that hold no value
at that sublayer's input, and a one-hot group's sum law (docs/splice.md, "The weakest
condition").  The machine is scheduled as a splice schedules it, in the narrowest residual
its unit caps give (`Target.narrowest`).  This prints, from the compiler's own schedule (no
weights are written), for
each sublayer of the target: the dims holding a value, the dims no value has held yet
(exactly 0 on every machine token), the dims freed by an erasure (0 up to the erasure's
residue, about 2^-17 of the value: docs/schedule.md), and the one-hot groups held (one
linear law each); then the fewest over the sublayers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dataclasses import replace  # noqa: E402

from qwengpu.backend_torch.ops import ONEHOT  # noqa: E402
from qwengpu.backend_torch.target import load_target  # noqa: E402
from qwengpu.compiler import compile  # noqa: E402


def sublayer_dims(schedule) -> list[dict]:
    """Per sublayer: held, untouched and erased dims (ONE counted as held), one-hot laws."""
    plan, hidden = schedule.plan, schedule.target.hidden_size

    def dims_of(value: str) -> range:
        return range(schedule.start[value], schedule.start[value] + plan.values[value].size)

    by_ready = sorted((ready, v) for v, ready in schedule.ready.items() if v in schedule.start)
    touched, written, rows = set(), 0, []
    for sublayer in range(2 * schedule.target.num_layers):
        while written < len(by_ready) and by_ready[written][0] <= sublayer:
            touched.update(dims_of(by_ready[written][1]))
            written += 1
        live = schedule.live_values(sublayer)
        held = {0}.union(*(dims_of(v) for v in live))
        laws = sum(1 for v in live if plan.values[v].encoding == ONEHOT
                   and plan.values[v].analog_scale is None and plan.values[v].size > 1)
        rows.append({"sublayer": sublayer, "held": len(held),
                     "untouched": hidden - len(held | touched),
                     "erased": len(touched - held), "laws": laws})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=str(ROOT / "specs" / "qwengpu.hdl"))
    parser.add_argument("--target", default="qwen3.5-2b")
    parser.add_argument("-P", "--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a spec parameter, as `hdlc splice -P` takes it (repeatable)")
    args = parser.parse_args(argv)
    params = {name: int(value) for name, value in (p.split("=", 1) for p in args.param)}
    target = replace(load_target(args.target), narrowest=True)     # as a splice compiles it
    schedule = compile(args.spec, target, params=params, stop_after="schedule").schedule
    hidden = schedule.target.hidden_size
    rows = sublayer_dims(schedule)
    print(f"{args.target}{''.join(f' -P {p}' for p in args.param)}: hidden {hidden}, "
          f"{schedule.dims} dims allocated (peak live {schedule.peak_live_dims}), "
          f"{hidden - schedule.dims} never taken (today's gate dims)")
    print("sublayer  layer  held  untouched  erased  one-hot laws")
    for row in rows:
        print(f"{row['sublayer']:8d}  {row['sublayer'] // 2:5d}  {row['held']:4d}  "
              f"{row['untouched']:9d}  {row['erased']:6d}  {row['laws']:12d}")
    for name, key in (("exactly 0 (untouched)", lambda r: r["untouched"]),
                      ("0 up to an erasure's residue", lambda r: r["untouched"] + r["erased"]),
                      ("and the one-hot laws", lambda r: r["untouched"] + r["erased"]
                       + r["laws"])):
        worst = min(rows, key=key)
        print(f"fewest gate dims at a sublayer, {name}: {key(worst)} "
              f"(sublayer {worst['sublayer']}, layer {worst['sublayer'] // 2})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
