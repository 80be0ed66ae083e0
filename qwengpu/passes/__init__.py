"""The compiler's middle: one IR over networkx (`ir`) and the passes that rewrite it.

Importing this package registers every pass.  The API the rest of the compiler uses:
`build_graph(design)`, `run_passes(graph, names)`, `DEFAULT_PIPELINE`, `PASSES`, `verify`,
`evaluate`, `format_graph`.  docs/passes.md describes the IR and each pass.
"""

from qwengpu.passes.ir import (Encoding, Graph, IrNode, VerifyError, build_graph, evaluate,
                               format_graph, format_node, random_state, to_dot, verify)
from qwengpu.passes.registry import PASSES, Pass, register
from qwengpu.passes.pipeline import DEFAULT_PIPELINE, PassStats, format_stats, run_passes

# Each import registers its pass.
from qwengpu.passes import (fold_constants, merge_common, remove_dead,  # noqa: E402,F401
                            lower_digits, select_encodings, flatten_selects,
                            cut_at_fields, fold_lanes)

__all__ = ["Encoding", "Graph", "IrNode", "VerifyError", "build_graph", "evaluate",
           "format_graph", "format_node", "random_state", "to_dot", "verify", "PASSES", "Pass",
           "register", "DEFAULT_PIPELINE", "PassStats", "format_stats", "run_passes"]
