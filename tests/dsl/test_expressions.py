"""`ExpressionElaborator` (qwengpu/dsl/expressions.py) on its own, with a scope of a few
registers: constant expressions computed exactly, constants fitted to widths (negative ones
wrap), signal expressions whose nodes, run by the reference interpreter, give what Python
computes from the operators' definitions, the width rules, type widths and the builtins."""

from __future__ import annotations

import random

import pytest

from qwengpu.dsl.builder import NetlistBuilder
from qwengpu.dsl.expressions import BUILTINS, ExpressionElaborator
from qwengpu.dsl.interp import Simulator
from qwengpu.dsl.netlist import Design, RecordField, RegisterSpec
from qwengpu.dsl.parser import parse
from qwengpu.dsl.values import Const, Scope, Signal
from qwengpu.errors import HdlError, Location

REGISTERS = {"a": 8, "b": 8, "s": 2}


class Expressions(ExpressionElaborator):
    """The expression half of the elaborator over registers a, b : u8 and s : u2."""

    def __init__(self):
        self.design = Design("t", "t.hdl")
        self.builder = NetlistBuilder(self.design)
        self.scope = Scope(None, "global")
        for name, width in REGISTERS.items():
            self.design.registers[name] = RegisterSpec(name, width)
            self.scope.define(name, self.design.registers[name], Location("t.hdl", 1, 1))

    def of(self, text: str, hint: int | None = None):
        return self.expr(parse(f"machine t;\nconst X = {text};\n", "t.hdl").items[1].value,
                         hint)


@pytest.mark.parametrize("text, value", [
    ("3 + 4 * 2", 11), ("-5", -5), ("7 / 2", 3), ("7 % 4", 3), ("1 << 40", 1 << 40),
    ("6 >> 1", 3), ("~0", -1), ("!3", 0), ("(1 == 1) ? 9 : 8", 9), ("2 >= 3", 0),
    ("clog2(9)", 4), ("clog2(8)", 3), ("min(3, 5)", 3), ("max(3, 5)", 5),
    ("0x12[4]", 1), ("0xF0[7:4]", 15), ("match 2 { 1 => 10, 2 | 3 => 20, _ => 30 }", 20),
])
def test_constant_expressions_are_exact(text, value):
    assert Expressions().of(text) == Const(value)


def test_a_constant_takes_the_width_it_meets_and_must_fit():
    expressions = Expressions()
    for value, width, fitted in [(-1, 8, 255), (255, 8, 255), (-128, 8, 128), (3, 2, 3)]:
        signal = expressions.fit(Const(value), width, Location("t.hdl"), "x")
        assert expressions.builder.constant_value(signal) == fitted and signal.width == width
    for value in (256, -129):
        with pytest.raises(HdlError, match=f"constant {value} does not fit in u8 \\(x\\)"):
            expressions.fit(Const(value), 8, Location("t.hdl"), "x")
    with pytest.raises(HdlError, match="cannot tell the width of x"):
        expressions.fit(Const(1), None, Location("t.hdl"), "x")


def signed(value: int, width: int) -> int:
    return value - (1 << width) if value >> (width - 1) & 1 else value


# Each expression with its meaning written from the operators' definitions.
SIGNAL_EXPRESSIONS = [
    ("a + b * 3", lambda a, b, s: (a + 3 * b) % 256),
    ("a - 1", lambda a, b, s: (a - 1) % 256),
    ("-a", lambda a, b, s: -a % 256),
    ("a >>> 2", lambda a, b, s: (signed(a, 8) >> 2) % 256),
    ("a << s", lambda a, b, s: (a << s) % 256),
    ("a > b ? a : b", lambda a, b, s: max(a, b)),
    ("min(a, b)", lambda a, b, s: min(a, b)),
    ("{a[3:0], b[7:4]}", lambda a, b, s: (a % 16) * 16 + b // 16),
    ("slt(a, b)", lambda a, b, s: int(signed(a, 8) < signed(b, 8))),
    ("sge(a, -1)", lambda a, b, s: int(signed(a, 8) >= -1)),
    ("a[s]", lambda a, b, s: a >> s & 1),
    ("sext(a[3:0], 8)", lambda a, b, s: signed(a % 16, 4) % 256),
    ("a == 200", lambda a, b, s: int(a == 200)),
    ("match s { 0 | 1 => a, 2 => b, _ => 7 }", lambda a, b, s: a if s < 2 else b if s == 2
     else 7),
]


@pytest.mark.parametrize("text, meaning", SIGNAL_EXPRESSIONS,
                         ids=[text for text, _ in SIGNAL_EXPRESSIONS])
def test_signal_expressions_compute_what_their_operators_mean(text, meaning):
    expressions = Expressions()
    out = expressions.of(text, 8 if "match" in text else None)
    assert isinstance(out, Signal)
    expressions.design.record.append(RecordField("out", out.node, out.width))
    simulator = Simulator(expressions.design)
    rng = random.Random(text)
    for _ in range(60):
        values = {"a": rng.getrandbits(8), "b": rng.getrandbits(8), "s": rng.getrandbits(2)}
        for name, value in values.items():
            simulator.set_register(name, value)
        assert simulator.step() == {"out": meaning(**values)}, values


def test_greater_than_is_less_than_with_the_operands_swapped():
    expressions = Expressions()
    out = expressions.of("a > b")
    node = expressions.design.nodes[out.node]
    a, b = (expressions.builder.register(expressions.design.registers[n], None).node
            for n in "ab")
    assert (node.op, node.args, out.width) == ("ult", (b, a), 1)


@pytest.mark.parametrize("text, message", [
    ("a + s", r"width mismatch: u8 \+ u2"),
    ("a / b", "/ is only for constants"),
    ("!a", "! needs a 1-bit operand, not u8"),
    ("a[8]", "bit 8 is outside u8"),
    ("a[9:4]", r"slice \[9:4\] is outside u8"),
    ("a + 300", "constant 300 does not fit in u8"),
    ("1 / 0", "division by zero"),
])
def test_width_rules_and_constant_errors(text, message):
    with pytest.raises(HdlError, match=message) as caught:
        Expressions().of(text)
    assert caught.value.loc.file == "t.hdl" and caught.value.loc.line == 2


@pytest.mark.parametrize("type_text, width", [("u(3 + 1)", 4), ("bool", 1), ("u12", 12)])
def test_resolve_width(type_text, width):
    type_ref = parse(f"machine t;\nregister r : {type_text};\n", "t.hdl").items[1].type
    assert Expressions().resolve_width(type_ref) == width


@pytest.mark.parametrize("type_text, message", [
    ("u(0)", "a width must be between 1 and 4096, not 0"), ("word", "unknown type 'word'")])
def test_resolve_width_refuses(type_text, message):
    type_ref = parse(f"machine t;\nregister r : {type_text};\n", "t.hdl").items[1].type
    with pytest.raises(HdlError, match=message):
        Expressions().resolve_width(type_ref)


def test_builtins():
    assert BUILTINS == ["clog2", "max", "min", "pack", "sext", "sge", "sgt", "sle", "slt",
                        "zext"]
