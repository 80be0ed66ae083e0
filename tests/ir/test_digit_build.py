"""`DigitBuilder` (qwengpu/ir/digit_build.py): every node it returns computes the function it
was asked for, checked by evaluating the graph over every value of its registers, and the
canonical forms its docstring promises -- constants bound into tables, constant functions
folded to `const`, pass-through returning the input, one-input functions as a `sum` whose
term is the function, composition through one-input functions, and `reuse`."""

from __future__ import annotations

from itertools import product

from qwengpu.errors import Location
from qwengpu.ir import evaluate, verify
from qwengpu.ir.digit_build import DigitBuilder
from qwengpu.ir.digits import GENERATE, KILL, PROPAGATE, column_value

from graph_helpers import register_graph


def digit_graph():
    """Registers x : u4, y : u2, c : u1 and a builder over them."""
    graph, (x, y, c) = register_graph(x=4, y=2, c=1)
    return graph, DigitBuilder(graph), x, y, c


def assert_computes(graph, node: int, expected) -> None:
    """`node` equals `expected(x=..., y=..., ...)` for every value its registers can hold."""
    verify(graph)
    registers = [(i, n.state) for i, n in graph.items() if n.op == "register"]
    for combo in product(*(graph.domain(i) for i, _ in registers)):
        state = {name: value for (_, name), value in zip(registers, combo)}
        values = {}
        evaluate(graph, state, values)
        assert values[node] == expected(**state), state


def test_lut_of_two_inputs():
    graph, build, x, y, c = digit_graph()
    node = build.lut([y, x], lambda b, a: (a * b + 1) % 16, 4)
    assert graph.node(node).op == "lut" and graph.node(node).args == (x, y)
    assert_computes(graph, node, lambda x, y, c: (x * y + 1) % 16)


def test_a_constant_input_is_bound_into_the_table():
    graph, build, x, y, c = digit_graph()
    node = build.lut([x, build.const(3, 2)], lambda a, b: (a + b) % 16, 4)
    assert graph.node(node).args == (x,)
    assert_computes(graph, node, lambda x, y, c: (x + 3) % 16)


def test_constants_are_shared_and_constant_functions_fold():
    graph, build, x, y, c = digit_graph()
    assert build.const(5, 4) == build.const(5, 4) != build.const(5, 3)
    existing = graph.add("const", 4, value=6)
    build = DigitBuilder(graph)                         # a new builder finds the graph's consts
    assert build.const(6, 4) == existing
    assert build.lut([build.const(2, 4), build.const(3, 4)], lambda a, b: a * b, 4) == existing
    graph.update(y, domain=(1, 3))                      # y is odd: y % 2 is always 1
    assert graph.const_value(build.lut([y, c], lambda a, b: a % 2, 1)) == 1


def test_one_input_functions_are_sums_of_the_function_itself():
    graph, build, x, y, c = digit_graph()
    assert build.sum([(x, lambda v: v)], lambda s: s, 4) == x         # a pass-through
    triple = build.sum([(x, lambda v: v)], lambda s: 3 * s % 16, 4)
    record = graph.node(triple)
    assert record.op == "sum" and record.args == (x,)
    assert record.terms == (tuple(3 * v % 16 for v in range(16)),)
    assert record.table == tuple(range(16)) and record.base == 0
    same = build.lut([x], lambda v: 3 * v % 16, 4)
    assert same != triple and graph.node(same).function_key() == record.function_key()
    assert_computes(graph, triple, lambda x, y, c: 3 * x % 16)


def test_one_input_functions_compose():
    graph, build, x, y, c = digit_graph()
    flipped = build.sum([(x, lambda v: v)], lambda s: s ^ 5, 4)
    assert build.lut([flipped], lambda v: v ^ 5, 4) == x                # (x ^ 5) ^ 5
    total = build.sum([(flipped, lambda v: v), (y, lambda v: 16 * v)], lambda s: s % 64, 6)
    assert graph.node(total).args == (x, y)                             # read x, not x ^ 5
    assert_computes(graph, total, lambda x, y, c: (x ^ 5) + 16 * y)


def test_reuse_returns_the_node_that_already_computes_it():
    graph, build, x, y, c = digit_graph()
    node = build.lut([x, y], lambda a, b: a ^ b, 4)
    count = len(graph)
    build.reuse = node
    assert build.lut([x, y], lambda a, b: a ^ b, 4) == node and len(graph) == count
    assert build.lut([x, y], lambda a, b: a & b, 4) != node


def test_carry_drops_propagates_and_restarts_at_generates_and_kills():
    graph, build, x, y, c = digit_graph()
    graph.update(y, domain=(KILL, PROPAGATE, GENERATE))
    node = build.carry(c, [build.const(PROPAGATE, 2), y])
    assert graph.node(node).op == "carry" and graph.node(node).args == (c, y)
    assert_computes(graph, node, lambda x, y, c: 1 if y == GENERATE else c if y == PROPAGATE
                    else 0)
    assert graph.const_value(build.carry(c, [y, build.const(GENERATE, 2)])) == 1
    assert graph.const_value(build.carry(c, [y, build.const(KILL, 2)])) == 0
    assert build.carry(c, [build.const(PROPAGATE, 2)]) == c
    known = build.carry(build.const(1, 1), [y])          # a known carry-in: a function of y
    assert graph.node(known).op == "sum"
    assert_computes(graph, known, lambda x, y, c: 0 if y == KILL else 1)


def test_select():
    graph, build, x, y, c = digit_graph()
    arms = [x, build.const(9, 4), x, build.const(2, 4)]
    assert build.select(build.const(1, 2), arms, 4) == arms[1]
    graph.update(y, domain=(0, 2))
    assert build.select(y, arms, 4) == x                 # both reachable arms are x
    graph.update(y, domain=None)
    constants = build.select(y, [build.const(v, 4) for v in (7, 1, 4, 4)], 4)
    assert graph.node(constants).op == "sum"
    assert_computes(graph, constants, lambda x, y, c: (7, 1, 4, 4)[y])
    node = build.select(y, arms, 4)
    assert graph.node(node).op == "select"
    assert_computes(graph, node, lambda x, y, c: (x, 9, x, 2)[y])


def test_priority():
    graph, build, x, y, c = digit_graph()
    nine, two = build.const(9, 4), build.const(2, 4)
    node = build.priority([(y, lambda v: v == 3), (c, lambda v: v == 1), (x, lambda v: v > 99)],
                          [nine, x, two], two, 4)
    record = graph.node(node)
    assert record.op == "priority" and record.args == (y, c, nine, x, two)   # x > 99 dropped
    assert_computes(graph, node, lambda x, y, c: 9 if y == 3 else x if c == 1 else 2)
    always = build.priority([(y, lambda v: v < 4), (c, lambda v: v)], [x, nine], two, 4)
    assert always == x


def test_gather_puts_bits_in_place():
    graph, build, x, y, c = digit_graph()
    node = build.gather([(x, 3), (y, 0), 1, (c, 0)])
    assert_computes(graph, node, lambda x, y, c: (x >> 3 & 1) | (y & 1) << 1 | 4 | c << 3)


def test_mul_column():
    graph, build, x, y, c = digit_graph()
    node, offset = build.mul_column([x], [y], 0)
    assert offset == 0 and graph.node(node).op == "mul_column"
    assert_computes(graph, node, lambda x, y, c: column_value(x, y, 0))
    assert build.mul_column([build.const(3, 4)], [build.const(5, 4)], 0) == (None, 15)


def test_origin_is_copied_onto_every_node_made():
    graph, (x, y) = register_graph(x=4, y=4)
    here = Location("t.hdl", 5, 3)
    build = DigitBuilder(graph, {"stage": "s", "name": "s.z", "loc": here})
    record = graph.node(build.lut([x, y], lambda a, b: a | b, 4))
    assert (record.stage, record.name, record.loc) == ("s", "s.z", here)
