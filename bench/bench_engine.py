"""Benchmark: the sparse engine against stock transformers on one checkpoint, side by side.

    python bench/bench_engine.py --model DIR                       # vector_add's prompt
    python bench/bench_engine.py --model DIR --kernel saxpy_int --new-tokens 540
    python bench/bench_engine.py --model DIR --batches 1,32 --threads 1,2 --stock-batches 1,32
    python bench/bench_engine.py --model DIR --device cuda      # the engine's torch version

In one process, on the same checkpoint, the same launch prompt (`--kernel`, for the
checkpoint's own machine) and the same number of new tokens, it times:

- the sparse engine (`qwengpu.engine`) for each batch size in `--batches` (copies of the
  prompt, a row each) and each thread count in `--threads`: the prefill, then the decode
  steps;
- stock transformers (`AutoModelForCausalLM.from_pretrained`, dense, `generate()` greedy)
  for each batch size in `--stock-batches`, with torch at each of `--threads` threads:
  `generate` of one new token (the prefill) and of `--stock-tokens` (default 16: stock is
  slow) more; the difference over those tokens is its decode rate.

Per line: prefill seconds, decode tokens/s over the whole batch, the ratio to stock's
decode at batch 1 and 1 thread, records/s and thread-instructions/s (the records the
tokens make, and their active lanes: the engine's ids are decoded, and the first row's are
checked against stock's ids and the interpreter's trace).  Then the engine's peak memory
(the process's peak resident size before stock transformers is loaded) and what it keeps of
the checkpoint.  Figures depend on the machine: quote them with the machine named, or as
ratios.
"""

from __future__ import annotations

import argparse
import gc
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def time_engine(engine, prompt: list[int], batch: int, threads: int, new_tokens: int
                ) -> tuple[float, float, list[int]]:
    """(prefill seconds, decode seconds for new_tokens - 1 steps, row 0's ids)."""
    session = engine.session([prompt] * batch, eos_id=None, threads=threads)
    written: list[int] = []
    started = time.perf_counter()
    for step in session:
        written.append(step[0][1])
        if session.steps >= new_tokens:
            for row in range(batch):
                session.end(row)
    seconds = time.perf_counter() - started
    return session.prefill_seconds, seconds - session.prefill_seconds, written


def time_stock(model, prompt: list[int], batch: int, new_tokens: int
               ) -> tuple[float, float, list[int]]:
    """(prefill seconds, decode seconds for new_tokens - 1 steps, row 0's ids) of greedy
    `generate()`: one new token, then new_tokens."""
    import torch

    input_ids = torch.tensor([prompt] * batch, device=model.device)

    def generate(count: int):
        started = time.perf_counter()
        with torch.inference_mode():
            output = model.generate(input_ids, attention_mask=torch.ones_like(input_ids),
                                    do_sample=False, num_beams=1, use_cache=True,
                                    max_new_tokens=count, min_new_tokens=count,
                                    pad_token_id=0)
        return time.perf_counter() - started, output[0, len(prompt):].tolist()

    prefill, _ = generate(1)
    whole, ids = generate(new_tokens)
    return prefill, whole - prefill, ids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True,
                        help="a QwenGPU checkpoint written by hdlc compile or hdlc splice")
    parser.add_argument("--kernel", default="vector_add", help="example whose prompt is fed")
    parser.add_argument("--new-tokens", type=int, default=540,
                        help="tokens the engine writes a row (default 540: ten records)")
    parser.add_argument("--batches", default="1,32", help="engine batch sizes")
    parser.add_argument("--threads", default="1,2", help="thread counts (engine and torch)")
    parser.add_argument("--stock-batches", default="1",
                        help="stock transformers batch sizes ('' for none; 32 takes long)")
    parser.add_argument("--stock-tokens", type=int, default=16,
                        help="tokens stock transformers writes (it is slow)")
    parser.add_argument("--device", default=None,
                        help="torch device of both engines (default: the CPU, where the "
                             "sparse engine runs its compiled kernels; cuda: its torch "
                             "version, docs/engine.md)")
    args = parser.parse_args(argv)
    batches = [int(value) for value in args.batches.split(",") if value]
    threads = [int(value) for value in args.threads.split(",") if value]
    stock_batches = [int(value) for value in args.stock_batches.split(",") if value]

    import torch

    from qwengpu.trace.decode import TraceDecoder
    from qwengpu.runtime.launch import load_launch, machine_limits, run_launch_sim
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.model_backend import load_checkpoint
    from qwengpu.runtime.prompt import build_prompt

    machine = checkpoint_machine(args.model)
    launch = load_launch(ROOT / "examples" / args.kernel / "launch.json",
                         machine_limits(machine))
    started = time.perf_counter()
    engine, protocol = load_checkpoint(args.model, args.device, "sparse")
    load_seconds = time.perf_counter() - started
    prompt = build_prompt(launch, protocol, machine)
    trace = protocol.encode_records(run_launch_sim(launch, machine=machine).records)
    per_record = protocol.tokens_per_record

    def work(ids: list[int]) -> tuple[int, int]:
        """(records, thread-instructions) in the whole records of ids."""
        decoder = TraceDecoder(protocol)
        for token_id in ids[:len(ids) // per_record * per_record]:
            if token_id == protocol.eos_id:
                break
            decoder.feed(token_id)
        records = decoder.records
        return len(records), sum(bin(record["active"]).count("1") for record in records)

    device = args.device or "cpu"
    if device.startswith("cuda"):
        device += f" ({torch.cuda.get_device_name()})"
    print(f"machine: {platform.machine()} {platform.processor() or ''}, "
          f"{torch.get_num_threads()} torch threads by default; device {device}; checkpoint "
          f"{args.model}; prompt of examples/{args.kernel}: {len(prompt)} tokens")
    header = (f"{'engine':<13} {'batch':>5} {'threads':>7} {'prefill s':>9} {'tokens':>7} "
              f"{'tokens/s':>9} {'ratio':>7} {'records/s':>10} {'thread-instr/s':>14}  same")
    print(header)
    print("-" * len(header))
    engine.generate([prompt[:8]], 2)                     # compile the kernels (cached on disk)
    rows = []
    for batch in batches:
        for count in threads:
            prefill, decode, ids = time_engine(engine, prompt, batch, count, args.new_tokens)
            rows.append(("sparse", batch, count, prefill, decode, ids))
    engine_peak = peak_rss_gb()
    figures = getattr(engine, "engine", engine).weights.figures()   # spliced: its engine's
    del engine
    gc.collect()

    stock_rows = []
    if stock_batches:
        model, _ = load_checkpoint(args.model, args.device or "cpu", "transformers")
        for batch in stock_batches:
            for count in threads:
                torch.set_num_threads(count)
                prefill, decode, ids = time_stock(model, prompt, batch, args.stock_tokens)
                stock_rows.append(("transformers", batch, count, prefill, decode, ids))
        del model
        gc.collect()
    baseline = next((batch * (len(ids) - 1) / decode for _, batch, count, _, decode, ids
                     in stock_rows if batch == 1 and count == 1), None)
    for name, batch, count, prefill, decode, ids in stock_rows + rows:
        rate = batch * (len(ids) - 1) / decode
        records, instructions = work(ids)
        share = batch * (len(ids) - 1) / len(ids) / decode      # decode share of each row
        same = "yes" if ids == trace[:len(ids)] else "NO"
        if name == "sparse" and stock_rows:
            stock_ids = stock_rows[0][5]
            same += "" if ids[:len(stock_ids)] == stock_ids else " (not stock's ids)"
        ratio = f"{rate / baseline:.1f}x" if baseline else "-"
        print(f"{name:<13} {batch:>5} {count:>7} {prefill:>9.2f} {len(ids):>7} {rate:>9.1f} "
              f"{ratio:>7} {records * share:>10.2f} {instructions * share:>14.1f}  {same}")
    print(f"engine: read in {load_seconds:.1f} s; peak memory {engine_peak:.2f} GB (the "
          f"process before stock transformers loads); keeps {figures['kept_nonzeros']:,} "
          f"nonzero weights ({figures['kept_bytes'] / 2 ** 20:.1f} MB) of "
          f"{figures['parameters']:,} parameters: {figures['mlp_units']:,} MLP units, "
          f"{figures['deltanet_heads']} DeltaNet heads, {figures['attention_heads']} "
          f"attention heads live; {figures['family_units']:,} units in "
          f"{figures['gate_families']:,} gate families "
          f"({figures['family_bytes'] / 2 ** 20:.1f} MB of panels)")
    if stock_rows:
        print(f"transformers: peak memory {peak_rss_gb():.2f} GB (the process)")
    return 0 if all(ids == trace[:len(ids)] for *_, ids in rows + stock_rows) else 1


if __name__ == "__main__":
    sys.exit(main())
