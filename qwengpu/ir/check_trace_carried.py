"""Check that every state write is carried by the trace (docs/compiler.md, "Execution model").

The compiled model commits a step's state writes on the token that closes the record, from
what it can read back at that point: the record's fields (from the record scratch), static
state (memories and registers the step never writes: the program, the parameters) and
constants.  So the enable, index and data of every `write` must be functions of those alone.
`trace_carried_problems(graph)` walks each write's cone backwards, stopping at values that are
record-field digits; a `register` or `read` of written state reached on the way is a problem.
`check_trace_carried(graph)` raises one `HdlError` that names every failing write, the state
it reaches and the HDL lines of both.  Works on word-level and digit-level graphs.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu.errors import HdlError, Location
from qwengpu.ir.graph import Graph


@dataclass(frozen=True)
class Problem:
    write: int              # the write sink
    state: str              # the written state element
    reaches: str            # the non-carried state it depends on
    reaches_loc: Location | None
    loc: Location | None

    def __str__(self) -> str:
        where = f" (read at {self.reaches_loc})" if self.reaches_loc else ""
        return (f"write to {self.state!r} is not carried by the trace: it depends on "
                f"{self.reaches!r}{where}, which the machine writes and the record does not "
                f"emit (emit the value, or what it is computed from)")


def field_values(graph: Graph) -> set[int]:
    """Node ids whose value the trace carries: the arguments of record-field sinks."""
    return {arg for _, node in graph.items() if node.op == "field" for arg in node.args}


def written_state(graph: Graph) -> set[str]:
    return {node.state for _, node in graph.items() if node.op == "write"}


def trace_carried_problems(graph: Graph) -> list[Problem]:
    """One `Problem` per (write, non-carried state source) pair, in node order."""
    carried = field_values(graph)
    written = written_state(graph)
    problems = []
    for write_id, write in graph.items():
        if write.op != "write":
            continue
        seen, stack, bad = set(), list(write.args), {}
        while stack:
            node_id = stack.pop()
            if node_id in seen or node_id in carried:
                continue
            seen.add(node_id)
            node = graph.node(node_id)
            if node.op in ("register", "read") and node.state in written:
                bad.setdefault(node.state, node.loc)
                continue
            stack.extend(node.args)
        for state, loc in sorted(bad.items()):
            problems.append(Problem(write_id, write.state, state, loc, write.loc))
    return problems


def check_trace_carried(graph: Graph) -> None:
    """Raise `HdlError` naming every write that is not carried by the trace."""
    problems = trace_carried_problems(graph)
    if not problems:
        return
    lines = [str(problems[0])]
    for problem in problems[1:]:
        lines.append(f"also at {problem.loc}: {problem}")
    raise HdlError("\n".join(lines), problems[0].loc)
