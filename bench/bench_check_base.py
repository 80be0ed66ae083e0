"""`hdlc splice --check-base` end to end on stand-ins of the real Qwen3.5-2B's size.

    python bench/bench_check_base.py [--shared 0.02 0.01 0] [--tokens 248077] [--rows 248320]

A user with the real Qwen3.5-2B is told to run `hdlc splice --check-base` first; its text
gate must then separate 248,077 text tokens' embeddings, where the test bases have about a
thousand.  This script writes, for each `--shared`, a base of Qwen3.5-2B's dimensions
(tests/splice/bases.py: `QWEN35_2B_DIMS`, its 4 layers, bfloat16, tied embeddings,
`--rows` embedding rows whose entries share a direction of std `shared` plus noise N(0,
0.08); 0 is isotropic), whose tokenizer.json's BPE vocabulary is padded with synthetic
tokens to `--tokens` ids (the real one's count), and runs the real command line on it
(`python -m qwengpu.cli splice --check-base BASE`, a new process) with its wall time, its
peak memory and its verdict.  The bases are written under a temporary folder and removed.
Figures depend on the machine: quote them with it named.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
SPLICE_TESTS = ROOT / "tests" / "splice"
if str(SPLICE_TESTS) not in sys.path:
    sys.path.insert(0, str(SPLICE_TESTS))

from bases import QWEN35_2B_DIMS, make_base  # noqa: E402

# the command line, then its own peak resident memory on stderr's last line
CHECK = ("import resource, sys; from qwengpu.cli import main; status = main(sys.argv[1:]); "
         "print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); "
         "sys.exit(status)")


def pad_vocabulary(base: Path, tokens: int) -> None:
    """Give the base's tokenizer `tokens` ids, as Qwen's: the BPE vocabulary padded with
    synthetic tokens (byte-level strings no machine text can equal, as they start with 'Ġ'),
    then the special (added) tokens moved to the top ids, with the configs' token ids; the
    embedding rows are random, so which row a token reads does not matter."""
    path = base / "tokenizer.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    vocab, added = data["model"]["vocab"], data.get("added_tokens", [])
    moved = {token["id"]: tokens - len(added) + place for place, token in enumerate(added)}
    for token in added:
        vocab.pop(token["content"], None)
        token["id"] = moved[token["id"]]
    for token_id in range(max(vocab.values()) + 1, tokens - len(added)):
        vocab[f"Ġstandin{token_id}"] = token_id
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    for name in ("config.json", "generation_config.json", "tokenizer_config.json"):
        config_path = base / name
        if config_path.is_file():
            config_path.write_text(json.dumps(renumbered(json.loads(config_path.read_text()),
                                                         moved), indent=2))


def renumbered(value, moved: dict[int, int]):
    """`value` (a config's JSON) with each *_token_id(s) entry's ids moved, and
    tokenizer_config's added_tokens_decoder keys."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "added_tokens_decoder":
                out[key] = {str(moved.get(int(k), int(k))): v for k, v in item.items()}
            elif key.endswith(("_token_id", "_token_ids")):
                out[key] = ([moved.get(i, i) for i in item] if isinstance(item, list)
                            else moved.get(item, item))
            else:
                out[key] = renumbered(item, moved)
        return out
    if isinstance(value, list):
        return [renumbered(item, moved) for item in value]
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=float, nargs="+", default=[0.02, 0.01, 0.0])
    parser.add_argument("--tokens", type=int, default=248_077)
    parser.add_argument("--rows", type=int, default=248_320)
    parser.add_argument("-P", "--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a spec parameter passed to `hdlc splice` (repeatable), e.g. "
                             "-P LANES=2 for a machine that leaves the gate more dims")
    args = parser.parse_args(argv)
    print(f"machine: {platform.machine()} {platform.processor() or ''}, "
          f"torch {torch.__version__}; stand-ins of Qwen3.5-2B's dims, {args.tokens} text "
          f"tokens, {args.rows} rows, bfloat16, tied"
          f"{'; machine ' + ' '.join(args.param) if args.param else ''}")
    print("| shared | write base s | check-base s | its peak GiB | exit | verdict |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for shared in args.shared:
            base = Path(folder) / f"base-{shared}"
            started = time.perf_counter()
            make_base(base, QWEN35_2B_DIMS, tied=True, dtype=torch.bfloat16,
                      vocab_rows=args.rows, shared=shared)
            pad_vocabulary(base, args.tokens)
            written = time.perf_counter() - started
            started = time.perf_counter()
            flags = [flag for param in args.param for flag in ("-P", param)]
            done = subprocess.run([sys.executable, "-c", CHECK, "splice", *flags,
                                   "--check-base", str(base)], cwd=ROOT, capture_output=True,
                                  text=True)
            seconds = time.perf_counter() - started
            said = (done.stdout + done.stderr).strip().splitlines()
            peak = int(said.pop().split()[1]) / 2 ** 20 if said and said[-1].startswith(
                "peak ") else float("nan")
            verdict = next((line for line in reversed(said)
                            if "text gate" in line or "error" in line), said[-1] if said
                           else "")
            print(f"| {shared} | {written:.0f} | {seconds:.1f} | {peak:.1f} | "
                  f"{done.returncode} | {verdict.replace('|', '/')} |", flush=True)
            for line in said:
                print(f"    {line}")
            shutil.rmtree(base)                     # 1 GB a base: one at a time
    return 0


if __name__ == "__main__":
    sys.exit(main())
