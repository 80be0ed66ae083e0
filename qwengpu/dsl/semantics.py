"""The meaning of every netlist operator, written once.

Each operator of the elaborated HDL (`qwengpu.dsl.netlist`) is one row of `OPERATORS`: its
arity, how its result width follows from its operands, and a Python expression template that
*is* its semantics.  The same template serves three users:

- the reference interpreter pastes it into the step function it compiles (`python_expression`);
- constant folding and the tests of the backend's gadgets call `evaluate`, which compiles the
  template into a small function (cached per operand widths);
- the docs and the netlist printer use `summary`.

Values are unsigned integers below `2**width`; signedness belongs to operators (`slt`, `sar`,
`sext`), never to values.  Template fields: `{a}`, `{b}`, `{c}` are the operands, `{w}` is the
width of the first operand, `{sign}` its sign bit (`1 << (w - 1)`), `{mask}` the mask of the
result width, and `{low}` the low bit of a `slice`.  Two's-complement tricks used below:
`(x ^ sign) - sign` reads `x` as signed, and `x ^ sign` maps signed order onto unsigned order.

Operators that are not pure functions of their operands live outside this table: `const`
(a literal), `register` (the value of a register at the start of the step) and `read` (a
memory element at the start of the step).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

# How the result width of an operator follows from its operands (checked by `result_width`).
SAME = "same"          # all operands have one width; the result has it too
BOOL = "bool"          # all operands have one width; the result is 1 bit
SHIFT = "shift"        # the result has the width of operand a; the amount b has any width
SELECT = "select"      # a is 1 bit; b and c have one width, which the result has
SLICE = "slice"        # bits low .. low + width - 1 of a
EXTEND = "extend"      # the result is at least as wide as a
CONCAT = "concat"      # the result width is the sum of the operand widths


@dataclass(frozen=True)
class Operator:
    """One row of the semantics table."""

    name: str
    arity: int | None          # None: any number of operands (concat)
    width_rule: str
    template: str | None       # Python expression over {a} {b} {c} {w} {sign} {mask} {low}
    summary: str


def mask(width: int) -> int:
    """All ones in `width` bits."""
    return (1 << width) - 1


def to_signed(value: int, width: int) -> int:
    """Read a `width`-bit word as two's complement."""
    sign = 1 << (width - 1)
    return (value ^ sign) - sign


_TABLE = [
    Operator("add", 2, SAME, "(({a} + {b}) & {mask})", "a + b modulo 2^w"),
    Operator("sub", 2, SAME, "(({a} - {b}) & {mask})", "a - b modulo 2^w"),
    Operator("mul", 2, SAME, "(({a} * {b}) & {mask})", "a * b modulo 2^w"),
    Operator("neg", 1, SAME, "(-{a} & {mask})", "-a modulo 2^w"),
    Operator("and", 2, SAME, "({a} & {b})", "bitwise and"),
    Operator("or", 2, SAME, "({a} | {b})", "bitwise or"),
    Operator("xor", 2, SAME, "({a} ^ {b})", "bitwise exclusive or"),
    Operator("not", 1, SAME, "({a} ^ {mask})", "bitwise complement"),
    # A shift amount is unsigned and may be as wide as it likes; shifting out all bits gives 0
    # (or the sign for `sar`).  The guard keeps Python from building huge integers.
    Operator("shl", 2, SHIFT, "((({a} << {b}) & {mask}) if {b} < {w} else 0)",
             "a << b, 0 when b >= w"),
    Operator("shr", 2, SHIFT, "({a} >> {b})", "logical a >> b, 0 when b >= w"),
    Operator("sar", 2, SHIFT, "(((({a} ^ {sign}) - {sign}) >> {b}) & {mask})",
             "arithmetic a >> b, copies of the sign when b >= w"),
    Operator("eq", 2, BOOL, "(1 if {a} == {b} else 0)", "a == b"),
    Operator("ne", 2, BOOL, "(1 if {a} != {b} else 0)", "a != b"),
    Operator("ult", 2, BOOL, "(1 if {a} < {b} else 0)", "a < b, unsigned"),
    Operator("ule", 2, BOOL, "(1 if {a} <= {b} else 0)", "a <= b, unsigned"),
    Operator("slt", 2, BOOL, "(1 if ({a} ^ {sign}) < ({b} ^ {sign}) else 0)", "a < b, signed"),
    Operator("sle", 2, BOOL, "(1 if ({a} ^ {sign}) <= ({b} ^ {sign}) else 0)",
             "a <= b, signed"),
    Operator("mux", 3, SELECT, "({b} if {a} else {c})", "a ? b : c"),
    Operator("slice", 1, SLICE, "(({a} >> {low}) & {mask})", "bits low .. low+width-1 of a"),
    Operator("zext", 1, EXTEND, "{a}", "a zero-extended"),
    Operator("sext", 1, EXTEND, "(((({a} ^ {sign}) - {sign})) & {mask})", "a sign-extended"),
    Operator("concat", None, CONCAT, None, "operands side by side, the first in the high bits"),
]

OPERATORS: dict[str, Operator] = {row.name: row for row in _TABLE}

# Operators outside the table (see the module docstring).
STATE_AND_LITERAL_OPS = ("const", "register", "read")


def result_width(op: str, operand_widths: Sequence[int], width: int | None = None,
                 low: int = 0) -> int:
    """The width of `op` applied to operands of these widths; `ValueError` when they do not fit.

    `width` is needed (and checked) for the operators whose result width is an attribute
    (`slice`, `zext`, `sext`)."""
    row = OPERATORS[op]
    if row.arity is not None and len(operand_widths) != row.arity:
        raise ValueError(f"{op} takes {row.arity} operands, got {len(operand_widths)}")
    if any(w < 1 for w in operand_widths):
        raise ValueError(f"{op}: operand widths must be at least 1")
    rule = row.width_rule
    if rule in (SAME, BOOL):
        if len(set(operand_widths)) != 1:
            raise ValueError(f"{op}: operand widths differ {tuple(operand_widths)}")
        return operand_widths[0] if rule == SAME else 1
    if rule == SHIFT:
        return operand_widths[0]
    if rule == SELECT:
        if operand_widths[0] != 1 or operand_widths[1] != operand_widths[2]:
            raise ValueError(f"mux needs a 1-bit select and arms of one width, "
                             f"got {tuple(operand_widths)}")
        return operand_widths[1]
    if rule == SLICE:
        if width is None or low < 0 or width < 1 or low + width > operand_widths[0]:
            raise ValueError(f"slice of bits {low}..{low + (width or 0) - 1} "
                             f"outside a {operand_widths[0]}-bit operand")
        return width
    if rule == EXTEND:
        if width is None or width < operand_widths[0]:
            raise ValueError(f"{op} to {width} bits of a {operand_widths[0]}-bit operand")
        return width
    if rule == CONCAT:
        if not operand_widths:
            raise ValueError("concat of nothing")
        return sum(operand_widths)
    raise AssertionError(rule)  # pragma: no cover


def python_expression(op: str, operands: Sequence[str], operand_widths: Sequence[int],
                      width: int, low: int = 0) -> str:
    """Python source computing `op` over the operand expressions (each already in range)."""
    if op == "concat":
        parts = []
        shift = sum(operand_widths)
        for text, operand_width in zip(operands, operand_widths):
            shift -= operand_width
            parts.append(f"({text} << {shift})" if shift else text)
        return "(" + " | ".join(parts) + ")"
    row = OPERATORS[op]
    first_width = operand_widths[0]
    names = dict(zip("abc", operands))
    return row.template.format(**names, w=first_width, sign=1 << (first_width - 1),
                               mask=mask(width), low=low)


@lru_cache(maxsize=4096)
def _compiled(op: str, operand_widths: tuple[int, ...], width: int, low: int):
    names = [f"x{i}" for i in range(len(operand_widths))]
    source = python_expression(op, names, operand_widths, width, low)
    return eval(f"lambda {', '.join(names)}: {source}")  # noqa: S307 - our own table


def evaluate(op: str, operands: Sequence[int], operand_widths: Sequence[int],
             width: int | None = None, low: int = 0) -> int:
    """The value of `op` on these operand values (each below 2**its width).

    `width` defaults to what `result_width` derives; give it for slice, zext and sext."""
    widths = tuple(operand_widths)
    width = result_width(op, widths, width, low)
    return _compiled(op, widths, width, low)(*operands)
