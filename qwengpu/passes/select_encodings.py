"""`select-encodings`: give every value its residual encoding, and count residual dims.

Each value the backend keeps in the residual stream is one-hot over the values it can hold
(docs/compiler.md): a bit takes 2 dims (`bit`), a digit that can be any of 16 values 16
(`hex`), and any other small value set one dim per value (`enumN`: a 3-bit digit is `enum8`,
a generate/propagate class `enum3`, a sign-fill digit {0, 15} `enum2`); a multiplier's
analog column sums take one dim each (`analog`).  A value still wider
than a digit (the pass may run before `lower-digits`) gets `wordN`: its digits' dims together.
Constants get no encoding: they live in the weights of their readers.  `residual_dims`
totals the dims by kind -- the upper bound the scheduler's slot allocation starts from
(before lifetimes let slots be shared).
"""

from __future__ import annotations

from collections import Counter

from qwengpu.ir.digits import ANALOG_OPS, DIGIT_BITS
from qwengpu.ir import SINK_OPS, Encoding, Graph, word_dims
from qwengpu.passes.registry import register


def encoding_for(graph: Graph, node_id: int) -> Encoding | None:
    node = graph.node(node_id)
    if node.op == "const" or node.op in SINK_OPS:
        return None
    if node.op in ANALOG_OPS:
        return Encoding("analog", 1)
    if node.width > DIGIT_BITS:
        return Encoding("word", word_dims(node.width))
    size = len(graph.domain(node_id))
    if node.width == 1 and size == 2:
        return Encoding("bit", 2)
    if size == 16:
        return Encoding("hex", 16)
    return Encoding("enum", size)


@register("select-encodings", "give each value a one-hot residual encoding (bit, hex, enum)")
def select_encodings(graph: Graph) -> int:
    changed = 0
    for node_id, node in graph.items():
        encoding = encoding_for(graph, node_id)
        if encoding != node.encoding:
            graph.update(node_id, encoding=encoding)
            changed += 1
    return changed


def residual_dims(graph: Graph) -> Counter:
    """Residual dims by encoding kind, plus `total`, over all encoded values."""
    dims: Counter = Counter()
    for _, node in graph.items():
        if node.encoding is not None:
            dims[node.encoding.kind] += node.encoding.dims
            dims["total"] += node.encoding.dims
    return dims
