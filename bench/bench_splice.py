"""Benchmark: the machine spliced into a Qwen3.5 base (`hdlc splice`), its costs side by side.

    python bench/bench_splice.py --base BASE                        # splices into a temp dir
    python bench/bench_splice.py --base BASE --model SPLICED --standalone COMPILED

In one process, with the machine (CPU model, torch threads) named first:

- splice: `hdlc splice SPEC --base BASE` into `--output` (default a temporary directory,
  removed at the end) unless `--model` names a spliced checkpoint already written: seconds,
  peak memory, size on disk, and the report's figures (gate margin, scale, machine margin);
- text: the base and the spliced model (stock transformers, float32, `--threads`) over the
  text sample (default `bases.TEXT_SAMPLE` of tests/splice): prefill tokens/s of each, whether
  the spliced logits over the base's tokens are bit-identical to the base's, and the margin
  of the base's best token over the best machine token (its minimum over the positions);
- a kernel (`--kernel`'s launch prompt) on the sparse engine: prefill seconds and decode
  tokens/s over `--new-tokens`, in the spliced checkpoint and in `--standalone` (the same
  machine compiled alone, `hdlc compile SPEC --target qwen3.5-2b`), the ids checked against
  the interpreter's trace; then `--batch` copies of the prompt as one batch, on one thread
  and on `--engine-threads` (tokens/s over all rows, and the ratio to one row);
- stock transformers `generate()` on `--stock-kernel`'s prompt: prefill seconds and decode
  tokens/s over `--stock-tokens`, spliced and standalone, the ids checked the same way.

Each phase's peak memory is the process's peak resident size during it (VmHWM, reset
between phases); sizes and peaks are in GiB.  The sparse engine runs one row on one
thread.  Figures depend on the machine: quote them with it named.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = ROOT / "specs" / "qwengpu.hdl"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def reset_peak() -> None:
    """Start a new VmHWM (Linux); elsewhere the peak stays the process's whole-run peak."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_gb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def size_gb(directory: Path) -> float:
    """GiB, like the peaks."""
    return sum(path.stat().st_size for path in directory.iterdir() if path.is_file()) / 2 ** 30


def report_lines(spliced: Path) -> list[str]:
    """The splice report (splice.txt up to the schedule)."""
    text = (spliced / "splice.txt").read_text()
    return text.split("\n\n", 1)[0].splitlines()


def run_splice(spec: str, base: Path, output: Path, params: dict[str, int]) -> None:
    from qwengpu.splice.pipeline import splice

    reset_peak()
    started = time.perf_counter()
    splice(spec, base, output, params=params)
    seconds = time.perf_counter() - started
    print(f"splice: {seconds:.1f} s, peak memory {peak_gb():.2f} GiB, {size_gb(output):.2f} GiB "
          f"on disk ({output})")


def text_figures(base: Path, spliced: Path, text: str) -> bool:
    """Prefill tokens/s of the base and the spliced model; bit-identity; margin.  True when
    identical and no machine token is the argmax."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoTokenizer

    from qwengpu.runtime.spliced import read_splice
    from qwengpu.splice.vocab import tokenizer_extent

    auto = AutoModelForImageTextToText if read_splice(spliced).multimodal \
        else AutoModelForCausalLM
    known = tokenizer_extent(json.loads((base / "tokenizer.json").read_text()))
    ids = torch.tensor([AutoTokenizer.from_pretrained(base)(text)["input_ids"]])
    logits, rows = {}, []
    for name, directory in (("base", base), ("spliced", spliced)):
        reset_peak()
        started = time.perf_counter()
        model = auto.from_pretrained(directory, dtype=torch.float32).eval()
        load = time.perf_counter() - started
        with torch.no_grad():
            model(ids[:, :8])                                        # warm-up
            started = time.perf_counter()
            logits[name] = model(ids).logits[0]
            seconds = time.perf_counter() - started
        rows.append((name, model.config.get_text_config().num_hidden_layers, load, seconds,
                     peak_gb()))
        del model
        gc.collect()
    got, expected = logits["spliced"], logits["base"][:, :known]
    same = torch.equal(got[:, :known], expected)
    margin = got[:, :known].max(1).values - got[:, known:].max(1).values
    print(f"text: {ids.shape[1]} tokens of the sample, {known} base tokens; stock transformers "
          f"float32, {torch.get_num_threads()} threads")
    for name, layers, load, seconds, peak in rows:
        print(f"  {name:<8} {layers:>3} layers  load {load:6.1f} s  prefill {seconds:7.2f} s  "
              f"{ids.shape[1] / seconds:8.1f} tokens/s  peak {peak:.2f} GiB")
    print(f"  spliced logits over the base's tokens bit-identical to the base's: "
          f"{'yes' if same else 'NO'}; machine-token margin min {float(margin.min()):.3f} "
          f"(argmax a machine token at {int((margin <= 0).sum())} positions)")
    return same and float(margin.min()) > 0


def kernel_prompt(directory: Path, kernel: str):
    """(prompt, interpreter's trace ids) of examples/KERNEL in the checkpoint's machine."""
    from qwengpu.runtime.launch import load_launch, machine_limits, run_launch_sim
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.prompt import build_prompt
    from qwengpu.trace.protocol import TraceProtocol

    machine = checkpoint_machine(directory)
    protocol = TraceProtocol.load(directory)
    launch = load_launch(ROOT / "examples" / kernel / "launch.json", machine_limits(machine))
    trace = protocol.encode_records(run_launch_sim(launch, machine=machine).records)
    return build_prompt(launch, protocol, machine), trace


def time_sparse(directory: Path, kernel: str, new_tokens: int, rows: int = 1,
                threads: int = 1) -> tuple:
    """(load s, prompt tokens, prefill s, decode tokens/s over all `rows`, ids as the
    interpreter's in every row, peak): `rows` copies of the prompt as one batch, its rows
    shared out over `threads`."""
    from qwengpu.runtime.model_backend import load_checkpoint

    reset_peak()
    started = time.perf_counter()
    engine, _ = load_checkpoint(directory, None, "sparse")
    load = time.perf_counter() - started
    prompt, trace = kernel_prompt(directory, kernel)
    engine.generate([prompt[:8]], 2, eos_id=0)          # compile the kernels (cached on disk)
    session = engine.session([prompt] * rows, eos_id=None, threads=threads)
    inner = getattr(session, "session", session)        # a spliced engine wraps the session
    written: list[list[int]] = [[] for _ in range(rows)]
    started = time.perf_counter()
    for step in session:
        for row, token in step:
            written[row].append(token)
            if len(written[row]) >= new_tokens:
                session.end(row)
    decode = time.perf_counter() - started - inner.prefill_seconds
    rate = sum(len(ids) - 1 for ids in written) / decode
    same = all(ids == trace[:len(ids)] for ids in written)
    result = (load, len(prompt), inner.prefill_seconds, rate, same, peak_gb())
    del engine, session, inner
    gc.collect()
    return result


def time_stock(directory: Path, kernel: str, new_tokens: int) -> tuple:
    """The same figures for stock transformers `generate()` (greedy, with its cache), timed
    token by token through a streamer."""
    import torch

    from qwengpu.runtime.model_backend import load_checkpoint

    reset_peak()
    started = time.perf_counter()
    model, _ = load_checkpoint(directory, "cpu", "transformers")
    load = time.perf_counter() - started
    prompt, trace = kernel_prompt(directory, kernel)

    class Clock:
        def __init__(self):
            self.times: list[float] = []

        def put(self, value) -> None:
            self.times.append(time.perf_counter())

        def end(self) -> None:
            pass

    clock = Clock()
    input_ids = torch.tensor([prompt])
    started = time.perf_counter()
    with torch.inference_mode():
        output = model.generate(input_ids, attention_mask=torch.ones_like(input_ids),
                                do_sample=False, num_beams=1, use_cache=True,
                                max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                pad_token_id=0, streamer=clock)
    ids = output[0, len(prompt):].tolist()
    stamps = clock.times[1:]                             # the first put is the prompt
    prefill = stamps[0] - started
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0])
    result = (load, len(prompt), prefill, rate, ids == trace[:len(ids)], peak_gb())
    del model
    gc.collect()
    return result


def print_runs(title: str, kernel: str, tokens: int, rows: list[tuple]) -> None:
    print(f"{title}: examples/{kernel}, {tokens} new tokens")
    for name, (load, prompt, prefill, rate, same, peak) in rows:
        print(f"  {name:<10} load {load:6.1f} s  prompt {prompt:>4}  prefill {prefill:7.2f} s  "
              f"decode {rate:8.2f} tokens/s  as interpreter: {'yes' if same else 'NO'}  "
              f"peak {peak:.2f} GiB")
    if len(rows) == 2:
        print(f"  spliced / standalone decode: {rows[0][1][3] / rows[1][1][3]:.4f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the base checkpoint")
    parser.add_argument("--spec", default=str(DEFAULT_SPEC), help="the HDL spec to splice")
    parser.add_argument("-P", "--param", action="append", metavar="NAME=VALUE",
                        help="override a spec parameter (repeatable)")
    parser.add_argument("--model", type=Path, help="a spliced checkpoint of BASE already "
                                                   "written (no splice is timed)")
    parser.add_argument("--output", type=Path,
                        help="where to splice (default: a temporary directory, removed)")
    parser.add_argument("--standalone", type=Path,
                        help="the machine compiled alone (hdlc compile), for comparison")
    parser.add_argument("--text", type=Path, help="text file for the text figures (default: "
                                                  "TEXT_SAMPLE of tests/splice/bases.py)")
    parser.add_argument("--kernel", default="vector_add", help="example run on the engine")
    parser.add_argument("--new-tokens", type=int, default=64,
                        help="tokens the sparse engine writes (default 64)")
    parser.add_argument("--stock-kernel", default="serial_mad",
                        help="example run on stock transformers")
    parser.add_argument("--stock-tokens", type=int, default=8,
                        help="tokens stock transformers writes (default 8: it is slow)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--batch", type=int, default=8,
                        help="rows of the sparse engine's batched run (default 8; 1: none)")
    parser.add_argument("--engine-threads", type=int, default=2,
                        help="threads of the batched run besides one (default 2, as hdlc "
                             "run's --threads)")
    args = parser.parse_args(argv)
    from qwengpu.commands.check import parse_overrides
    params = parse_overrides(args.param, parser)

    import torch

    torch.set_num_threads(args.threads)
    if args.text is not None:
        text = args.text.read_text()
    else:
        sys.path.insert(0, str(ROOT / "tests" / "splice"))
        from bases import TEXT_SAMPLE as text
    print(f"machine: {cpu_name()} ({platform.machine()}), {os.cpu_count()} CPUs, torch "
          f"{args.threads} threads, sparse engine 1 thread; base {args.base}; spec {args.spec}")
    with tempfile.TemporaryDirectory(prefix="bench-splice-") as scratch:
        spliced = args.model
        if spliced is None:
            spliced = args.output or Path(scratch) / "spliced"
            run_splice(args.spec, args.base, spliced, params)
            gc.collect()
        else:
            print(f"spliced: {spliced}, {size_gb(spliced):.2f} GiB on disk")
        for line in report_lines(spliced):
            print(f"  {line}")
        good = text_figures(args.base, spliced, text)
        checkpoints = [("spliced", spliced)] + (
            [("standalone", args.standalone)] if args.standalone else [])
        runs = [(name, time_sparse(path, args.kernel, args.new_tokens))
                for name, path in checkpoints]
        print_runs("sparse engine", args.kernel, args.new_tokens, runs)
        for threads in sorted({1, args.engine_threads}) if args.batch > 1 else ():
            batched = [(name, time_sparse(path, args.kernel, args.new_tokens, args.batch,
                                          threads))
                       for name, path in checkpoints]
            print_runs(f"sparse engine, {args.batch} rows in one batch on {threads} "
                       "thread(s) (tokens/s over all rows)", args.kernel, args.new_tokens,
                       batched)
            for (name, one), (_, many) in zip(runs, batched):
                print(f"  {name}: batch {args.batch} on {threads} thread(s) / batch 1: "
                      f"{many[3] / one[3]:.2f} times the tokens/s")
            runs += batched
        stock = [(name, time_stock(path, args.stock_kernel, args.stock_tokens))
                 for name, path in checkpoints]
        print_runs("stock transformers", args.stock_kernel, args.stock_tokens, stock)
    return 0 if good and all(figures[4] for _, figures in runs + stock) else 1


if __name__ == "__main__":
    sys.exit(main())
