"""The meaning check every pass test uses, and passes run with the IR verified after each
(the small graphs are tests/graph_helpers.py's)."""

from __future__ import annotations

import random

from qwengpu.ir import Graph, evaluate, random_state, verify
from qwengpu.passes import run_passes


def assert_same_meaning(before: Graph, after: Graph, samples: int = 40, seed: int = 0) -> None:
    """Both graphs give the same writes, record and stop on seeded random states."""
    rng = random.Random(seed)
    for sample in range(samples):
        state = random_state(before, rng, "edges" if sample % 2 else "uniform")
        expected, got = evaluate(before, state), evaluate(after, state)
        assert got == expected, f"state {state}: expected {expected}, got {got}"


def run_checked(graph: Graph, *names: str) -> tuple[Graph, list]:
    """A copy of `graph` after the passes, verified after each; the stats rows."""
    out = graph.copy()
    verify(out)
    stats = run_passes(out, list(names), check=True)
    return out, stats
