"""`lower-digits`: every word operator, lowered, means what it meant (exhaustively for small
widths, on random and corner values for wide ones); shapes of the main circuits; sinks."""

from __future__ import annotations

import itertools
import random

import pytest

from qwengpu.dsl import semantics
from qwengpu.ir import evaluate, format_graph, verify
from qwengpu.ir.cost import estimate_cost
from qwengpu.ir.digits import DIGIT_OPS

from graph_helpers import memory_graph, operator_graph, spec_graph
from pass_helpers import assert_same_meaning, run_checked

BINARY = ["add", "sub", "mul", "and", "or", "xor", "eq", "ne", "ult", "ule", "slt", "sle",
          "shl", "shr", "sar"]
UNARY = ["neg", "not"]


def _lowered(graph):
    lowered, stats = run_checked(graph, "lower-digits", "remove-dead")
    assert lowered.level == "digit"
    assert set(lowered.op_counts()) <= set(DIGIT_OPS) | {"const", "register", "read", "field",
                                                         "write", "stop"}
    return lowered


def _corners(width: int, rng: random.Random, count: int) -> list[int]:
    top = semantics.mask(width)
    fixed = [0, 1, 2, top, top - 1, 1 << (width - 1), (1 << (width - 1)) - 1, 0x0F0F0F0F & top]
    return fixed + [rng.getrandbits(width) for _ in range(count)] + \
        [rng.randrange(min(40, top + 1)) for _ in range(count // 2)]


def _check(graph, lowered, values_per_register):
    names = sorted(graph.registers)
    for combo in values_per_register:
        state = dict(zip(names, combo))
        assert evaluate(lowered, state) == evaluate(graph, state), state


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("width", [1, 3, 4, 5])
def test_binary_exhaustive_small(op, width):
    graph = operator_graph(op, (width, width))
    lowered = _lowered(graph)
    _check(graph, lowered, itertools.product(range(1 << width), repeat=2))


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("width", [8, 32])
def test_binary_wide_corners(op, width):
    graph = operator_graph(op, (width, width))
    lowered = _lowered(graph)
    rng = random.Random(width)
    a, b = _corners(width, rng, 40), _corners(width, rng, 40)
    rng.shuffle(b)
    pairs = list(zip(a, b)) + [(x, x) for x in a[:10]] + [(x, 33) for x in a[:10]] + \
        [(x, 31) for x in a[:10]] + [(x, 7) for x in a[:10]]
    _check(graph, lowered, pairs)


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("width", [1, 4, 7, 32])
def test_unary(op, width):
    graph = operator_graph(op, (width,))
    lowered = _lowered(graph)
    values = range(1 << width) if width <= 8 else _corners(width, random.Random(1), 60)
    _check(graph, lowered, ((v,) for v in values))


@pytest.mark.parametrize("op,amount_width", [("shl", 3), ("shr", 6), ("sar", 32), ("shl", 32)])
def test_variable_shift_amount_widths(op, amount_width):
    graph = operator_graph(op, (32, amount_width))
    lowered = _lowered(graph)
    rng = random.Random(amount_width)
    amounts = list(range(min(1 << amount_width, 40))) + \
        _corners(amount_width, rng, 10)
    _check(graph, lowered, [(rng.getrandbits(32) | (1 << 31) * (i % 2), s)
                            for i, s in enumerate(amounts)])


def test_multiply_64_bit_of_extended_words():
    graph = spec_graph("""
register a : u32;
register b : u32;
stage s {
    emit hs = (sext(a, 64) * sext(b, 64))[63:32];
    emit hu = (zext(a, 64) * zext(b, 64))[63:32];
}
""")
    lowered, _ = run_checked(graph, "fold-constants", "merge-common", "remove-dead",
                             "lower-digits", "fold-constants", "merge-common", "remove-dead")
    rng = random.Random(5)
    a, b = _corners(32, rng, 30), _corners(32, rng, 30)
    rng.shuffle(b)
    _check(graph, lowered, list(zip(a, b)))


@pytest.mark.parametrize("op,widths,width,low", [
    ("slice", (32,), 7, 5), ("slice", (32,), 8, 8), ("slice", (7,), 3, 4),
    ("zext", (7,), 32, 0), ("sext", (7,), 32, 0), ("sext", (32,), 64, 0),
    ("concat", (3, 8, 1), None, 0), ("concat", (4, 4), None, 0), ("mux", (1, 32, 32), None, 0),
])
def test_bit_movement_and_mux(op, widths, width, low):
    graph = operator_graph(op, widths, width, low)
    lowered = _lowered(graph)
    rng = random.Random(len(widths))
    combos = [tuple(rng.getrandbits(w) for w in widths) for _ in range(100)]
    _check(graph, lowered, combos)


def test_memories_and_sinks_take_digits():
    graph = memory_graph()
    lowered = _lowered(graph)
    assert_same_meaning(graph, lowered, samples=60)
    reads = [n for _, n in lowered.items() if n.op == "read"]
    assert len(reads) == 4 and {n.low for n in reads} == {0, 4}
    write = next(n for _, n in lowered.items() if n.op == "write")
    assert write.groups == (1, 1, 2)


def test_shape_of_a_32_bit_adder():
    lowered = _lowered(operator_graph("add", (32, 32)))
    counts = lowered.op_counts()
    assert counts["register"] == 16                   # 8 digits of each operand
    assert counts["sum"] == 15 and counts["carry"] == 6   # 8 digit sums, 7 classes
    cost = estimate_cost(lowered)
    assert cost.depth == 3 and cost.gadgets == 21


def test_shape_of_a_comparison_and_an_equality():
    lowered = _lowered(operator_graph("ult", (32, 32)))
    assert lowered.op_counts()["carry"] == 1 and lowered.op_counts()["sum"] == 8
    lowered = _lowered(operator_graph("eq", (32, 32)))
    assert lowered.op_counts()["sum"] == 9 and estimate_cost(lowered).depth == 2


def test_shape_of_bitwise_ops_with_a_constant_mask():
    graph = spec_graph("register x : u32;\nstage s { emit y = x & 0xFF00F0C3; }")
    lowered = _lowered(graph)
    counts = lowered.op_counts()
    assert counts.get("lut", 0) == 0          # one-input functions, not two-input lookups
    assert counts["sum"] == 2                 # digits 0 and 1 are partly masked
    assert_same_meaning(graph, lowered)


def test_golden_text_of_a_small_lowering():
    graph = operator_graph("add", (5, 5))
    lowered = _lowered(graph)
    assert format_graph(lowered, with_locations=False) == """\
graph t (digit level)
register r0 : u5 = 0
register r1 : u5 = 0
%4 = register r0 : u4
%5 = register r0[bit 4] : u1
%6 = register r1 : u4
%7 = register r1[bit 4] : u1
%9 = sum %4, %6 {add.sum #c3a68840 base 0 terms 0123456789abcdef 0123456789abcdef} : u4
%10 = sum %4, %6 {add.gp #c107666a base 0 terms 0123456789abcdef 0123456789abcdef} : u2 {0,1,2}
%12 = sum %5, %7, %10 {add.sum 0101 base 0 terms 01 01 0010} : u1
%3 = field out = %9, %12 groups 2
"""


def test_each_digit_knows_its_place_in_its_word():
    graph = spec_graph("register x : u12;\nregister y : u12;\nstage s {\n"
                       "    let named = x + y;\n    emit a = named, b = x ^ y;\n}")
    lowered = _lowered(graph)
    fields = {n.state: n for _, n in lowered.items() if n.op == "field"}
    named = [lowered.node(d) for d in fields["a"].args]
    assert [(n.name, n.digit) for n in named] == [(f"s.named.d{k}", k) for k in range(3)]
    anonymous = [lowered.node(d) for d in fields["b"].args]
    assert [(n.name, n.digit) for n in anonymous] == [(None, k) for k in range(3)]
    # the pieces of the adder: the carry into digit k (into digit 1 it is digit 0's class
    # itself), the class of digit k
    carries = [n for _, n in lowered.items() if n.op == "carry"]
    assert [(n.name, n.digit) for n in carries] == [(None, 2)]
    classes = [n for _, n in lowered.items() if n.label == "add.gp"]
    assert [(n.name, n.digit) for n in classes] == [(None, 0), (None, 1)]


def test_verify_rejects_a_wide_value_in_a_digit_graph():
    lowered = _lowered(operator_graph("add", (8, 8)))
    register = lowered.add("register", 8, state="r0")
    lowered.add("field", 8, (register,), state="wide")
    with pytest.raises(Exception, match="u8 value left in a digit-level graph"):
        verify(lowered)
