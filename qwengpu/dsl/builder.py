"""Appends nodes to a `Design` during elaboration.

The builder is the only code that creates `netlist.Node`s.  It keeps node ids in creation
order (so the list is in dependency order by construction), gives every node the stage being
elaborated, the source location that asked for it and the loop iteration it is in, shares
one node per constant value and width, and folds an operator whose operands are all
constants, using the semantics table.
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu.dsl import semantics
from qwengpu.dsl.netlist import Design, MemorySpec, Node, RegisterSpec
from qwengpu.dsl.values import Signal
from qwengpu.errors import Location


class NetlistBuilder:
    def __init__(self, design: Design):
        self.design = design
        self.stage: str | None = None
        self.loop: str | None = None      # the `for` iterations being elaborated (`lane=2`)
        self._constants: dict[tuple[int, int], Signal] = {}
        self._registers: dict[str, Signal] = {}

    def _append(self, op: str, args: tuple[int, ...], width: int, loc: Location | None,
                **fields) -> Signal:
        node = Node(id=len(self.design.nodes), op=op, args=args, width=width,
                    stage=self.stage, loc=loc, loop=self.loop, **fields)
        self.design.nodes.append(node)
        return Signal(node.id, width)

    def constant(self, value: int, width: int, loc: Location | None = None) -> Signal:
        """A `width`-bit literal; `value` must already be in range."""
        key = (value, width)
        if key not in self._constants:
            self._constants[key] = self._append("const", (), width, loc, value=value)
        return self._constants[key]

    def constant_value(self, signal: Signal) -> int | None:
        node = self.design.nodes[signal.node]
        return node.value if node.op == "const" else None

    def operator(self, op: str, args: list[Signal], loc: Location | None,
                 width: int | None = None, low: int = 0) -> Signal:
        """`op` of the semantics table applied to `args` (widths already checked)."""
        widths = [a.width for a in args]
        width = semantics.result_width(op, widths, width, low)
        values = [self.constant_value(a) for a in args]
        if all(v is not None for v in values):
            return self.constant(semantics.evaluate(op, values, widths, width, low), width, loc)
        return self._append(op, tuple(a.node for a in args), width, loc, low=low)

    def register(self, register: RegisterSpec, loc: Location | None) -> Signal:
        """The register's value at the start of the step (one node per register)."""
        if register.name not in self._registers:
            self._registers[register.name] = self._append("register", (), register.width, loc,
                                                          state=register.name)
        return self._registers[register.name]

    def read(self, memory: MemorySpec, index: list[Signal], loc: Location | None) -> Signal:
        return self._append("read", tuple(i.node for i in index), memory.width, loc,
                            state=memory.name)

    def name(self, signal: Signal, name: str) -> None:
        """Give the node behind `signal` a wire name, unless it already has one."""
        node = self.design.nodes[signal.node]
        if node.name is None and node.op not in ("const", "register"):
            self.design.nodes[signal.node] = replace(node, name=name)
