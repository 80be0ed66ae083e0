"""The compiler's passes: each a plain function with a name that rewrites the IR
(`qwengpu.ir`) and says how much it changed.

Importing this package registers every pass.  The API: `PASSES` (the table), `register`,
`run_passes(graph, names)`, `DEFAULT_PIPELINE`, `format_stats`.  docs/passes.md describes
each pass.
"""

from qwengpu.passes.registry import PASSES, Pass, register
from qwengpu.passes.pipeline import DEFAULT_PIPELINE, PassStats, format_stats, run_passes

# Each import registers its pass.
from qwengpu.passes import (fold_constants, merge_common, remove_dead,  # noqa: E402,F401
                            lower_digits, select_encodings, flatten_selects,
                            cut_at_fields, fold_lanes)

__all__ = ["PASSES", "Pass", "register", "DEFAULT_PIPELINE", "PassStats", "format_stats",
           "run_passes"]
