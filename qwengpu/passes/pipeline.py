"""Running passes in order: `run_passes(graph, names)`, the default pipeline and `--stats`.

A pipeline is a list of pass names.  `run_passes` runs them one after another on the graph
(in place), records a `PassStats` row per pass (changes, node counts before and after), can
hand a copy of the text form to a callback after a named pass (`dump_after`), and, when
asked (`check=True`, which the tests use), runs `verify` after every pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from qwengpu.errors import UserError
from qwengpu.ir import Graph, format_graph, verify
from qwengpu.passes.registry import PASSES

# Write cones cut at the record fields, per-lane field cones folded into one, word-level
# clean-up, lowering to digits, the same clean-up on digits (and if-else chains
# merged into one gadget each), then encodings.
DEFAULT_PIPELINE = [
    "cut-at-fields", "fold-lanes",
    "fold-constants", "merge-common", "remove-dead",
    "lower-digits",
    "fold-constants", "merge-common", "flatten-selects", "remove-dead",
    "select-encodings",
]


@dataclass(frozen=True)
class PassStats:
    name: str
    summary: str
    changes: int
    nodes_before: int
    nodes_after: int


def unknown_passes(names: Sequence[str]) -> list[str]:
    return [n for n in names if n not in PASSES]


def parse_pass_names(text: str | None) -> list[str]:
    """The names in a `--passes a,b,c` flag (the default pipeline when it is not given);
    `UserError` for a name no pass has."""
    if not text:
        return list(DEFAULT_PIPELINE)
    names = [n.strip() for n in text.split(",") if n.strip()]
    missing = unknown_passes(names)
    if missing:
        raise UserError(f"unknown pass {missing[0]!r}; `hdlc passes` lists them")
    return names


def run_passes(graph: Graph, names: Sequence[str] = DEFAULT_PIPELINE,
               dump_after: str | None = None, check: bool = False,
               dump: Callable[[str, str], None] | None = None) -> list[PassStats]:
    """Run the named passes on `graph` in order; returns one `PassStats` per pass.

    After each run of the pass named `dump_after`, `dump(name, text)` receives the graph's
    text form (by default it is printed).  `check=True` verifies the graph after each pass."""
    missing = unknown_passes(names)
    if missing:
        raise KeyError(f"unknown pass {missing[0]!r} (known: {', '.join(sorted(PASSES))})")
    stats = []
    for name in names:
        entry = PASSES[name]
        before = len(graph)
        changes = entry.function(graph)
        stats.append(PassStats(name, entry.summary, changes, before, len(graph)))
        if check:
            verify(graph)
        if dump_after == name:
            (dump or _print_dump)(name, format_graph(graph))
    return stats


def _print_dump(name: str, text: str) -> None:
    print(f"// after {name}")
    print(text, end="")


def format_stats(stats: Sequence[PassStats]) -> str:
    """A table: one row per pass run, with node counts before and after."""
    width = max([len(s.name) for s in stats] + [4])
    lines = [f"{'pass':<{width}}  {'changes':>8}  {'nodes before':>12}  {'after':>8}  summary"]
    for s in stats:
        lines.append(f"{s.name:<{width}}  {s.changes:>8}  {s.nodes_before:>12}  "
                     f"{s.nodes_after:>8}  {s.summary}")
    return "\n".join(lines) + "\n"
