"""`hdlc export DIR --gguf OUT.gguf`: a compiled or spliced checkpoint as a float32 GGUF.

The GGUF is what llama.cpp runs (`qwen35` architecture, the machine's vocabulary, every
tensor float32; docs/llamacpp.md): its own tools load it, and `hdlc run LAUNCH --backend
model --model DIR --engine llama.cpp --gguf OUT.gguf` runs a launch on it (without `--gguf`,
`hdlc run` exports into DIR.gguf beside the checkpoint itself).  It needs the `gguf` package (`pip
install -e ".[llamacpp]"`).  OUT is written beside itself as `.OUT.partial` and renamed
when whole, so a failed export leaves nothing.
"""

from __future__ import annotations

import argparse
import sys
import time

NAME = "export"
HELP = "write a compiled or spliced checkpoint as a float32 GGUF for llama.cpp"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="DIR",
                        help="the checkpoint (hdlc compile or hdlc splice wrote it)")
    parser.add_argument("--gguf", required=True, metavar="OUT.gguf",
                        help="the GGUF file to write (missing folders are made)")


def run(args: argparse.Namespace) -> int:
    from qwengpu.llamacpp import export_gguf

    start = time.perf_counter()

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=sys.stderr)

    report = export_gguf(args.model, args.gguf, progress=say)
    print(report.describe())
    return 0
