"""The table of passes: each pass is a plain function with a name and a one-line summary.

`@register("merge-common", "merge nodes that compute the same value")` on
`def merge_common(graph) -> int` (the number of changes it made) puts the function into
`PASSES`.  The same table drives `run_passes`, `hdlc passes` (list and `--run`), and later
`hdlc compile --passes/--dump-after/--stats`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Pass:
    name: str
    summary: str
    function: Callable  # (Graph) -> int


PASSES: dict[str, Pass] = {}


def register(name: str, summary: str):
    """Decorator: add the function to `PASSES` under `name`."""
    def wrap(function: Callable) -> Callable:
        if name in PASSES:
            raise ValueError(f"pass {name!r} registered twice")
        PASSES[name] = Pass(name, summary, function)
        return function
    return wrap
