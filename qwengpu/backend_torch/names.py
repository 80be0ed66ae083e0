"""What people call the plan's ops and values: names from the HDL, never bare node ids.

The plan names a value computed by a graph node after the node (`c%22`, `s%1525`: region and
id), which is unique but says nothing.  `plan_names(plan)` gives every op and every value a
name a person can look up in the spec:

- a node the spec names (`let`, `out`; `lower-digits` adds `.dK` for a word's digit K) keeps
  that name: `execute.address[lane=2].d3`;
- a node it does not name is called by the HDL text it came from (`dsl.source.source_text`:
  the whole expression an operator's location spans), the digit of its word it computes or
  works on (`IrNode.digit`) and its part of the expression (the node's label): `(count +
  1).d0 · add.sum`, `(a - b).d3 · sub.gp` (digit 3's generate/propagate class), and the
  `for` iteration that made it (`[lane=2]`: one line unrolled makes a copy per lane);
- without source text (a file that cannot be read), the role and `file:line:col`;
- an op the plan makes itself (`record_scratch`, `wr.count.d0`, `s.count.r0`, `next.lo`)
  already has a name of the spec's state and the trace's fields, and keeps it.

Every op also gets its `loc` as `file:line:col` and the source `text` at it, so the page
(`graph_data.py`) and the text form (`schedule.format_schedule`) show the same names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qwengpu.backend_torch.ops import DigitWork, Op, Plan, SharedLuts
from qwengpu.dsl.source import source_text
from qwengpu.ir import IrNode

# what a bare node id looks like (`c%22`): never shown to people
NODE_ID = re.compile(r"%\d")
# the longest name of several outputs joined (`x ^ y, x & y`) before it is cut to the first
JOINED_LIMIT = 60


@dataclass(frozen=True)
class OpName:
    name: str            # what the op is called (see the module doc)
    role: str            # the part of its expression it computes (`add.carry`), or ""
    loc: str             # `file:line:col`, or "" where the compiler made it
    text: str            # the HDL source at `loc` (may be the name itself), or ""


@dataclass
class PlanNames:
    ops: dict[str, OpName]          # op name -> its names
    values: dict[str, str]          # value -> what people call it

    def op(self, op: Op) -> OpName:
        return self.ops[op.name]

    def value(self, name: str) -> str:
        return self.values.get(name, name)


def node_name(node: IrNode) -> str:
    """A graph node's name: the spec's, else its HDL text and digit, else role and place."""
    if node.name:
        return node.name
    text = source_text(node.loc)
    if text is None:
        where = f" @{node.loc}" if node.loc else ""
        return f"{node.label or node.op}{where}"
    if node.digit is not None:
        wrapped = text if re.fullmatch(r"[\w.\[\]]+", text) else f"({text})"
        text = f"{wrapped}.d{node.digit}"
    if node.label:
        text += f" \u00b7 {node.label}"
    return f"{text} [{node.loop}]" if node.loop else text


def _role(op: Op) -> str:
    """The part of its expression a lowered op computes (`add.carry`), where the node says."""
    work = op.work
    if isinstance(work, SharedLuts):
        return ", ".join(dict.fromkeys(n.label for n in work.nodes if n.label))
    node = work.node if isinstance(work, DigitWork) else None
    return node.label if node is not None and node.label not in (None, op.label) else ""


def op_name(op: Op) -> OpName:
    """One op's names (see the module doc)."""
    work = op.work
    nodes = (work.node,) if isinstance(work, DigitWork) else \
        work.nodes if isinstance(work, SharedLuts) else ()
    if nodes:
        distinct = list(dict.fromkeys(node_name(node) for node in nodes))
        name = ", ".join(distinct)
        if len(distinct) > 1 and len(name) > JOINED_LIMIT:
            name = f"{distinct[0]} (+{len(distinct) - 1} more)"
    else:
        name = op.name
    return OpName(name, _role(op), str(op.loc) if op.loc else "", source_text(op.loc) or "")


def plan_names(plan: Plan) -> PlanNames:
    """The names of every op and value of `plan` (see the module doc)."""
    ops, values = {}, {}
    for op in plan.ops:
        work = op.work
        nodes = (work.node,) if isinstance(work, DigitWork) else \
            work.nodes if isinstance(work, SharedLuts) else ()
        for node, output in zip(nodes, op.outputs):
            values[output] = node_name(node)
        ops[op.name] = op_name(op)
    return PlanNames(ops, values)
