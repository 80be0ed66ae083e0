"""The IR's text form (`%4 = add %1, %2 : u32 @qwengpu.hdl:31`, with locations switched off
for golden tests) and its Graphviz picture (`to_dot`).
"""

from __future__ import annotations

from qwengpu.ir.digits import DIGIT_OPS
from qwengpu.ir.graph import SINK_OPS, Graph, IrNode

def _type_text(graph: Graph, node_id: int, node: IrNode) -> str:
    text = f"u{node.width}"
    if node.domain is not None:
        text += " {" + ",".join(str(v) for v in node.domain) + "}"
    if node.encoding is not None:
        text += f" {node.encoding}"
    return text


def _table_text(table: tuple[int, ...]) -> str:
    if len(table) <= 16 and all(v < 16 for v in table):
        return "".join(f"{v:x}" for v in table)
    digest = 0
    for v in table:
        digest = (digest * 1000003 + v + 1) & 0xFFFFFFFF
    return f"#{digest:08x}"


def format_node(graph: Graph, node_id: int, with_locations: bool = True) -> str:
    """One node as text: `%4 = add %1, %2 : u32 @qwengpu.hdl:31`."""
    node = graph.node(node_id)
    args = ", ".join(f"%{a}" for a in node.args)
    if node.op == "const":
        body = f"const {node.value}"
    elif node.op == "register":
        body = f"register {node.state}" + (f"[bit {node.low}]" if node.low else "")
    elif node.op == "read":
        body = f"read {node.state}[{args}]" + (f"[bit {node.low}]" if node.low else "")
    elif node.op == "field_input":
        body = f"field_input {node.state}" + (f"[bit {node.low}]" if node.low else "")
    elif node.op == "slice":
        body = f"slice {args}, {node.low}"
    elif node.op == "write":
        body = f"write {node.state} {args}"
    elif node.op == "field":
        body = f"field {node.state} = {args}"
        if node.lane is not None:
            body += f" at lane {node.lane}"
    elif node.op in DIGIT_OPS:
        detail = node.label or ""
        if node.table is not None:
            detail += (" " if detail else "") + _table_text(node.table)
        if node.op == "mul_column":
            detail += (" " if detail else "") + f"column {node.low}"
        if node.op == "sum":
            detail += f" base {node.base} terms " + \
                " ".join(_table_text(t) for t in node.terms)
        body = f"{node.op} {args}" + (f" {{{detail}}}" if detail else "")
    else:
        body = f"{node.op} {args}" if args else node.op
    if node.groups is not None and any(g > 1 for g in node.groups):
        body += " groups " + ",".join(map(str, node.groups))
    text = f"%{node_id} = {body}"
    if node.op not in SINK_OPS:
        text += f" : {_type_text(graph, node_id, node)}"
    if node.name:
        text += f" ; {node.name}"
    if with_locations and node.loc:
        text += f" @{node.loc}"
    return text


def format_graph(graph: Graph, with_locations: bool = True) -> str:
    """The whole graph: state declarations, then every node in dependency order."""
    lines = [f"graph {graph.name} ({graph.level} level)"]
    for memory in graph.memories.values():
        dims = "".join(f"[{d}]" for d in memory.shape)
        lines.append(f"memory {memory.name}{dims} : u{memory.width}")
    for register in graph.registers.values():
        lines.append(f"register {register.name} : u{register.width} = {register.reset}")
    lines += [format_node(graph, n, with_locations) for n in graph.order()]
    return "\n".join(lines) + "\n"


def to_dot(graph: Graph, with_locations: bool = False) -> str:
    """Graphviz DOT text (render with `dot -Tsvg` where graphviz is installed)."""
    lines = [f'digraph "{graph.name}" {{', "  rankdir=TB;",
             '  node [shape=box, fontname="monospace", fontsize=9];']
    for node_id in graph.order():
        node = graph.node(node_id)
        label = format_node(graph, node_id, with_locations).replace('"', r'\"')
        shape = {"write": "house", "field": "house", "stop": "house", "const": "plaintext",
                 "register": "cylinder", "read": "cylinder",
                 "field_input": "cylinder", "next_lane": "cylinder"}.get(node.op, "box")
        lines.append(f'  n{node_id} [label="{label}", shape={shape}];')
    for source, target in graph.edges():
        lines.append(f"  n{source} -> n{target};")
    lines.append("}")
    return "\n".join(lines) + "\n"
