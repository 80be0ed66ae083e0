"""The semantics table against independent definitions, exhaustively for small widths.

The reference functions below are written from the operators' definitions with Python's
unbounded signed integers, not from the table's templates.
"""

from __future__ import annotations

import itertools
import random

import pytest

from qwengpu.dsl import semantics


def signed(value: int, width: int) -> int:
    return value - (1 << width) if value >> (width - 1) & 1 else value


def reference(op: str, a: int, b: int, width: int) -> int:
    wrap = (1 << width) - 1
    if op == "add":
        return (a + b) % (1 << width)
    if op == "sub":
        return (a - b) % (1 << width)
    if op == "mul":
        return (a * b) % (1 << width)
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    if op == "xor":
        return a ^ b
    if op == "shl":
        return (a * 2 ** b) % (1 << width) if b < width else 0
    if op == "shr":
        return a // 2 ** b if b < width else 0
    if op == "sar":
        return (signed(a, width) // 2 ** min(b, width)) & wrap
    if op == "eq":
        return int(a == b)
    if op == "ne":
        return int(a != b)
    if op == "ult":
        return int(a < b)
    if op == "ule":
        return int(a <= b)
    if op == "slt":
        return int(signed(a, width) < signed(b, width))
    if op == "sle":
        return int(signed(a, width) <= signed(b, width))
    raise AssertionError(op)


BINARY = ["add", "sub", "mul", "and", "or", "xor", "shl", "shr", "sar", "eq", "ne", "ult",
          "ule", "slt", "sle"]


@pytest.mark.parametrize("width", [1, 2, 3, 4])
@pytest.mark.parametrize("op", BINARY)
def test_binary_operators_exhaustive(op, width):
    for a, b in itertools.product(range(1 << width), repeat=2):
        assert semantics.evaluate(op, [a, b], [width, width]) == reference(op, a, b, width), \
            (op, a, b)


@pytest.mark.parametrize("op", BINARY)
def test_binary_operators_on_words(op):
    rng = random.Random(op)
    edges = [0, 1, 2, 31, 32, 33, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0xFFFF_FFFE]
    pairs = list(itertools.product(edges, repeat=2))
    pairs += [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(300)]
    for a, b in pairs:
        assert semantics.evaluate(op, [a, b], [32, 32]) == reference(op, a, b, 32), (op, a, b)


def test_shift_amount_may_be_wider_or_narrower_than_the_value():
    assert semantics.evaluate("shl", [1, 3], [8, 2]) == 8
    assert semantics.evaluate("shl", [1, 1 << 40], [8, 64]) == 0
    assert semantics.evaluate("shr", [0x80, 7], [8, 3]) == 1
    assert semantics.evaluate("sar", [0x80, 200], [8, 8]) == 0xFF
    assert semantics.evaluate("sar", [0x7F, 200], [8, 8]) == 0


@pytest.mark.parametrize("width", [1, 3, 4])
def test_unary_operators_exhaustive(width):
    for a in range(1 << width):
        assert semantics.evaluate("not", [a], [width]) == (1 << width) - 1 - a
        assert semantics.evaluate("neg", [a], [width]) == (-a) % (1 << width)


def test_mux_slice_extend_concat():
    assert semantics.evaluate("mux", [1, 5, 9], [1, 4, 4]) == 5
    assert semantics.evaluate("mux", [0, 5, 9], [1, 4, 4]) == 9
    assert semantics.evaluate("slice", [0b1011_0110], [8], width=3, low=2) == 0b101
    assert semantics.evaluate("zext", [0xF], [4], width=8) == 0x0F
    for a in range(16):
        assert semantics.evaluate("sext", [a], [4], width=8) == signed(a, 4) & 0xFF
    assert semantics.evaluate("concat", [0xA, 0x3, 0x1], [4, 2, 1]) == 0b1010_11_1


@pytest.mark.parametrize("op, widths, width, low", [
    ("add", [8, 4], None, 0),
    ("mux", [2, 8, 8], None, 0),
    ("mux", [1, 8, 4], None, 0),
    ("slice", [8], 4, 6),
    ("zext", [8], 4, 0),
    ("concat", [], None, 0),
    ("not", [4, 4], None, 0),
])
def test_width_rules_reject_bad_operands(op, widths, width, low):
    with pytest.raises(ValueError):
        semantics.result_width(op, widths, width, low)


def test_every_table_row_has_a_summary_and_a_rule():
    for row in semantics.OPERATORS.values():
        assert row.summary and row.width_rule
        assert (row.template is None) == (row.name == "concat")
