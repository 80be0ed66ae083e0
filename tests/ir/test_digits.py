"""The digit operators (qwengpu/ir/digits.py): each row of `DIGIT_OPS` evaluated on small
exhaustive domains against a hand model written from the module docstring, its `image`
against the values it really takes, its `cost` and `check` on hand-worked nodes, and the
helpers `lut_strides`, `sum_values`, `affine_fit`, `column_value` and `column_bounds`."""

from __future__ import annotations

from itertools import product

import pytest

from qwengpu.ir import IrNode
from qwengpu.ir.digits import (ANALOG_OPS, DIGIT_OPS, GENERATE, KILL, PROPAGATE, affine_fit,
                               column_bounds, column_value, lut_strides, sum_values)


def run(node: IrNode, values, widths):
    return DIGIT_OPS[node.op].evaluate(node, list(values), list(widths))


def image(node: IrNode, domains, widths):
    return DIGIT_OPS[node.op].image(node, [tuple(d) for d in domains], list(widths))


def taken(node: IrNode, domains, widths) -> set[int]:
    """The values the node really takes over every combination of its inputs' domains."""
    return {run(node, combo, widths) for combo in product(*domains)}


def test_lut_indexes_its_table_with_the_inputs_packed_first_lowest():
    widths = (1, 2, 1)                          # index x0 + 2 * x1 + 8 * x2
    node = IrNode("lut", 4, (0, 1, 2), table=tuple((3 * i + 1) % 16 for i in range(16)))
    for x0, x1, x2 in product(range(2), range(4), range(2)):
        assert run(node, (x0, x1, x2), widths) == (3 * (x0 + 2 * x1 + 8 * x2) + 1) % 16
    domains = [(1,), (0, 2), (0, 1)]
    assert image(node, domains, widths) == taken(node, domains, widths) == {
        (3 * (1 + 2 * x1 + 8 * x2) + 1) % 16 for x1 in (0, 2) for x2 in (0, 1)}


def test_sum_looks_its_table_up_at_the_total_of_the_terms():
    # S = t0[x0] + t1[x1] ranges over 2 .. 2 + 3 + 12; the table is S mod 5
    terms = ((2, 3, 4, 5), (0, 4, 8, 12))
    node = IrNode("sum", 3, (0, 1), terms=terms, base=2,
                  table=tuple(s % 5 for s in range(2, 18)))
    for x0, x1 in product(range(4), range(4)):
        assert run(node, (x0, x1), (2, 2)) == (terms[0][x0] + terms[1][x1]) % 5
    domains = [(0, 3), (1, 2)]
    assert image(node, domains, (2, 2)) == taken(node, domains, (2, 2)) == {
        (t0 + t1) % 5 for t0 in (2, 5) for t1 in (4, 8)}


def carry_model(carry_in: int, classes) -> int:
    """Carry out: the last generate with only propagates after it, else cin if all propagate."""
    for j in reversed(range(len(classes))):
        if classes[j] != PROPAGATE:
            return 1 if classes[j] == GENERATE else 0
    return carry_in


def test_carry_is_the_lookahead_of_generate_and_propagate_classes():
    node = IrNode("carry", 1, (0, 1, 2, 3))
    for carry_in, *classes in product(range(2), *[(KILL, PROPAGATE, GENERATE)] * 3):
        assert run(node, (carry_in, *classes), (1, 2, 2, 2)) == carry_model(carry_in, classes)
    for domains in ([(0,), (PROPAGATE,), (PROPAGATE, GENERATE), (PROPAGATE,)],
                    [(0, 1), (KILL,), (PROPAGATE,), (PROPAGATE,)],
                    [(1,), (PROPAGATE,), (PROPAGATE,), (PROPAGATE,)]):
        assert image(node, domains, (1, 2, 2, 2)) >= taken(node, domains, (1, 2, 2, 2))
    assert image(node, [(1,), (PROPAGATE,), (PROPAGATE,), (PROPAGATE,)], (1, 2, 2, 2)) == {1}


def test_select_picks_the_arm_its_selector_names():
    node = IrNode("select", 4, (0, 1, 2, 3))
    for s, x, y, z in product(range(3), range(4), range(2), range(4)):
        assert run(node, (s, x, y, z), (2, 2, 1, 2)) == (x, y, z)[s]
    domains = [(0, 2), (1, 2), (0, 1), (3,)]
    assert image(node, domains, (2, 2, 1, 2)) == taken(node, domains, (2, 2, 1, 2)) == {1, 2, 3}


def test_priority_takes_the_first_arm_whose_condition_holds():
    # conditions: c1 holds for odd values of a u2 input, c2 for value 0 of a u1 input
    node = IrNode("priority", 4, (0, 1, 2, 3, 4), terms=((0, 1, 0, 1), (1, 0)))
    widths = (2, 1, 4, 4, 4)
    for c1, c2, x1, x2, default in product(range(4), range(2), (5, 6), (7,), (8, 9)):
        expected = x1 if c1 % 2 else x2 if c2 == 0 else default
        assert run(node, (c1, c2, x1, x2, default), widths) == expected
    domains = [(0, 2), (0, 1), (5,), (7,), (8,)]          # c1 never holds: x1 unreachable
    assert image(node, domains, widths) == taken(node, domains, widths) == {7, 8}
    domains = [(1, 3), (0, 1), (5,), (7,), (8,)]          # c1 always holds
    assert image(node, domains, widths) >= taken(node, domains, widths) == {5}


def test_mul_column_columns_add_up_to_the_product():
    # a has two digits, b one; column k of the product for k = 0, 1, 2
    columns = [IrNode("mul_column", 7, (0, 1, 2), groups=(2, 1), low=k) for k in range(3)]
    for a0, a1, b in product(range(16), range(16), range(16)):
        values = [run(column, (a0, a1, b), (4, 4, 4)) for column in columns]
        assert sum(q << (4 * k) for k, q in enumerate(values)) == (a0 + 16 * a1) * b
    assert ANALOG_OPS == ("mul_column",)


def test_column_value_by_hand():
    assert column_value(3, 5, 0) == 5 + 10 and column_value(3, 5, 1) == 0
    # 15 * 15 = 225 = 49 + 16 * 11: bits of a add 15, 30 & 15, 60 & 15, 120 & 15 at column 0
    assert column_value(15, 15, 0) == 15 + 14 + 12 + 8 == 49
    assert column_value(15, 15, 1) == 0 + 1 + 3 + 7 == 11


def test_column_bounds_come_from_the_bits_every_value_and_some_value_have():
    node = IrNode("mul_column", 4, (0, 1), groups=(1, 1), low=0)
    assert column_bounds(node, [(1, 3), (5,)]) == (column_value(1, 5, 0),
                                                   column_value(3, 5, 0)) == (5, 15)
    image_ = DIGIT_OPS["mul_column"].image(node, [(1, 3), (5,)], [4, 4])
    assert image_ == set(range(5, 16)) >= {column_value(a, 5, 0) for a in (1, 3)}


@pytest.mark.parametrize("node, domains, constant, units", [
    (IrNode("lut", 4, (0, 1), table=(0,) * 64), [(0, 1), (0, 1, 2)], [False, False], 6),
    (IrNode("carry", 1, (0, 1, 2)), [(0, 1), (0, 1, 2), (0, 1, 2)], [False] * 3, 3),
    (IrNode("select", 4, (0, 1, 2, 3)), [(0, 1, 2), (0, 1, 2, 3), (7,), (4, 5)],
     [False, False, True, False], 4 + 1 + 2),
    (IrNode("priority", 4, (0, 1, 2), terms=((0, 1),)), [(0, 1), (1, 2, 3), (9,)],
     [False, False, True], 3 + 1),
    # S = x over 0..3; the table steps once (between 1 and 2), or at every total
    (IrNode("sum", 1, (0,), terms=((0, 1, 2, 3),), table=(0, 0, 1, 1)), [(0, 1, 2, 3)],
     [False], 2),
    (IrNode("sum", 1, (0,), terms=((0, 1, 2, 3),), table=(0, 1, 0, 1)), [(0, 1, 2, 3)],
     [False], 4),
    # a full digit times a full digit: all 4 bits of a reach column 0, bits 1..3 column 1
    (IrNode("mul_column", 6, (0, 1), groups=(1, 1), low=0), [range(16), range(16)],
     [False, False], 4),
    (IrNode("mul_column", 4, (0, 1), groups=(1, 1), low=1), [range(16), range(16)],
     [False, False], 3),
], ids=["lut", "carry", "select", "priority", "sum-one-step", "sum-every-step",
        "mul-column-0", "mul-column-1"])
def test_cost_in_units(node, domains, constant, units):
    assert DIGIT_OPS[node.op].cost(node, [tuple(d) for d in domains], constant) == units


@pytest.mark.parametrize("node, widths, message", [
    (IrNode("lut", 4, (0, 1, 2, 3), table=(0,) * 16), (1, 1, 1, 1), "lut takes 1 to 3 inputs"),
    (IrNode("lut", 4, (0,), table=(0,) * 8), (4,), "lut table has 8 entries, inputs need 16"),
    (IrNode("sum", 4, (0, 1), terms=((0, 1),), table=(0,)), (1, 1), "sum has 1 term tables"),
    (IrNode("sum", 4, (0,), terms=((0, 1, 2),), table=(0,)), (1,), "term table 0 has 3"),
    (IrNode("carry", 1, (0, 1)), (1, 1), "carry takes a u1 carry-in and u2 classes"),
    (IrNode("carry", 1, (0,)), (1,), "carry needs a carry-in"),
    (IrNode("select", 4, (0, 1, 2, 3)), (1, 4, 4, 4), "select has 3 arms for a u1 selector"),
    (IrNode("select", 2, (0, 1)), (1, 4), "select arm wider than the result"),
    (IrNode("priority", 4, (0, 1, 2), terms=((0, 2),)), (1, 4, 4),
     "condition table 0 is not a 0/1 table"),
    (IrNode("priority", 4, (0, 1), terms=((0, 1),)), (1, 4), "priority needs k conditions"),
    (IrNode("mul_column", 4, (0, 1, 2), groups=(1, 1)), (4, 4, 4),
     "mul_column needs groups"),
    (IrNode("mul_column", 4, (0, 1), groups=(1, 1)), (4, 5), "mul_column reads digits"),
])
def test_check_rejects_malformed_nodes(node, widths, message):
    assert DIGIT_OPS[node.op].check(node, list(widths)).startswith(message)


def test_check_accepts_well_formed_nodes():
    cases = [(IrNode("lut", 4, (0, 1), table=(0,) * 32), (4, 1)),
             (IrNode("sum", 4, (0,), terms=((0, 1),), table=(0, 1)), (1,)),
             (IrNode("carry", 1, (0, 1)), (1, 2)),
             (IrNode("select", 4, (0, 1, 2)), (1, 4, 3)),
             (IrNode("priority", 4, (0, 1, 2), terms=((0, 1),)), (1, 4, 4)),
             (IrNode("mul_column", 6, (0, 1), groups=(1, 1)), (4, 4))]
    assert [DIGIT_OPS[node.op].check(node, list(widths)) for node, widths in cases] == \
        [None] * len(cases)


def test_every_row_is_named_and_described():
    for name, row in DIGIT_OPS.items():
        assert row.name == name and row.summary and row.cost_rule


def test_lut_strides_and_sum_values():
    assert lut_strides([1, 2, 4]) == [1, 2, 8] and lut_strides([]) == []
    assert sum_values([(0, 1), (0, 10)], [(0, 1), (0, 1)]) == {0, 1, 10, 11}
    assert sum_values([(5, 6, 7)], [(0, 2)]) == {5, 7}


def test_affine_fit():
    assert affine_fit([(0, 3), (1, 5), (2, 7)]) == (2, 3)
    assert affine_fit([(4, 9)]) == (0, 9)
    assert affine_fit([(0, 0), (1, 1), (2, 4)]) is None
    assert affine_fit([(0, 0), (2, 1)]) is None           # slope 1/2 is not an integer
