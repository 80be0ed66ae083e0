"""The machine's MLPs of one decode step, this build's kernel against a checkout's, side by side.

    python bench/bench_machine_mlp.py --model DIR [--kernel vector_add] [--columns 1 4 8]
                                      [--rounds 10] [--baseline CHECKOUT]

A compiled machine's MLP (`kernels.mlp_add`: gate families, the other gate rows, the live
units' up rows and down columns) is most of a step's sparse work.  A whole step
(`bench_engine_ab.py`) also carries the dense base layers and the mixers, and on a shared
2-core machine its noise hides a change of a millisecond.  This script takes the MLPs
alone: it runs `--columns` rows of the launch's prompt through the checkpoint, keeps the
input of every sparse MLP of the next decode step (the normed residual, as `mlp_add` gets
it), and then times all of them back to back, this build's `engine.mlp_add` on this
build's weights and, with `--baseline CHECKOUT`, CHECKOUT's own (its engine imported under
another name, as `bench_engine_ab.py` does) on CHECKOUT's reading of the same checkpoint.
The builds take turns round after round (the machine's load moves by 20 to 40% in a
minute), one thread, and the figure is each build's best round; the two builds' residuals
are checked equal to the bit.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import qwengpu.engine as this_engine  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from bench_engine_ab import baseline_engine_module, prompt_of  # noqa: E402


def captured_inputs(engine, model_module, prompt: list[int], columns: int) -> list:
    """(layer index, x) for every sparse MLP of one decode step of `columns` rows of the
    prompt (its last token again), the rows prefilled first; x is what `mlp_add` is given.
    `engine`: a `SparseEngine` loaded with fuse=False, so that its layers call
    `model_module.mlp_add`."""
    state = engine.new_state(columns)
    for row in range(columns):
        engine.forward(state, prompt, [row] * len(prompt), [len(prompt) - 1])
    inputs = []
    index_of = {id(layer.mlp): index for index, layer in enumerate(engine.weights.layers)
                if layer.mlp is not None}
    original = model_module.mlp_add

    def capture(mlp, x, residual, workers=None):
        if mlp.gate.stored is None:
            inputs.append((index_of[id(mlp)], x.copy()))
        return original(mlp, x, residual, workers)

    model_module.mlp_add = capture
    try:
        engine.forward(state, [prompt[-1]] * columns, list(range(columns)),
                       list(range(columns)))
    finally:
        model_module.mlp_add = original
    return inputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="a compiled checkpoint")
    parser.add_argument("--kernel", default="vector_add")
    parser.add_argument("--columns", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--baseline", type=Path, help="an earlier checkout")
    args = parser.parse_args(argv)
    prompt = prompt_of(ROOT, args.model, args.kernel)
    with tempfile.TemporaryDirectory() as folder:
        builds = {"this": this_engine}
        if args.baseline is not None:
            builds["baseline"] = baseline_engine_module(args.baseline, Path(folder))
        engine = this_engine.SparseEngine.load(args.model, fuse=False)
        weights = {"this": engine.weights}
        if "baseline" in builds:
            weights["baseline"] = builds["baseline"].weights.read_weights(args.model)
        print(f"{args.kernel}: a {len(prompt)}-token prompt, {args.model}; one thread, "
              f"best of {args.rounds} rounds")
        print(f"{'columns':>7}  " + "  ".join(f"{name + ' (ms)':>14}" for name in builds)
              + ("  same bits" if len(builds) > 1 else ""))
        for columns in args.columns:
            inputs = captured_inputs(engine, this_engine.engine, prompt, columns)
            best = {name: float("inf") for name in builds}
            results = {}
            for turn in range(args.rounds):
                for name in (list(builds) if turn % 2 else list(builds)[::-1]):
                    layers = weights[name].layers
                    mlp_add = builds[name].engine.mlp_add
                    residuals = [np.zeros_like(x) for _, x in inputs]
                    started = time.perf_counter()
                    for (index, x), residual in zip(inputs, residuals):
                        mlp_add(layers[index].mlp, x, residual)
                    best[name] = min(best[name], time.perf_counter() - started)
                    results[name] = residuals
            line = f"{columns:>7}  " + "  ".join(f"{best[name] * 1e3:>14.2f}"
                                                for name in builds)
            if len(builds) > 1:
                same = all(np.array_equal(a.view(np.uint32), b.view(np.uint32))
                           for a, b in zip(results["this"], results["baseline"]))
                line += f"  {same}"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
