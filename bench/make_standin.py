"""Write a random-weight stand-in for a Qwen3.5 base, to splice and time without real weights.

    python bench/make_standin.py OUT                       # Qwen3.5-2B's shape, whole
    python bench/make_standin.py OUT --layers 4 --vocab-rows 0 --shared 0.01   # the tests'

The stand-in has every dimension of Qwen3.5-2B (tests/splice/bases.py: `QWEN35_2B_DIMS`:
hidden 2,048, MLP 6,144, 16 DeltaNet heads, 8 attention heads, every fourth layer full
attention), `--layers` of them (default 24, the real model's), bfloat16, tied embeddings
with `--vocab-rows` rows (default 248,320, the real model's; 0: the tests' BPE tokenizer's
907 tokens rounded up to 960), whose rows share a direction of entries N(0, `--shared`)
against noise N(0, 0.08) (docs/splice.md, "The frontier": a table of the real size needs
about 0.02 for the text gate; the default is 0.03).  The whole stand-in takes about a
minute and 12 GB of memory to write, 3.6 GB on disk; `hdlc splice --base OUT -o SPLICED`
then takes about 100 s and 12 GB, and writes 16 GB (its machine layers are float32).

    python bench/bench_engine.py --model SPLICED --batches 1,8 --stock-batches ''

times the sparse engine on it (stock transformers would need about 20 GB in float32).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPLICE_TESTS = ROOT / "tests" / "splice"
if str(SPLICE_TESTS) not in sys.path:
    sys.path.insert(0, str(SPLICE_TESTS))

from bases import QWEN35_2B_DIMS, make_base  # noqa: E402

QWEN35_2B_LAYERS, QWEN35_2B_VOCAB_ROWS = 24, 248_320


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, help="a folder that does not exist yet")
    parser.add_argument("--layers", type=int, default=QWEN35_2B_LAYERS)
    parser.add_argument("--vocab-rows", type=int, default=QWEN35_2B_VOCAB_ROWS,
                        help="embedding rows (0: the tokenizer's size, rounded up to 64)")
    parser.add_argument("--shared", type=float, default=0.03,
                        help="std of the entries of the direction every embedding row shares")
    args = parser.parse_args(argv)
    if args.output.exists():
        print(f"error: {args.output} exists", file=sys.stderr)
        return 1
    if args.layers < 1:
        print("error: --layers must be at least 1", file=sys.stderr)
        return 1
    import torch

    started = time.perf_counter()
    shape = dataclasses.replace(QWEN35_2B_DIMS, num_layers=args.layers)
    make_base(args.output, shape, tied=True, dtype=torch.bfloat16,
              vocab_rows=args.vocab_rows or None, shared=args.shared)
    print(f"{args.output}: {args.layers} layers of Qwen3.5-2B's dimensions, "
          f"{args.vocab_rows or 'the tokenizer'} embedding rows, shared {args.shared}, "
          f"bfloat16 ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
