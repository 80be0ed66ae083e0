"""Benchmark: stock transformers, the sparse engine and llama.cpp on one checkpoint, side by side.

    python bench/bench_engines.py --model DIR                       # serial_mad's prompt
    python bench/bench_engines.py --model DIR --kernel vector_add --tokens 160 --threads 2
    python bench/bench_engines.py --model DIR --engines sparse,llama.cpp --llamacpp-tokens 300

One launch prompt (`--kernel`, laid out for the checkpoint's own machine), batch 1, greedy,
on the same checkpoint files.  Each engine runs in a process of its own (this script again,
with `--one ENGINE`), so that its peak memory is its own: the peak resident size of that
process, which for llama.cpp includes the pages of the memory-mapped GGUF it touched and
for transformers the dense model.  Per engine: the time to load the checkpoint (llama.cpp:
its GGUF, exported beside the checkpoint first if there is none, which is timed apart),
the prefill (the prompt and the first new id), the decode rate over the tokens after the
first, the peak memory, and whether its ids are the interpreter's trace and stock
transformers' (over the tokens both wrote).  Stock transformers writes `--stock-tokens`
(default 16: it is slow on a whole machine), the sparse engine `--tokens` (default 160),
llama.cpp `--llamacpp-tokens` (default 64: dense as well).  Every engine runs on `--threads`
threads (default 1).  Figures depend on the machine and on what else runs on it: quote them
with the machine named, and measure the engines in one run, as this does.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("transformers", "sparse", "llama.cpp")


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def _prompt(model: Path, kernel: str):
    from qwengpu.runtime.launch import load_launch, machine_limits, run_launch_sim
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.prompt import build_prompt
    from qwengpu.trace.protocol import TraceProtocol

    machine = checkpoint_machine(model)
    launch = load_launch(ROOT / "examples" / kernel / "launch.json", machine_limits(machine))
    protocol = TraceProtocol.load(model)
    trace = protocol.encode_records(run_launch_sim(launch, machine=machine).records)
    return build_prompt(launch, protocol, machine), trace


def measure(engine: str, model: Path, kernel: str, tokens: int, threads: int) -> dict:
    """One engine's figures (run in its own process by `main`)."""
    import torch

    torch.set_num_threads(threads)
    from qwengpu.runtime.model_backend import load_checkpoint

    prompt, trace = _prompt(model, kernel)
    figures: dict = {"engine": engine, "export_seconds": None}
    if engine == "llama.cpp":
        from qwengpu.llamacpp.engine import cache_path, cached_gguf

        started = time.perf_counter()
        fresh = not cache_path(model).is_file()
        cached_gguf(model)
        if fresh:
            figures["export_seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    loaded, _ = load_checkpoint(model, "cpu", engine, threads=threads)
    figures["load_seconds"] = time.perf_counter() - started
    if engine == "transformers":
        first, ids = _stock(loaded, prompt, 1)
        whole, ids = _stock(loaded, prompt, tokens)
        figures.update(prefill_seconds=first, decode_seconds=whole - first)
    else:
        if engine == "sparse":
            loaded.generate([prompt[:8]], 2)             # compile the kernels (cached on disk)
        session = loaded.session([prompt], eos_id=None, threads=threads,
                                 **({"max_new_tokens": tokens} if engine == "llama.cpp"
                                    else {}))
        ids, first = [], None
        started = time.perf_counter()
        for step in session:
            ids.append(step[0][1])
            if first is None:
                first = time.perf_counter() - started
            if len(ids) >= tokens:
                session.end(0)
        figures.update(prefill_seconds=first, decode_seconds=time.perf_counter() - started - first)
    figures.update(ids=ids, prompt_tokens=len(prompt), trace=ids == trace[:len(ids)],
                   peak_gb=peak_rss_gb())
    return figures


def _stock(model, prompt: list[int], count: int) -> tuple[float, list[int]]:
    import torch

    input_ids = torch.tensor([prompt], device=model.device)
    started = time.perf_counter()
    with torch.inference_mode():
        output = model.generate(input_ids, attention_mask=torch.ones_like(input_ids),
                                do_sample=False, num_beams=1, use_cache=True,
                                max_new_tokens=count, min_new_tokens=count, pad_token_id=0)
    return time.perf_counter() - started, output[0, len(prompt):].tolist()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True,
                        help="a QwenGPU checkpoint written by hdlc compile (or hdlc splice)")
    parser.add_argument("--kernel", default="serial_mad", help="example whose prompt is fed")
    parser.add_argument("--engines", default=",".join(ENGINES),
                        help=f"which to run, in order (default {','.join(ENGINES)})")
    parser.add_argument("--tokens", type=int, default=160, help="tokens the sparse engine "
                                                                "writes (default 160)")
    parser.add_argument("--stock-tokens", type=int, default=16,
                        help="tokens stock transformers writes (default 16)")
    parser.add_argument("--llamacpp-tokens", type=int, default=64,
                        help="tokens llama.cpp writes (default 64)")
    parser.add_argument("--threads", type=int, default=1, help="threads of every engine")
    parser.add_argument("--one", choices=ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    counts = {"transformers": args.stock_tokens, "sparse": args.tokens,
              "llama.cpp": args.llamacpp_tokens}
    if args.one:
        print(json.dumps(measure(args.one, args.model, args.kernel, counts[args.one],
                                 args.threads)))
        return 0
    engines = [name for name in args.engines.split(",") if name]
    unknown = sorted(set(engines) - set(ENGINES))
    if unknown:
        parser.error(f"unknown engine {unknown[0]!r} (known: {', '.join(ENGINES)})")
    results = []
    for engine in engines:
        command = [sys.executable, __file__, "--model", str(args.model), "--kernel",
                   args.kernel, "--threads", str(args.threads), "--one", engine,
                   "--tokens", str(args.tokens), "--stock-tokens", str(args.stock_tokens),
                   "--llamacpp-tokens", str(args.llamacpp_tokens)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{engine}: failed\n{done.stderr.strip()}", file=sys.stderr)
            return 1
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"machine: {platform.machine()} {platform.processor() or ''}; checkpoint "
          f"{args.model}; prompt of examples/{args.kernel}: {results[0]['prompt_tokens']} "
          f"tokens; batch 1, {args.threads} thread(s)")
    header = (f"{'engine':<13} {'load s':>7} {'prefill s':>9} {'tokens':>7} {'tokens/s':>9} "
              f"{'peak GB':>8}  trace  stock's ids")
    print(header)
    print("-" * len(header))
    stock = next((result["ids"] for result in results if result["engine"] == "transformers"),
                 None)
    for result in results:
        ids = result["ids"]
        rate = (len(ids) - 1) / result["decode_seconds"] if len(ids) > 1 else 0.0
        same = "-" if stock is None else \
            ("yes" if ids[:len(stock)] == stock[:len(ids)] else "NO")
        print(f"{result['engine']:<13} {result['load_seconds']:>7.1f} "
              f"{result['prefill_seconds']:>9.2f} {len(ids):>7} {rate:>9.2f} "
              f"{result['peak_gb']:>8.2f}  {'yes' if result['trace'] else 'NO':<5}  {same}")
        if result["export_seconds"] is not None:
            print(f"  (the GGUF was exported first: {result['export_seconds']:.1f} s)")
    good = all(result["trace"] for result in results) and all(
        result["ids"][:len(stock)] == stock[:len(result["ids"])] for result in results
    ) if stock is not None else all(result["trace"] for result in results)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
