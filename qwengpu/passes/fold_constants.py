"""`fold-constants`: constant folding and algebraic simplification, on words and on digits.

Three kinds of rewrite, repeated until nothing changes:

1. **Words.**  An operator whose operands are all constants becomes a constant (through the
   semantics table).  Otherwise the identities of `WORD_RULES` apply, each written as the
   rewrite it performs (`x ^ 0 -> x`); commutative operators try both operand orders.
2. **Boolean cones, with sympy.**  A tree of 1-bit and/or/xor/not/mux/eq/ne over at most
   `MAX_CONE_LEAVES` inputs is handed to `sympy.simplify_logic` (Quine-McCluskey): a cone that
   is a tautology, a contradiction, an input, or an input negated is replaced by it, and one
   that sympy writes with fewer operators is rebuilt that way.  This is where sympy pays: the
   spec's guards, masks and fault conditions are such trees, and proving e.g.
   `(a & b) | (a & ~b) -> a` needs a real minimiser, not a local pattern.
3. **Digits.**  Each digit operator is rebuilt through `DigitBuilder`, which binds
   constant inputs into its table, composes one-input functions into their readers, and
   turns constant or pass-through tables into constants or wires; then each digit node's
   domain is narrowed to what its inputs can really produce.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy
from sympy.logic.boolalg import BooleanFalse, BooleanTrue

from qwengpu.dsl import semantics
from qwengpu.ir.digit_build import DigitBuilder
from qwengpu.ir.digits import ANALOG_OPS, DIGIT_OPS, lut_strides, sum_values
from qwengpu.ir import COMMUTATIVE_OPS, SINK_OPS, Graph, IrNode, keep_origin
from qwengpu.passes.registry import register

MAX_CONE_LEAVES = 6
MAX_ROUNDS = 50


@dataclass(frozen=True)
class Operand:
    id: int
    node: IrNode

    @property
    def value(self) -> int | None:
        return self.node.value if self.node.op == "const" else None

    def is_(self, value: int) -> bool:
        return self.value == value

    def is_ones(self) -> bool:
        return self.value == semantics.mask(self.node.width)


class Folder:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.build = DigitBuilder(graph)
        self.node: IrNode | None = None
        self._logic_cache: dict[str, object] = {}

    def const(self, value: int, width: int) -> int:
        return self.build.const(value, width)

    def new(self, op: str, width: int, args, **record_fields) -> int:
        fresh = {"name": None, "digit": None, "loop": None}     # a new value, not the node's
        return self.graph.add(op, width, args, **keep_origin(self.node) | fresh,
                              **record_fields)


@dataclass(frozen=True)
class Rule:
    op: str
    rewrite: str        # what the rule does, as a person would write it
    apply: Callable     # (folder, node, x, y, z) -> replacement id or None


def _slice_of(f: Folder, x: Operand, low: int, width: int) -> int:
    if low == 0 and width == x.node.width:
        return x.id
    return f.new("slice", width, (x.id,), low=low)


def _slice_rule(f: Folder, n: IrNode, x: Operand, y, z) -> int | None:
    inner = x.node
    if n.low == 0 and n.width == inner.width:
        return x.id
    if inner.op == "slice":
        return f.new("slice", n.width, inner.args, low=inner.low + n.low)
    if inner.op == "concat":
        position = inner.width
        for arg in inner.args:
            record = f.graph.node(arg)
            position -= record.width
            if position <= n.low and n.low + n.width <= position + record.width:
                return _slice_of(f, Operand(arg, record), n.low - position, n.width)
        return None
    if inner.op in ("zext", "sext"):
        source = Operand(inner.args[0], f.graph.node(inner.args[0]))
        if n.low + n.width <= source.node.width:
            return _slice_of(f, source, n.low, n.width)
        if inner.op == "zext" and n.low >= source.node.width:
            return f.const(0, n.width)
    return None


def _boolean_not(f: Folder, x: Operand) -> int:
    return f.new("not", x.node.width, (x.id,))


def _same(x: Operand, y: Operand | None) -> bool:
    return y is not None and x.id == y.id


WORD_RULES: list[Rule] = [
    Rule("add", "x + 0 -> x", lambda f, n, x, y, z: x.id if y.is_(0) else None),
    Rule("sub", "x - 0 -> x", lambda f, n, x, y, z: x.id if y.is_(0) else None),
    Rule("sub", "x - x -> 0", lambda f, n, x, y, z: f.const(0, n.width) if _same(x, y) else None),
    Rule("sub", "0 - x -> -x",
         lambda f, n, x, y, z: f.new("neg", n.width, (y.id,)) if x.is_(0) else None),
    Rule("mul", "x * 0 -> 0", lambda f, n, x, y, z: f.const(0, n.width) if y.is_(0) else None),
    Rule("mul", "x * 1 -> x", lambda f, n, x, y, z: x.id if y.is_(1) else None),
    Rule("mul", "x * 2^k -> x << k",
         lambda f, n, x, y, z: f.new("shl", n.width, (x.id, f.const(
             y.value.bit_length() - 1, max(1, (y.value.bit_length() - 1).bit_length()))))
         if y.value and y.value & (y.value - 1) == 0 else None),
    Rule("and", "x & 0 -> 0", lambda f, n, x, y, z: f.const(0, n.width) if y.is_(0) else None),
    Rule("and", "x & ones -> x", lambda f, n, x, y, z: x.id if y.is_ones() else None),
    Rule("and", "x & x -> x", lambda f, n, x, y, z: x.id if _same(x, y) else None),
    Rule("or", "x | 0 -> x", lambda f, n, x, y, z: x.id if y.is_(0) else None),
    Rule("or", "x | ones -> ones", lambda f, n, x, y, z: y.id if y.is_ones() else None),
    Rule("or", "x | x -> x", lambda f, n, x, y, z: x.id if _same(x, y) else None),
    Rule("xor", "x ^ 0 -> x", lambda f, n, x, y, z: x.id if y.is_(0) else None),
    Rule("xor", "x ^ x -> 0", lambda f, n, x, y, z: f.const(0, n.width) if _same(x, y) else None),
    Rule("xor", "x ^ ones -> ~x",
         lambda f, n, x, y, z: f.new("not", n.width, (x.id,)) if y.is_ones() else None),
    Rule("not", "~~x -> x", lambda f, n, x, y, z: x.node.args[0] if x.node.op == "not" else None),
    Rule("neg", "-(-x) -> x", lambda f, n, x, y, z: x.node.args[0] if x.node.op == "neg" else None),
    *[Rule(op, f"x {sym} 0 -> x", lambda f, n, x, y, z: x.id if y.is_(0) else None)
      for op, sym in (("shl", "<<"), ("shr", ">>"), ("sar", ">>>"))],
    *[Rule(op, f"x {sym} k (k >= width) -> 0",
           lambda f, n, x, y, z: f.const(0, n.width)
           if y.value is not None and y.value >= n.width else None)
      for op, sym in (("shl", "<<"), ("shr", ">>"))],
    *[Rule(op, f"0 {sym} y -> 0", lambda f, n, x, y, z: x.id if x.is_(0) else None)
      for op, sym in (("shl", "<<"), ("shr", ">>"), ("sar", ">>>"))],
    *[Rule(op, f"x {sym} x -> {result}",
           lambda f, n, x, y, z, r=result: f.const(r, 1) if _same(x, y) else None)
      for op, sym, result in (("eq", "==", 1), ("ne", "!=", 0), ("ult", "<u", 0),
                              ("ule", "<=u", 1), ("slt", "<s", 0), ("sle", "<=s", 1))],
    Rule("ult", "x <u 0 -> 0", lambda f, n, x, y, z: f.const(0, 1) if y.is_(0) else None),
    Rule("ule", "0 <=u x -> 1", lambda f, n, x, y, z: f.const(1, 1) if x.is_(0) else None),
    Rule("ule", "x <=u ones -> 1", lambda f, n, x, y, z: f.const(1, 1) if y.is_ones() else None),
    Rule("eq", "b == 1 -> b (b one bit)",
         lambda f, n, x, y, z: x.id if x.node.width == 1 and y.is_(1) else None),
    Rule("eq", "b == 0 -> ~b (b one bit)",
         lambda f, n, x, y, z: _boolean_not(f, x) if x.node.width == 1 and y.is_(0) else None),
    Rule("ne", "b != 0 -> b (b one bit)",
         lambda f, n, x, y, z: x.id if x.node.width == 1 and y.is_(0) else None),
    Rule("ne", "b != 1 -> ~b (b one bit)",
         lambda f, n, x, y, z: _boolean_not(f, x) if x.node.width == 1 and y.is_(1) else None),
    Rule("mux", "1 ? x : y -> x", lambda f, n, c, x, y: x.id if c.is_(1) else None),
    Rule("mux", "0 ? x : y -> y", lambda f, n, c, x, y: y.id if c.is_(0) else None),
    Rule("mux", "c ? x : x -> x", lambda f, n, c, x, y: x.id if _same(x, y) else None),
    Rule("mux", "c ? 1 : 0 -> c (one bit)",
         lambda f, n, c, x, y: c.id if n.width == 1 and x.is_(1) and y.is_(0) else None),
    Rule("mux", "c ? 0 : 1 -> ~c (one bit)",
         lambda f, n, c, x, y: _boolean_not(f, c) if n.width == 1 and x.is_(0) and y.is_(1)
         else None),
    Rule("mux", "~c ? x : y -> c ? y : x",
         lambda f, n, c, x, y: f.new("mux", n.width, (c.node.args[0], y.id, x.id))
         if c.node.op == "not" else None),
    Rule("slice", "x[all bits] -> x; x[..][..] -> x[..]; {.., x, ..}[bits of x] -> x[..]; "
                  "ext(x)[bits of x] -> x[..]; zext(x)[above x] -> 0", _slice_rule),
    *[Rule(op, f"{op}(x) to its own width -> x",
           lambda f, n, x, y, z: x.id if x.node.width == n.width else None)
      for op in ("zext", "sext")],
    *[Rule(op, f"{op}({op}(x)) -> {op}(x)",
           lambda f, n, x, y, z, op=op: f.new(op, n.width, x.node.args)
           if x.node.op == op else None) for op in ("zext", "sext")],
    Rule("concat", "{x} -> x", lambda f, n, x, y, z: x.id if len(n.args) == 1 else None),
]

_RULES_BY_OP: dict[str, list[Rule]] = {}
for _rule in WORD_RULES:
    _RULES_BY_OP.setdefault(_rule.op, []).append(_rule)


def _fold_word(f: Folder, node_id: int, node: IrNode) -> int | None:
    operands = [Operand(a, f.graph.node(a)) for a in node.args]
    if operands and all(o.value is not None for o in operands):
        widths = [o.node.width for o in operands]
        value = semantics.evaluate(node.op, [o.value for o in operands], widths, node.width,
                                   node.low)
        return f.const(value, node.width)
    padded = (operands + [None] * 3)[:3]
    orders = [padded]
    if node.op in COMMUTATIVE_OPS:
        orders.append([padded[1], padded[0], None])
    for rule in _RULES_BY_OP.get(node.op, ()):
        for x, y, z in orders:
            result = rule.apply(f, node, x, y, z)
            if result is not None:
                return result
    if _is_logic(f.graph, node):
        return _simplify_cone(f, node_id)
    return None


# ---- boolean cones (sympy) -------------------------------------------------------------------

_LOGIC_OPS = ("and", "or", "xor", "not", "mux", "eq", "ne")


def _is_logic(graph: Graph, node: IrNode) -> bool:
    """A 1-bit operator of 1-bit operands: plain boolean logic."""
    return node.width == 1 and node.op in _LOGIC_OPS and \
        all(graph.node(a).width == 1 for a in node.args)


def _simplify_cone(f: Folder, root: int) -> int | None:
    graph = f.graph
    users = graph.users(root)
    if len(users) == 1 and _is_logic(graph, graph.node(users[0])):
        return None                      # not a cone root: its user's cone covers it
    leaves: dict[int, sympy.Symbol] = {}
    inside: set[int] = set()

    def walk(node_id: int, depth: int):
        node = graph.node(node_id)
        if node.op == "const":
            return sympy.true if node.value else sympy.false
        if node_id != root and (not _is_logic(graph, node) or depth > 4 or
                                len(graph.users(node_id)) > 1):
            if node_id not in leaves:
                leaves[node_id] = sympy.Symbol(f"n{node_id}")
            return leaves[node_id]
        inside.add(node_id)
        parts = [walk(a, depth + 1) for a in node.args]
        if node.op == "and":
            return sympy.And(*parts)
        if node.op == "or":
            return sympy.Or(*parts)
        if node.op in ("xor", "ne"):
            return sympy.Xor(*parts)
        if node.op == "eq":
            return sympy.Not(sympy.Xor(*parts))
        if node.op == "not":
            return sympy.Not(parts[0])
        return sympy.ITE(*parts)

    expression = walk(root, 0)
    if len(leaves) > MAX_CONE_LEAVES or len(inside) < 2 and not isinstance(
            expression, (BooleanTrue, BooleanFalse, sympy.Symbol)):
        return None
    key = sympy.srepr(expression)
    if key not in f._logic_cache:
        f._logic_cache[key] = sympy.simplify_logic(expression, force=True)
    simple = f._logic_cache[key]
    if _operator_count(simple) >= len(inside):
        return None
    return _rebuild(f, simple)


def _operator_count(expression) -> int:
    if isinstance(expression, (sympy.Symbol, BooleanTrue, BooleanFalse)):
        return 0
    own = 1 if isinstance(expression, sympy.Not) else max(1, len(expression.args) - 1)
    return own + sum(_operator_count(a) for a in expression.args)


def _rebuild(f: Folder, expression) -> int:
    if isinstance(expression, BooleanTrue):
        return f.const(1, 1)
    if isinstance(expression, BooleanFalse):
        return f.const(0, 1)
    if isinstance(expression, sympy.Symbol):
        return int(expression.name[1:])
    parts = sorted((_rebuild(f, a) for a in expression.args))
    if isinstance(expression, sympy.Not):
        return f.new("not", 1, (parts[0],))
    op = {sympy.And: "and", sympy.Or: "or", sympy.Xor: "xor"}.get(type(expression))
    if op is None:
        if isinstance(expression, sympy.ITE):
            return f.new("mux", 1, tuple(_rebuild(f, a) for a in expression.args))
        raise AssertionError(f"unexpected {expression!r} from simplify_logic")
    result = parts[0]
    for part in parts[1:]:
        result = f.new(op, 1, (result, part))
    return result


# ---- digits ----------------------------------------------------------------------------------

def _already_canonical(f: Folder, node: IrNode, widths: list[int]) -> bool:
    """True when rebuilding a multi-input lut or sum could change nothing but its domain
    (the common case, decided without building the table again)."""
    graph = f.graph
    if node.op not in ("lut", "sum") or len(node.args) < 2 or \
            len(set(node.args)) != len(node.args):
        return False
    for arg in node.args:
        if graph.const_value(arg) is not None:
            return False
        unary = f.build.unary_of(arg)
        if unary is not None and (node.op == "sum" or len(graph.domain(unary[0])) <=
                                  len(graph.domain(arg))):
            return False
    domains = [graph.domain(a) for a in node.args]
    if node.op == "lut":
        reachable = [0]
        for domain, stride in zip(domains, lut_strides(widths)):
            reachable = [i + v * stride for i in reachable for v in domain]
        keep = set(reachable)
        entries = node.table
        return len({entries[i] for i in keep}) > 1 and \
            all(entries[i] == 0 for i in range(len(entries)) if i not in keep)
    totals = sum_values(node.terms, domains)
    low, high = min(totals), max(totals)
    if node.base != low or len(node.table) != high - low + 1:
        return False
    for term, domain in zip(node.terms, domains):
        inside = set(domain)
        if any(t != 0 for v, t in enumerate(term) if v not in inside):
            return False
    return len({node.table[s - low] for s in totals}) > 1 and \
        all(node.table[s - low] == 0 for s in range(low, high + 1) if s not in totals)


def _bit_vote(graph: Graph, node: IrNode) -> str | None:
    """"or" / "and" when the node is a `sum` of 0/1 contributions that asks for at least one /
    all of them; such nodes merge with their own kind (x | (y | z) -> one sum)."""
    if node.op != "sum" or node.width != 1:
        return None
    domains = [graph.domain(a) for a in node.args]
    if any(term[v] not in (0, 1) for term, d in zip(node.terms, domains) for v in d):
        return None
    totals = sum_values(node.terms, domains)
    out = {s: node.table[s - node.base] for s in totals}
    count = len(node.args)
    if all(out[s] == (1 if s >= 1 else 0) for s in totals):
        return "or"
    if all(out[s] == (1 if s == count else 0) for s in totals):
        return "and"
    return None


def _merge_votes(f: Folder, node_id: int, node: IrNode) -> int | None:
    # x | (y | z) -> or(x, y, z); x & (y & z) -> and(x, y, z): one gadget, not a chain.
    graph = f.graph
    kind = _bit_vote(graph, node)
    if kind is None:
        return None
    inputs, merged = [], False
    for arg, term in zip(node.args, node.terms):
        inner = graph.node(arg)
        if term[0] == 0 and term[1] == 1 and graph.const_value(arg) is None and \
                _bit_vote(graph, inner) == kind:
            inputs += [(a, lambda v, t=t: t[v]) for a, t in zip(inner.args, inner.terms)]
            merged = True
        else:
            inputs.append((arg, lambda v, t=term: t[v]))
    if not merged:
        return None
    count = len(inputs)
    f.build.origin = keep_origin(node)
    return f.build.sum(inputs, (lambda s: int(s >= 1)) if kind == "or" else
                       (lambda s: int(s == count)), 1, node.label)


def _fold_digit(f: Folder, node_id: int, node: IrNode) -> int | None:
    graph, build = f.graph, f.build
    merged = _merge_votes(f, node_id, node)
    if merged is not None:
        return merged
    widths = [graph.node(a).width for a in node.args]
    if node.op in ANALOG_OPS or _already_canonical(f, node, widths):
        return _narrow_domain(graph, node_id, node, widths)
    build.origin = keep_origin(node)
    build.reuse = node_id
    if node.op == "lut":
        strides, table = lut_strides(widths), node.table
        result = build.lut(node.args, lambda *vs: table[sum(v * s for v, s in
                                                            zip(vs, strides))],
                           node.width, node.label)
    elif node.op == "sum":
        table, base = node.table, node.base
        result = build.sum([(a, lambda v, t=t: t[v]) for a, t in zip(node.args, node.terms)],
                           lambda s: table[s - base], node.width, node.label)
    elif node.op == "carry":
        result = build.carry(node.args[0], node.args[1:], node.label)
    elif node.op == "priority":
        count = len(node.terms)
        result = build.priority([(c, lambda v, t=t: t[v]) for c, t in
                                 zip(node.args[:count], node.terms)],
                                node.args[count:2 * count], node.args[-1], node.width,
                                node.label)
    else:
        result = build.select(node.args[0], node.args[1:], node.width, node.label)
    build.reuse = None
    if result != node_id:
        return result
    return _narrow_domain(graph, node_id, node, widths)


def _narrow_domain(graph: Graph, node_id: int, node: IrNode, widths: list[int]) -> int | None:
    domains = [graph.domain(a) for a in node.args]
    image = tuple(sorted(DIGIT_OPS[node.op].image(node, domains, widths)))
    narrowed = None if len(image) == 1 << node.width else image
    if narrowed != node.domain:
        graph.update(node_id, domain=narrowed)
        return node_id
    return None


@register("fold-constants", "fold constants and simplify algebraic and boolean identities")
def fold_constants(graph: Graph) -> int:
    folder = Folder(graph)
    changes = 0
    for _ in range(MAX_ROUNDS):
        changed = 0
        for node_id in graph.order():
            if node_id not in graph:
                continue
            node = graph.node(node_id)
            if node.op in SINK_OPS or node.op in ("const", "register", "read"):
                continue
            folder.node = node
            if node.op in DIGIT_OPS:
                result = _fold_digit(folder, node_id, node)
            else:
                result = _fold_word(folder, node_id, node)
            if result is None:
                continue
            changed += 1
            if result != node_id:
                graph.replace_uses(node_id, result)
                if not graph.users(node_id):
                    graph.remove(node_id)
        changes += changed
        if not changed:
            break
    return changes
