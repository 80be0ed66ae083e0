"""The multiplier's lowering: analog column sums (`mul_column`) split by one-hot carries.

Meaning: the digit graph agrees with the word graph and with Python's products on the low
word, both high words and multiply-add of the spec's ALU (seeded random words and the edge
values), exhaustively on small widths, with constant and partly constant operands.  Shape: a
32x32 -> 64 product is 16 column sums and no partial-product luts, at a tenth of the old cost.
Rejection: `verify` refuses analog values read other than linearly."""

from __future__ import annotations

import itertools
import random

import pytest

from qwengpu.ir import evaluate, format_node, verify
from qwengpu.passes import DEFAULT_PIPELINE
from qwengpu.ir.cost import estimate_cost
from qwengpu.ir.digits import column_value
from qwengpu.ir import VerifyError

from graph_helpers import operator_graph, spec_graph
from pass_helpers import run_checked

ALU = """
register a : u32;
register b : u32;
register c : u32;
stage s {
    let p = zext(a, 64) * zext(b, 64);
    let lo = p[31:0];
    let hi = p[63:32];
    let his = hi - (slt(a, 0) ? b : 0) - (slt(b, 0) ? a : 0);
    emit lo, hi, his;
    emit mad = lo + c;
}
"""
EDGES = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0xFFFF, 0x10000]
MASK = 0xFFFFFFFF


def _signed(x: int) -> int:
    return x - (1 << 32) if x >> 31 else x


def _expected(a: int, b: int, c: int) -> dict[str, int]:
    return {"lo": (a * b) & MASK, "hi": (a * b) >> 32,
            "his": ((_signed(a) * _signed(b)) >> 32) & MASK, "mad": (a * b + c) & MASK}


@pytest.fixture(scope="module")
def alu():
    word = spec_graph(ALU)
    digits, _ = run_checked(word, *DEFAULT_PIPELINE)
    return word, digits


def test_alu_products_mean_what_they_say(alu):
    word, digits = alu
    rng = random.Random(130)
    pairs = list(itertools.product(EDGES, EDGES)) + \
        [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(60)] + \
        [(rng.choice(EDGES), rng.getrandbits(32)) for _ in range(20)]
    for a, b in pairs:
        state = {"a": a, "b": b, "c": rng.choice(EDGES + [rng.getrandbits(32)])}
        result = evaluate(digits, state)
        assert result == evaluate(word, state), state
        assert result["record"] == _expected(state["a"], state["b"], state["c"]), state


def test_alu_product_shape(alu):
    word, digits = alu
    counts = digits.op_counts()
    assert counts["mul_column"] == 16 and "lut" not in counts
    columns = [n for _, n in digits.items() if n.op == "mul_column"]
    assert sorted(n.low for n in columns) == list(range(16))
    assert max(max(digits.domain(i)) for i, n in digits.items() if n.op == "mul_column") == 469
    # the old lowering: 64 partial-product luts of 256 units each, plus the column sums
    cost = estimate_cost(digits)
    assert cost.units_by_op["mul_column"] == 280     # 8 columns per bit a_i, 9 unless i % 4 == 0
    assert cost.units < 16384 // 4


def test_column_value_is_the_column_of_the_product():
    rng = random.Random(4)
    for a, b in [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(50)] + \
            list(itertools.product(EDGES, EDGES)):
        assert sum(column_value(a, b, k) << (4 * k) for k in range(16)) == a * b
        assert all(column_value(a, b, k) == column_value(b, a, k) for k in range(16))


@pytest.mark.parametrize("widths", [(1, 1), (2, 2), (3, 3), (6, 6)])
def test_small_products_exhaustive(widths):
    graph = operator_graph("mul", widths)
    lowered, _ = run_checked(graph, *DEFAULT_PIPELINE)
    for a, b in itertools.product(range(1 << widths[0]), range(1 << widths[1])):
        assert evaluate(lowered, {"r0": a, "r1": b}) == evaluate(graph, {"r0": a, "r1": b})


@pytest.mark.parametrize("source", [
    "register x : u16; stage s { emit y = x * 3; emit z = x * 0xbeef; }",
    "register x : u8; stage s { emit y = {x, u4(5)} * {u4(3), x}; }",
    "register x : u12; register w : u12; stage s { emit y = zext(x, 24) * zext(w, 24); }",
])
def test_constant_and_partly_constant_operands(source):
    word = spec_graph(source)
    digits, _ = run_checked(word, *DEFAULT_PIPELINE)
    rng = random.Random(len(source))
    registers = sorted(word.registers)
    for _ in range(60):
        state = {r: rng.getrandbits(word.registers[r].width) for r in registers}
        assert evaluate(digits, state) == evaluate(word, state), state


def test_analog_values_print_and_encode(alu):
    _, digits = alu
    node_id = next(i for i, n in digits.items() if n.op == "mul_column" and n.low == 3)
    text = format_node(digits, node_id, with_locations=False)
    assert "mul_column" in text and "column 3" in text and text.endswith("analog")
    assert digits.node(node_id).encoding.dims == 1


def test_verify_refuses_analog_values_read_other_than_linearly(alu):
    _, digits = alu
    q = next(i for i, n in digits.items() if n.op == "mul_column" and n.low == 1)
    domain = digits.domain(q)
    width = digits.node(q).width
    square = tuple(v * v if v in domain else 0 for v in range(1 << width))
    bad_sum = digits.copy()
    bad_sum.add("sum", 1, (q,), terms=(square,), base=0, table=(0,) * (max(square) + 1))
    with pytest.raises(VerifyError, match="not affine"):
        verify(bad_sum)
    bad_select = digits.copy()
    bad_select.add("select", 4, (bad_select.add("const", 1, value=0), q, q))
    with pytest.raises(VerifyError, match="analog"):
        verify(bad_select)
