"""The digit-level primitives: what `lower-digits` produces and the backend builds as gadgets.

After lowering, every value is at most 4 bits wide (a bit, a hex digit, a partial top digit,
or a small enumeration such as a generate/propagate class) and held one-hot in the residual
stream.  Besides `const` and the state ports (`register`, `read` of one digit, and the sinks),
five operators compute everything (and an analog one makes multiplication cheap, below).
Each is one row of `DIGIT_OPS`, written once: its meaning (`evaluate`), the set of values it
can produce from given input value sets (`image`), its cost in the backend (`cost`, MLP units
of one depth-1 gadget), and its structural check (`check`).

- `lut x0[, x1[, x2]]`: `table[x0 + x1*2^w0 + x2*2^(w0+w1)]` -- a lookup over the product of
  up to 3 small one-hot inputs.  Gadget: one AND unit per combination of input values, so the
  cost is the product of the input domain sizes (luts with the same inputs share their units).
- `sum x0, x1, ...`: `table[S - base]` with `S = terms[0][x0] + terms[1][x1] + ...` -- each
  input contributes an integer chosen by its own table (a linear read-out of its one-hot
  group), and the output is a lookup on the total.  Gadget: ReLUs at the breakpoints of the
  table over `S`, so the cost is the number of distinct points `s` and `s + 1` where the table
  changes between them -- cheap when the inputs are many but the result has few steps
  (digit adders, column sums of a multiplier, equality of many digits, bit gathering).
- `carry cin, gp0, gp1, ...`: carry-lookahead.  Each `gp` is a class 0 (kill), 1 (propagate)
  or 2 (generate) of one digit position, least significant first; the result is the carry out
  of the last position, `c = g_k | (p_k & c)` folded from `cin`.  Gadget: one unit per
  possible origin of the carry (`relu(g_j + p_{j+1} + ... + p_last - (last - j))`, the
  terms are mutually exclusive), so the cost is the number of inputs.
- `select s, x0, x1, ...`: `x_s` -- a one-hot selector gating one-hot arms.  Gadget: one AND
  unit per value of each non-constant arm, and one per constant arm.
- `priority c1..ck, x1..xk, d`: the first `x_i` whose condition holds, else `d` -- a whole
  `match`/if-else chain in one gadget.  Condition `i` is `terms[i][c_i]` (a 0/1 table over the
  values of input `c_i`, read linearly from its one-hot group).  Gadget: one unit per value of
  each non-constant arm, `relu(c_i + x_i[v] - c_1 - ... - c_(i-1) - 1)`, so the cost is that
  of a `select` with the same arms.

One more operator makes a multiplier cheap (`lower-digits`, `op_mul`).  Its value is
*analog*: an integer held in ONE residual dim (scaled down, see docs/gadgets.md), not a
one-hot group, so it may be wider than a digit (`ANALOG_OPS`).  A node reads an analog value
only linearly, as an affine term of a `sum` (a linear form of the dim):

- `mul_column a0..a(n-1), b0..b(m-1)` (`groups` (n, m): the digits of two words, lowest first;
  `low` = the column k): `Q_k = sum 2^((i+j) % 4) a_i b_j` over the bit pairs with
  `(i+j) // 4 == k`, so that `a * b = sum_k 16^k Q_k`.  Gadget: one gated unit per bit `a_i`
  reaching column k (condition `a_i`, value the form of b's bits that `a_i` meets there).

Tables are tuples indexed as above; entries for input values outside the inputs' domains
are don't-cares, kept at 0 so that equal functions have equal tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Callable, Sequence

KILL, PROPAGATE, GENERATE = 0, 1, 2
MAX_LUT_INPUTS = 3
DIGIT_BITS = 4


def lut_strides(widths: Sequence[int]) -> list[int]:
    """The index weight of each lut input: inputs are packed side by side, the first lowest."""
    strides, stride = [], 1
    for width in widths:
        strides.append(stride)
        stride <<= width
    return strides


def _eval_lut(node, values, widths):
    return node.table[sum(v * s for v, s in zip(values, lut_strides(widths)))]


def _eval_sum(node, values, widths):
    return node.table[sum(term[v] for term, v in zip(node.terms, values)) - node.base]


def _eval_carry(node, values, widths):
    carry = values[0]
    for gp in values[1:]:
        carry = 1 if gp == GENERATE else (carry if gp == PROPAGATE else 0)
    return carry


def _eval_select(node, values, widths):
    return values[1 + values[0]]


def _eval_priority(node, values, widths):
    count = len(node.terms)
    for i, term in enumerate(node.terms):
        if term[values[i]]:
            return values[count + i]
    return values[-1]


def _digit_word(values: Sequence[int]) -> int:
    return sum(v << (DIGIT_BITS * p) for p, v in enumerate(values))


def column_value(a: int, b: int, column: int) -> int:
    """`Q_k` of `a * b`: each bit `a_i` adds the 4-bit window of `b << i` at column k."""
    return sum(((b << i) >> (DIGIT_BITS * column)) & 15
               for i in range(a.bit_length()) if (a >> i) & 1)


def _column_words(node, values):
    count = node.groups[0]
    return _digit_word(values[:count]), _digit_word(values[count:])


def column_bounds(node, domains) -> tuple[int, int]:
    """The least and the largest `Q_k` (it grows with every bit, so the bits every value of a
    digit has give the least and the bits any value has the largest)."""
    every = [_and_all(d) for d in domains]
    some = [_or_all(d) for d in domains]
    return (column_value(*_column_words(node, every), node.low),
            column_value(*_column_words(node, some), node.low))


def _and_all(domain) -> int:
    out = 15
    for v in domain:
        out &= v
    return out


def _or_all(domain) -> int:
    out = 0
    for v in domain:
        out |= v
    return out


def _eval_mul_column(node, values, widths):
    return column_value(*_column_words(node, values), node.low)


def sum_values(terms: Sequence[Sequence[int]], domains: Sequence[Sequence[int]]) -> set[int]:
    """Every total `S` that the inputs of a `sum` can produce."""
    totals = {0}
    for term, domain in zip(terms, domains):
        contributions = {term[v] for v in domain}
        totals = {s + t for s in totals for t in contributions}
    return totals


def _image_lut(node, domains, widths):
    indices = [0]
    for domain, stride in zip(domains, lut_strides(widths)):
        indices = [i + v * stride for i in indices for v in domain]
    return {node.table[i] for i in indices}


def _image_sum(node, domains, widths):
    return {node.table[s - node.base] for s in sum_values(node.terms, domains)}


def _image_carry(node, domains, widths):
    image = set(domains[0])
    if any(GENERATE in d for d in domains[1:]):
        image.add(1)
    if any(KILL in d for d in domains[1:]):
        image.add(0)
    return image


def _image_select(node, domains, widths):
    out = set()
    for choice in domains[0]:
        out |= set(domains[1 + choice])
    return out


def _image_priority(node, domains, widths):
    count = len(node.terms)
    out = set(domains[-1])
    for i, term in enumerate(node.terms):
        if any(term[v] for v in domains[i]):
            out |= set(domains[count + i])
    return out


def _image_mul_column(node, domains, widths):
    low, high = column_bounds(node, domains)
    return set(range(low, high + 1))


def _cost_lut(node, domains, constant):
    return prod(len(d) for d in domains)


def _cost_sum(node, domains, constant):
    totals = sorted(sum_values(node.terms, domains))
    points = set()
    for s, t in zip(totals, totals[1:]):
        if node.table[s - node.base] != node.table[t - node.base]:
            points.update((s, t))
    return len(points)


def _cost_carry(node, domains, constant):
    return len(domains)


def _cost_select(node, domains, constant):
    return sum(1 if is_const else len(d) for d, is_const in zip(domains[1:], constant[1:]))


def _cost_priority(node, domains, constant):
    count = len(node.terms)
    return sum(1 if is_const else len(d) for d, is_const in zip(domains[count:],
                                                               constant[count:]))


def _cost_mul_column(node, domains, constant):
    count = node.groups[0]
    b_bits = _digit_word([_or_all(d) for d in domains[count:]])
    units = 0
    for p, domain in enumerate(domains[:count]):
        for bit in range(DIGIT_BITS):
            if (_or_all(domain) >> bit) & 1:
                window = (b_bits << (DIGIT_BITS * p + bit)) >> (DIGIT_BITS * node.low)
                units += 1 if window & 15 else 0
    return units


def affine_fit(points: Sequence[tuple[int, int]]) -> tuple[int, int] | None:
    """`(slope, offset)` when the points `(v, t)` lie on `t = slope * v + offset` with integer
    slope and offset, else None (how a `sum` may read an analog value)."""
    (v0, t0), rest = points[0], points[1:]
    slope = (rest[0][1] - t0) // (rest[0][0] - v0) if rest else 0
    offset = t0 - slope * v0
    return (slope, offset) if all(t == slope * v + offset for v, t in points) else None


def _check_lut(node, widths):
    if not 1 <= len(widths) <= MAX_LUT_INPUTS:
        return f"lut takes 1 to {MAX_LUT_INPUTS} inputs, got {len(widths)}"
    if node.table is None or len(node.table) != 1 << sum(widths):
        return f"lut table has {len(node.table or ())} entries, inputs need {1 << sum(widths)}"
    return None


def _check_sum(node, widths):
    if not widths:
        return "sum of no inputs"
    if node.terms is None or len(node.terms) != len(widths):
        return f"sum has {len(node.terms or ())} term tables for {len(widths)} inputs"
    for index, (term, width) in enumerate(zip(node.terms, widths)):
        if len(term) != 1 << width:
            return f"term table {index} has {len(term)} entries for a u{width} input"
    if node.table is None:
        return "sum has no table"
    return None


def _check_carry(node, widths):
    if len(widths) < 2:
        return "carry needs a carry-in and at least one generate/propagate input"
    if widths[0] != 1 or any(w != 2 for w in widths[1:]):
        return f"carry takes a u1 carry-in and u2 classes, got {tuple(widths)}"
    if node.width != 1:
        return "carry produces one bit"
    return None


def _check_select(node, widths):
    if len(widths) < 2:
        return "select needs a selector and at least one arm"
    if len(widths) - 1 > 1 << widths[0]:
        return f"select has {len(widths) - 1} arms for a u{widths[0]} selector"
    if any(w > node.width for w in widths[1:]):
        return f"select arm wider than the result ({tuple(widths[1:])} vs u{node.width})"
    return None


def _check_priority(node, widths):
    count = len(node.terms or ())
    if count < 1 or len(widths) != 2 * count + 1:
        return f"priority needs k conditions, k arms and a default, got {len(widths)} inputs " \
               f"for {count} condition tables"
    for index, (term, width) in enumerate(zip(node.terms, widths)):
        if len(term) != 1 << width or any(t not in (0, 1) for t in term):
            return f"condition table {index} is not a 0/1 table over a u{width} input"
    if any(w > node.width for w in widths[count:]):
        return f"priority arm wider than the result ({tuple(widths[count:])} vs u{node.width})"
    return None


def _check_mul_column(node, widths):
    if node.groups is None or len(node.groups) != 2 or min(node.groups) < 1 or \
            sum(node.groups) != len(widths):
        return f"mul_column needs groups (digits of a, digits of b) covering its {len(widths)} " \
               "inputs"
    if any(w > DIGIT_BITS for w in widths):
        return f"mul_column reads digits, got widths {tuple(widths)}"
    return None


@dataclass(frozen=True)
class DigitOp:
    """One row of the digit-level table."""

    name: str
    summary: str
    evaluate: Callable      # (node, arg values, arg widths) -> value
    image: Callable         # (node, arg domains, arg widths) -> set of values
    cost: Callable          # (node, arg domains, arg is-constant flags) -> MLP units
    check: Callable         # (node, arg widths) -> error text or None
    cost_rule: str


DIGIT_OPS: dict[str, DigitOp] = {row.name: row for row in [
    DigitOp("lut", "table lookup over the product of 1-3 small one-hot inputs",
            _eval_lut, _image_lut, _cost_lut, _check_lut,
            "product of the input domain sizes (units shared by luts with equal inputs)"),
    DigitOp("sum", "table lookup on a sum of per-input contributions",
            _eval_sum, _image_sum, _cost_sum, _check_sum,
            "breakpoints of the table over the reachable totals"),
    DigitOp("carry", "carry-lookahead over generate/propagate classes",
            _eval_carry, _image_carry, _cost_carry, _check_carry,
            "one unit per input"),
    DigitOp("select", "one-hot selector choosing among one-hot arms",
            _eval_select, _image_select, _cost_select, _check_select,
            "one unit per value of each variable arm, one per constant arm"),
    DigitOp("priority", "first arm whose condition holds, else the default",
            _eval_priority, _image_priority, _cost_priority, _check_priority,
            "one unit per value of each variable arm, one per constant arm"),
    DigitOp("mul_column", "analog column sum Q_k of a product (bit times digit products)",
            _eval_mul_column, _image_mul_column, _cost_mul_column, _check_mul_column,
            "one gated unit per bit of a reaching the column"),
]}
ANALOG_OPS = ("mul_column",)
