"""The text gate's frontier: how much shared direction a base's embeddings need to be spliced.

    python bench/bench_splice_frontier.py [--tokens 8000 248320] [--free 50] [--hidden 2048]

`hdlc splice` needs a direction `u` on the residual dims the machine leaves free with
`u . n(e_t) < 0` for every text token (docs/splice.md, "The weakest condition").  Whether one
exists is a property of the base's embedding table; real Qwen3.5 weights cannot be read here,
so this measures it on stand-in tables in the Qwen3.5-2B width (`standin_embeddings`): row t
is `m + noise_t`, `m` a direction every row shares with entries N(0, shared), the noise
N(0, 0.08) per entry (the tests' bases have shared 0.02); with 1% of the rows heavy-tailed
outliers (their noise Student-t with 2 degrees of freedom, times 0.08); and isotropic
(shared 0, as `Qwen3_5ForCausalLM(config)` initialises an embedding).

For each table it runs the gate as splice looked for it before the linear program (the
ascent alone on 1, 2, 4, ... of the free dims, accepted above a margin of 0) and as it looks
now (`gate.find_text_gate`: the ascent, then the exact linear program on all free dims,
accepted above `gate.MIN_MARGIN`), and bisects a grid of `shared` values for the smallest
that splices each way.  `--free` is the dims the whole machine leaves in the 2B width (50
since the FPU's add, 117 before: `hdlc splice --check-base` prints it).  The figures go into docs/splice.md, "The frontier";
tests/splice/test_gate.py holds chosen points of it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from qwengpu.errors import UserError  # noqa: E402
from qwengpu.splice import gate as text_gate  # noqa: E402

NOISE = 0.08
OUTLIER_SHARE = 0.01
EPS = 1e-6                          # Qwen3.5's rms_norm_eps
GRID = [0.04, 0.03, 0.02, 0.015, 0.0125, 0.01, 0.009, 0.008, 0.007, 0.006, 0.005, 0.0025]


def standin_embeddings(tokens: int, hidden: int, shared: float, *, outliers: bool = False,
                       seed: int = 0) -> torch.Tensor:
    """A float32 [tokens, hidden] stand-in embedding table (the module docstring says how it
    is drawn), the same for the same arguments."""
    generator = torch.Generator().manual_seed(seed)
    direction = torch.randn(hidden, generator=generator, dtype=torch.float64) * shared
    rows = torch.randn(tokens, hidden, generator=generator, dtype=torch.float32) * NOISE
    if outliers:
        count = max(1, int(tokens * OUTLIER_SHARE))
        which = torch.randperm(tokens, generator=generator)[:count]
        normal = torch.randn(count, hidden, generator=generator, dtype=torch.float64)
        # Student-t with 2 dof: a normal over sqrt(chi2 / 2), and chi2(2) / 2 is -log U
        uniform = torch.rand(count, hidden, generator=generator, dtype=torch.float64)
        rows[which] = (normal * (-uniform.clamp(min=1e-300).log()).rsqrt() * NOISE).float()
    return rows + direction.float()


def ascent_margin(rows: torch.Tensor, free: int) -> float:
    """The best margin of the ascent alone (the gate before the linear program)."""
    ranked = text_gate.RankedDims(rows, free, EPS)
    return max(gate.margin for gate in text_gate.ascent_ladder(ranked))


def program_margin(rows: torch.Tensor, free: int) -> float:
    """The linear program's margin on all `free` dims (0 where no gate exists)."""
    return text_gate.widest_gate(text_gate.RankedDims(rows, free, EPS), free)[0].margin


def smallest_splicing(tokens, hidden, free, outliers, margin_of, threshold,
                      grid=GRID) -> tuple:
    """Bisect `grid` (decreasing) for the smallest `shared` whose margin is above
    `threshold`; returns (shared or None, {shared: margin} measured)."""
    seen = {}

    def splices(index):
        shared = grid[index]
        if shared not in seen:
            seen[shared] = margin_of(standin_embeddings(tokens, hidden, shared,
                                                        outliers=outliers), free)
        return seen[shared] > threshold

    low, high = 0, len(grid) - 1          # grid[low] is assumed to splice
    if not splices(low):
        return None, seen
    if splices(high):
        return grid[high], seen
    while high - low > 1:
        middle = (low + high) // 2
        if splices(middle):
            low = middle
        else:
            high = middle
    return grid[low], seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[8000, 248320])
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--free", type=int, default=50)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"stand-in embeddings, hidden {args.hidden}, gate on at most {args.free} free dims; "
          f"noise N(0, {NOISE}); outliers: {OUTLIER_SHARE:.0%} of rows Student-t (2 dof)")
    print("| text tokens | outliers | smallest shared: before (ascent) | now (linear program) "
          "| margins measured, before / now |")
    print("|---|---|---|---|---|")
    for tokens in args.tokens:
        for outliers in (False, True):
            start = time.perf_counter()
            now, program = smallest_splicing(tokens, args.hidden, args.free, outliers,
                                             program_margin, text_gate.MIN_MARGIN)
            # Where the program finds no margin the ascent cannot either: the ascent's
            # frontier is searched from the program's up.
            above = [shared for shared in GRID if now is None or shared >= now]
            before, ascent = smallest_splicing(tokens, args.hidden, args.free, outliers,
                                               ascent_margin, 0.0, above)
            measured = ", ".join(
                f"{shared:g}: {ascent.get(shared, float('nan')):.3g} / "
                f"{program.get(shared, float('nan')):.3g}"
                for shared in sorted(set(ascent) | set(program), reverse=True))
            print(f"| {tokens:,} | {'1%' if outliers else 'none'} | {before} | {now} | "
                  f"{measured} |  ({time.perf_counter() - start:.0f} s)", flush=True)
        rows = standin_embeddings(tokens, args.hidden, 0.0)
        try:
            text_gate.find_text_gate(rows, args.free, EPS)
            verdict = "spliced"
        except UserError as error:
            verdict = f"refused: {error.message}"
        print(f"isotropic, {tokens:,} text tokens: {verdict}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
