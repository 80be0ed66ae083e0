"""The compiler's dataflow IR: a `Graph` of `IrNode`s over networkx, and what reads it.

`graph` (the node record, the graph wrapper, `build_graph` from an elaborated design),
`verify` (every invariant), `evaluate` (run a step graph), `text` (the text form and the
Graphviz picture), and the digit-level pieces the passes and the backend share: `digits`
(the digit operators' meaning), `digit_build` (building digit circuits), `cost` (MLP units
and residual dims a graph will need), `check_trace_carried` (the write-back rule).  The
passes that rewrite a graph live in `qwengpu.passes`; docs/passes.md describes both.
"""

from qwengpu.ir.evaluate import evaluate, random_state
from qwengpu.ir.graph import (COMMUTATIVE_OPS, SINK_OPS, SOURCE_OPS, WORD_OPS, Encoding, Graph,
                              IrNode, VerifyError, build_graph, keep_origin, word_dims)
from qwengpu.ir.text import format_graph, format_node, to_dot
from qwengpu.ir.verify import verify

__all__ = ["COMMUTATIVE_OPS", "SINK_OPS", "SOURCE_OPS", "WORD_OPS", "Encoding", "Graph",
           "IrNode", "VerifyError", "build_graph", "keep_origin", "word_dims", "evaluate",
           "random_state", "format_graph", "format_node", "to_dot", "verify"]
