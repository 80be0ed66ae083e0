"""Benchmark: what one token costs on compiled checkpoints, side by side.

    python bench/bench_step.py --models OLD_DIR,NEW_DIR            # the first is the baseline
    python bench/bench_step.py --models DIR --batch 8 --steps 32 --device cuda

For each checkpoint, loaded one after the other in this process (only one is in memory at a
time), it builds the launch prompt of `--kernel` (default examples/serial_mad) for the
checkpoint's own machine, then times stock `generate()` (transformers; bench_engine.py sets
the sparse engine beside it) twice on `--batch` copies of it:
one new token (the prefill) and `1 + --steps` new tokens; the difference over `--steps` is
a decode step. It prints the checkpoint's shape, parameters and bytes, the prefill and step
times, tokens a second over the batch, and each step time as a ratio to the first
checkpoint's. A decode step of a QwenGPU checkpoint on a CPU reads every weight, so it goes
with the bytes; on a GPU it goes with the kernels launched. Only speed is measured: the
tokens are not checked (bench_launch.py and corpus_on_model.py check theirs). Figures depend
on the machine: quote them with the machine named, or as ratios.
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def time_generate(model, input_ids, new_tokens: int) -> float:
    """Seconds for greedy `generate()` to write exactly `new_tokens` after `input_ids`."""
    import torch

    started = time.perf_counter()
    with torch.inference_mode():
        model.generate(input_ids, attention_mask=torch.ones_like(input_ids), do_sample=False,
                       num_beams=1, use_cache=True, max_new_tokens=new_tokens,
                       min_new_tokens=new_tokens, pad_token_id=0)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", required=True,
                        help="comma-separated checkpoint directories (the first is the baseline)")
    parser.add_argument("--kernel", default="serial_mad", help="example whose prompt is fed")
    parser.add_argument("--batch", type=int, default=1, help="copies of the prompt a call")
    parser.add_argument("--steps", type=int, default=16, help="decode steps timed")
    parser.add_argument("--device", default=None, help="torch device (cpu, cuda)")
    args = parser.parse_args(argv)

    import torch

    from qwengpu.errors import UserError
    from qwengpu.runtime.launch import load_launch, machine_limits
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.model_backend import load_checkpoint
    from qwengpu.runtime.prompt import build_prompt

    print(f"machine: {platform.machine()}, {torch.get_num_threads()} threads; prompt of "
          f"examples/{args.kernel}, batch {args.batch}, {args.steps} decode steps timed")
    print(f"{'checkpoint':<28} {'hidden x inter x heads':>22} {'params':>8} {'GB':>6} "
          f"{'prefill s':>9} {'step s':>7} {'tokens/s':>8} {'step ratio':>10}")
    baseline = None
    for directory in args.models.split(","):
        path = Path(directory)
        try:
            machine = checkpoint_machine(path)
            launch = load_launch(ROOT / "examples" / args.kernel / "launch.json",
                                 machine_limits(machine))
            model, protocol = load_checkpoint(path, args.device, "transformers")
        except UserError as error:
            print(f"{directory}: {error.message}", file=sys.stderr)
            return 1
        prompt = build_prompt(launch, protocol, machine)
        input_ids = torch.tensor([prompt] * args.batch, device=model.device)
        config = model.config
        shape = (f"{config.hidden_size} x {config.intermediate_size} x "
                 f"{config.linear_num_value_heads}")
        parameters = sum(p.numel() for p in model.parameters())
        size = sum(p.numel() * p.element_size() for p in model.parameters())
        prefill = time_generate(model, input_ids, 1)
        step = (time_generate(model, input_ids, 1 + args.steps) - prefill) / args.steps
        baseline = baseline or step
        print(f"{path.name[-28:]:<28} {shape:>22} {parameters / 1e9:>7.2f}G {size / 1e9:>6.2f} "
              f"{prefill:>9.2f} {step:>7.3f} {args.batch / step:>8.2f} "
              f"{step / baseline:>9.2f}x", flush=True)
        del model
        gc.collect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
