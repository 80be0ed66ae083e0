"""Making digit-level nodes in canonical form: the one place that builds `lut`, `sum`,
`carry` and `select` nodes, for `lower-digits` and for `fold-constants` alike.

Every builder method takes its inputs as node ids and the function to compute as a Python
callable, and returns the id of a node computing it -- often an existing one: constant inputs
are bound into the table, an input used twice is used once, an input that is itself a
one-input function of another node is composed away (a `sum` reads any function of a one-hot
input for free; a `lut` does so when that does not enlarge it), a table that is constant over
the reachable inputs becomes a `const`, and one that passes an input through returns that
input.  A one-input function is always a `sum` whose term is the function itself and whose
table is the identity, so equal functions get equal records (and `merge-common` merges them).
`origin` (stage, name, loc) is copied onto every node made; when `reuse` is a node whose
record equals the one about to be made, that node is returned instead of a copy.

Analog values (`mul_column`) are read only linearly, so nothing is composed
through them: a `sum` of an analog input keeps the identity term and puts the function into
its table, and a one-input function of an analog value is never composed into its readers.
"""

from __future__ import annotations

from itertools import product
from typing import Callable, Sequence

from qwengpu.ir.digits import (ANALOG_OPS, GENERATE, KILL, MAX_LUT_INPUTS, PROPAGATE,
                               column_bounds, lut_strides, sum_values)
from qwengpu.ir.graph import Graph, IrNode

Bit = tuple[int, int] | int   # (node, bit) or a constant 0/1
Analog = tuple[int | None, int]   # (analog node or None, constant added to it)


def _bind(sources: list[tuple], env: dict[int, int]) -> list[int]:
    """The values of a lut's original inputs, given the values of its variables."""
    out = []
    for source in sources:
        if source[0] == "const":
            out.append(source[1])
        elif source[0] == "var":
            out.append(env[source[1]])
        else:
            out.append(source[2][env[source[1]]])
    return out


class DigitBuilder:
    def __init__(self, graph: Graph, origin: dict | None = None):
        self.graph = graph
        self.origin = origin or {}
        self.reuse: int | None = None
        self._consts: dict[tuple[int, int], int] = {}
        for node_id, node in graph.items():
            if node.op == "const":
                self._consts.setdefault((node.value, node.width), node_id)

    # ---- helpers ---------------------------------------------------------------------------

    def const(self, value: int, width: int) -> int:
        key = (value, width)
        node_id = self._consts.get(key)
        if node_id is None or node_id not in self.graph:
            node_id = self.graph.add("const", width, value=value)
            self._consts[key] = node_id
        return node_id

    def _emit(self, record: IrNode) -> int:
        if self.reuse is not None and self.reuse in self.graph and \
                self.graph.node(self.reuse).function_key() == record.function_key():
            return self.reuse
        return self.graph.add_record(record)

    def _domain_field(self, image: set[int], width: int) -> tuple[int, ...] | None:
        if len(image) == 1 << width:
            return None
        return tuple(sorted(image))

    def is_analog(self, node_id: int) -> bool:
        return self.graph.node(node_id).op in ANALOG_OPS

    def unary_of(self, node_id: int) -> tuple[int, Callable[[int], int]] | None:
        """(x, g) when node_id computes g(x) of one one-hot input x, else None."""
        node = self.graph.node(node_id)
        if node.args and self.is_analog(node.args[0]):
            return None
        if node.op == "sum" and len(node.args) == 1:
            term, table, base = node.terms[0], node.table, node.base
            return node.args[0], lambda v: table[term[v] - base]
        if node.op == "lut" and len(node.args) == 1:
            table = node.table
            return node.args[0], lambda v: table[v]
        return None

    # ---- sum -------------------------------------------------------------------------------

    def sum(self, inputs: Sequence[tuple[int, Callable[[int], int]]],
            fn: Callable[[int], int], width: int, label: str | None = None) -> int:
        """A node computing `fn(sum of f(x) for (x, f) in inputs)`."""
        offset = 0
        maps: dict[int, list[Callable[[int], int]]] = {}
        for node_id, f in inputs:
            value = self.graph.const_value(node_id)
            if value is not None:
                offset += f(value)
                continue
            unary = self.unary_of(node_id)
            if unary is not None:
                inner, g = unary
                node_id, f = inner, (lambda f, g: lambda v: f(g(v)))(f, g)
            maps.setdefault(node_id, []).append(f)
        if not maps:
            return self.const(fn(offset), width)
        args = sorted(maps)
        terms = []
        for node_id in args:
            domain = set(self.graph.domain(node_id))
            fs = maps[node_id]
            terms.append(tuple(sum(f(v) for f in fs) if v in domain else 0
                               for v in range(1 << self.graph.node(node_id).width)))
        domains = [self.graph.domain(a) for a in args]
        totals = sum_values(terms, domains)
        outputs = {s: fn(s + offset) for s in totals}
        image = set(outputs.values())
        if len(image) == 1:
            return self.const(image.pop(), width)
        if len(args) == 1 and not self.is_analog(args[0]):
            # Canonical one-input form: the term is the function, the table the identity.
            domain = domains[0]
            values = {v: outputs[terms[0][v]] for v in domain}
            if all(values[v] == v for v in domain) and self.graph.node(args[0]).width <= width:
                return args[0]
            term = tuple(values.get(v, 0) for v in range(1 << self.graph.node(args[0]).width))
            low, high = min(image), max(image)
            record = IrNode("sum", width, (args[0],), terms=(term,), base=low,
                            table=tuple(range(low, high + 1)), label=label,
                            domain=self._domain_field(image, width), **self.origin)
            return self._emit(record)
        low, high = min(totals), max(totals)
        table = tuple(outputs.get(s, 0) for s in range(low, high + 1))
        record = IrNode("sum", width, tuple(args), terms=tuple(terms), base=low, table=table,
                        label=label, domain=self._domain_field(image, width), **self.origin)
        return self._emit(record)

    # ---- analog ----------------------------------------------------------------------------

    def mul_column(self, a: Sequence[int], b: Sequence[int], column: int,
                   label: str | None = "mul.q") -> Analog:
        """`Q_column` of the product of the words with digits `a` and `b` (lowest first)."""
        args = (*a, *b)
        probe = IrNode("mul_column", 1, args, low=column, groups=(len(a), len(b)))
        low, high = column_bounds(probe, [self.graph.domain(x) for x in args])
        if low == high:
            return None, low
        width = high.bit_length()
        domain = None if low == 0 and high + 1 == 1 << width else tuple(range(low, high + 1))
        record = IrNode("mul_column", width, args, low=column, groups=(len(a), len(b)),
                        label=label, domain=domain, **self.origin)
        return self._emit(record), 0

    # ---- lut -------------------------------------------------------------------------------

    def lut(self, inputs: Sequence[int], fn: Callable[..., int], width: int,
            label: str | None = None) -> int:
        """A node computing `fn(*values of inputs)`."""
        # How each input's value is found from the values of the lut's own inputs:
        # ("const", value), ("var", node) or ("via", node, table of the one-input function).
        sources: list[tuple] = []
        variables: list[int] = []
        for node_id in inputs:
            value = self.graph.const_value(node_id)
            if value is not None:
                sources.append(("const", value))
                continue
            unary = self.unary_of(node_id)
            if unary is not None and len(self.graph.domain(unary[0])) <= \
                    len(self.graph.domain(node_id)):
                inner, g = unary
                sources.append(("via", inner, {v: g(v) for v in self.graph.domain(inner)}))
                node_id = inner
            else:
                sources.append(("var", node_id))
            if node_id not in variables:
                variables.append(node_id)
        if not variables:
            return self.const(fn(*(s[1] for s in sources)), width)
        if len(variables) == 1:
            only = variables[0]
            return self.sum([(only, lambda v: v)],
                            lambda s: fn(*_bind(sources, {only: s})), width, label)
        variables.sort()
        if len(variables) > MAX_LUT_INPUTS:
            raise ValueError(f"lut of {len(variables)} inputs")
        domains = [self.graph.domain(v) for v in variables]
        widths = [self.graph.node(v).width for v in variables]
        strides = lut_strides(widths)
        table = [0] * (1 << sum(widths))
        image = set()
        if all(source[0] == "var" for source in sources):
            positions = [variables.index(source[1]) for source in sources]
            bind = lambda combo: [combo[p] for p in positions]  # noqa: E731
        else:
            bind = lambda combo: _bind(sources, dict(zip(variables, combo)))  # noqa: E731
        for combo in product(*domains):
            out = fn(*bind(combo))
            table[sum(v * s for v, s in zip(combo, strides))] = out
            image.add(out)
        if len(image) == 1:
            return self.const(image.pop(), width)
        record = IrNode("lut", width, tuple(variables), table=tuple(table), label=label,
                        domain=self._domain_field(image, width), **self.origin)
        return self._emit(record)

    # ---- carry and select ------------------------------------------------------------------

    def carry(self, carry_in: int, classes: Sequence[int], label: str | None = None) -> int:
        """The carry out of the last of `classes` (generate/propagate/kill, lowest first)."""
        kept: list[int] = []
        for gp in classes:
            value = self.graph.const_value(gp)
            domain = set(self.graph.domain(gp))
            if value is None and len(domain) == 1:
                value = next(iter(domain))
            if value == PROPAGATE:
                continue
            if value in (KILL, GENERATE):
                carry_in, kept = self.const(1 if value == GENERATE else 0, 1), []
                continue
            kept.append(gp)
        if not kept:
            return carry_in
        cin_value = self.graph.const_value(carry_in)
        if cin_value is not None and len(kept) == 1:
            # One class and a known carry-in: a plain function of the class.
            return self.sum([(kept[0], lambda gp: 1 if gp == GENERATE else
                              cin_value if gp == PROPAGATE else 0)], lambda s: s, 1, label)
        image = set(self.graph.domain(carry_in))
        for gp in kept:
            domain = set(self.graph.domain(gp))
            image |= {1} if GENERATE in domain else set()
            image |= {0} if KILL in domain else set()
        record = IrNode("carry", 1, (carry_in, *kept), label=label,
                        domain=self._domain_field(image, 1), **self.origin)
        return self._emit(record)

    def select(self, selector: int, arms: Sequence[int], width: int,
               label: str | None = None) -> int:
        """`arms[selector]`."""
        value = self.graph.const_value(selector)
        if value is not None:
            return arms[value]
        reachable = [arms[v] for v in self.graph.domain(selector)]
        if len(set(reachable)) == 1:
            return reachable[0]
        constants = [self.graph.const_value(a) for a in arms]
        if all(c is not None for c in constants):
            return self.sum([(selector, lambda v: v)], lambda s: constants[s], width, label)
        image = set()
        for arm in reachable:
            image |= set(self.graph.domain(arm))
        record = IrNode("select", width, (selector, *arms), label=label,
                        domain=self._domain_field(image, width), **self.origin)
        return self._emit(record)

    def priority(self, conditions: Sequence[tuple[int, Callable[[int], int]]],
                 arms: Sequence[int], default: int, width: int,
                 label: str | None = None) -> int:
        """The first `arms[i]` whose condition `(x, holds)` is true of x's value, else
        `default`."""
        kept: list[tuple[int, tuple[int, ...]]] = []
        kept_arms: list[int] = []
        for (node_id, holds), arm in zip(conditions, arms):
            if self.graph.const_value(node_id) is not None:
                value = self.graph.const_value(node_id)
                node_id, holds = self.const(0, 1), (lambda v, h=holds, c=value: h(c))
            unary = self.unary_of(node_id)
            if unary is not None:
                # A condition reads any function of a one-hot input for free.
                inner, g = unary
                node_id, holds = inner, (lambda v, h=holds, g=g: h(g(v)))
            domain = self.graph.domain(node_id)
            truth = {v: 1 if holds(v) else 0 for v in domain}
            if not any(truth.values()):
                continue                          # never holds: the arm is unreachable
            if all(truth.values()):
                default = arm                     # always holds: later arms are unreachable
                break
            term = tuple(truth.get(v, 0) for v in range(1 << self.graph.node(node_id).width))
            kept.append((node_id, term))
            kept_arms.append(arm)
        while kept_arms and kept_arms[-1] == default:
            kept.pop()                            # the last arm equals the default
            kept_arms.pop()
        if not kept:
            return default
        image = set(self.graph.domain(default))
        for arm in kept_arms:
            image |= set(self.graph.domain(arm))
        record = IrNode("priority", width, (*(c for c, _ in kept), *kept_arms, default),
                        terms=tuple(t for _, t in kept), label=label,
                        domain=self._domain_field(image, width), **self.origin)
        return self._emit(record)

    # ---- gathering bits --------------------------------------------------------------------

    def gather(self, bits: Sequence[Bit], label: str | None = "gather") -> int:
        """A digit whose bit i is `bits[i]`: a (node, bit) pair, or a constant 0 or 1."""
        width = len(bits)
        sources: dict[int, list[tuple[int, int]]] = {}
        constant = 0
        for position, bit in enumerate(bits):
            if isinstance(bit, tuple):
                sources.setdefault(bit[0], []).append((position, bit[1]))
            else:
                constant |= bit << position

        def picker(pairs):
            return lambda v: sum(((v >> source) & 1) << position for position, source in pairs)

        inputs = [(node_id, picker(pairs)) for node_id, pairs in sorted(sources.items())]
        inputs.append((self.const(constant, width), lambda v: v)) if constant else None
        return self.sum(inputs, lambda s: s, width, label)
