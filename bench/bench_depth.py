"""How deep and how wide a machine is, before the 45 layers cap it.

    python bench/bench_depth.py specs/qwengpu.hdl [-P NAME=VALUE ...] [--chain]

`hdlc compile` answers "does it fit": the layers its schedule uses of 45, or the first op
that needs layer 46.  A hardware person growing the machine (docs/fpu.md measures an FPU
this way) wants the margin too: how many layers the step's logic really needs, and where
the deepest path runs.  This script plans the spec once, then list-schedules the plan with
unbounded width and 400 layers, so the figure is the true depth even past 45, on both
layer patterns (`min`: only the last layer is full attention, whose mixer holds nothing;
`qwen3.5-2b`: every fourth), and then runs the real schedules of both targets, as
`hdlc compile --stop-after schedule` would (layers used, residual dims against the
target's, or the capacity error).  `--chain` prints the deepest path, op by op, with its
layer and its HDL name.
"""

from __future__ import annotations

import argparse
import time

from qwengpu.backend_torch.names import op_name
from qwengpu.backend_torch.schedule import _list_schedule, count_units, schedule_plan
from qwengpu.backend_torch.target import Target, load_target
from qwengpu.compiler import compile
from qwengpu.errors import UserError

UNBOUNDED = 1 << 30
DEEP_LAYERS = 400


def unbounded_depth(plan, full_every: int) -> int:
    """Layers the plan's ops take with no limit on units, heads or dims."""
    target = Target("deep", num_layers=DEEP_LAYERS, hidden_size=UNBOUNDED,
                    intermediate_size=UNBOUNDED, linear_heads=UNBOUNDED, full_every=full_every)
    _list_schedule(plan, target, UNBOUNDED, UNBOUNDED)
    return 1 + max(op.sublayer // 2 for op in plan.ops)


def deepest_chain(plan) -> list:
    """The ops on the deepest path of the last schedule, from the embedding up."""
    producer = {value: op for op in plan.ops for value in op.outputs}
    op = max(plan.ops, key=lambda candidate: candidate.sublayer)
    chain = []
    while op is not None:
        chain.append(op)
        before = [producer[value] for value in set(op.inputs) if value in producer]
        op = max(before, key=lambda candidate: candidate.sublayer, default=None)
    return chain[::-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("-P", "--param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--chain", action="store_true", help="print the deepest path")
    args = parser.parse_args(argv)
    params = {}
    for item in args.param:
        name, _, value = item.partition("=")
        params[name] = int(value, 0)
    started = time.perf_counter()
    plan = compile(args.spec, "min", params=params, stop_after="encodings").plan
    for op in plan.ops:
        if op.kind == "mlp":
            op.units = count_units(op, plan)
    units = sum(op.units for op in plan.ops if op.kind == "mlp")
    print(f"{args.spec}: {len(plan.ops)} ops, {units} MLP units in all "
          f"(planned in {time.perf_counter() - started:.1f} s)")
    for label, full_every in (("min's layer pattern", 0), ("qwen3.5-2b's layer pattern", 4)):
        print(f"  depth with unbounded width, {label}: {unbounded_depth(plan, full_every)} layers")
    if args.chain:
        unbounded_depth(plan, 0)
        for op in deepest_chain(plan):
            name = op_name(op)
            where = "mixer" if op.sublayer % 2 == 0 else "mlp"
            print(f"    layer {op.sublayer // 2:3d} {where:5s} {op.kind:8s} {name.name[:90]}"
                  f"  {name.loc or ''}")
    for target_name in ("min", "qwen3.5-2b"):
        clock = time.perf_counter()
        try:
            schedule = schedule_plan(plan, load_target(target_name))
            target = schedule.target
            print(f"  {target_name}: {schedule.layers_used} of {target.num_layers} layers, "
                  f"residual dims {schedule.dims} of {target.hidden_size}, intermediate "
                  f"{target.intermediate_size}, {target.linear_heads} heads a layer "
                  f"({time.perf_counter() - clock:.1f} s)")
        except UserError as error:
            print(f"  {target_name}: does not fit: {str(error).splitlines()[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
