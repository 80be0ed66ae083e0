"""Elaboration of HDL expressions into netlist nodes, with width checking.

`ExpressionElaborator` is the half of the elaborator that turns an `ast` expression into a
value (`qwengpu.dsl.values`): constant expressions are computed exactly at elaboration time;
everything else becomes nodes through the `NetlistBuilder`.  The width rules (docs/hdl.md,
"Widths") are enforced here, each violation an `HdlError` at the operator that broke it:

- `+ - * & | ^`, comparisons, `?:` arms and `match` values need equal widths;
- a constant takes the width of the signal it meets and must fit in it (a negative constant
  wraps to two's complement);
- a constant with nothing to take a width from is an error that asks for a type.

Statements, declarations and function calls live in `qwengpu.dsl.elaborate`, which mixes this
class in.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from qwengpu.dsl import ast
from qwengpu.dsl.builder import NetlistBuilder
from qwengpu.dsl.netlist import MemorySpec, RegisterSpec
from qwengpu.dsl.values import (ArrayValue, Const, EnumBinding, FnBinding, Scope, Signal,
                                TypeBinding, Value, WireArray)
from qwengpu.errors import HdlError, Location

ARITHMETIC = {"+": "add", "-": "sub", "*": "mul", "&": "and", "|": "or", "^": "xor"}
SHIFTS = {"<<": "shl", ">>": "shr", ">>>": "sar"}
# Comparison -> (operator, swap the operands): a > b is b < a.
COMPARISONS = {"==": ("eq", False), "!=": ("ne", False), "<": ("ult", False),
               "<=": ("ule", False), ">": ("ult", True), ">=": ("ule", True)}
SIGNED_COMPARISONS = {"slt": ("slt", False), "sle": ("sle", False), "sgt": ("slt", True),
                      "sge": ("sle", True)}
CONSTANT_OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
    ">>>": operator.rshift, "/": operator.floordiv, "%": operator.mod,
    "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b), ">=": lambda a, b: int(a >= b),
}
MAX_WIDTH = 4096
_UINT_TYPE = re.compile(r"u([0-9]+)$")


@dataclass
class PartialIndex:
    """A memory or array wire with some of its indices given: `regs[warp]` of `regs[w][l][r]`."""

    base: MemorySpec | WireArray
    indices: tuple[Const | Signal, ...]
    loc: Location

    def dimensions(self) -> int:
        if isinstance(self.base, MemorySpec):
            return len(self.base.shape)
        return len(next(iter(self.base.elements)))


def _wrap(items):
    return ArrayValue(items) if isinstance(items, list) else items


def _describe(value) -> str:
    if isinstance(value, Signal):
        return f"u{value.width}"
    if isinstance(value, Const):
        return f"constant {value.value}"
    return "an array"


class ExpressionElaborator:
    """Expressions -> values.  Expects `self.builder` and `self.scope` (see elaborate.py)."""

    builder: NetlistBuilder
    scope: Scope

    # ---- entry points used by the statement elaborator

    def expr(self, e: ast.Expr, hint: int | None = None) -> Value:
        """The value of `e`; `hint` is the width the context expects (for bare constants)."""
        value = self._reference(e, hint)
        if isinstance(value, PartialIndex):
            return self._materialize(value)
        return value

    def constant(self, e: ast.Expr, what: str) -> int:
        value = self.expr(e)
        if isinstance(value, Signal):
            constant = self.builder.constant_value(value)
            if constant is not None:
                return constant
        if not isinstance(value, Const):
            raise HdlError(f"{what} must be a constant expression, not {_describe(value)}",
                           e.loc)
        return value.value

    def signal(self, e: ast.Expr, width: int | None, what: str) -> Signal:
        """A scalar of `width` bits (any width when None; a bare constant then is an error)."""
        return self.fit(self.expr(e, width), width, e.loc, what)

    def fit(self, value: Value, width: int | None, loc: Location, what: str) -> Signal:
        """`value` as a `width`-bit signal: a constant takes the width, a signal must have it."""
        if isinstance(value, ArrayValue):
            raise HdlError(f"{what} is an array of shape {list(value.shape)}; index it", loc)
        if isinstance(value, Const):
            if width is None:
                raise HdlError(f"cannot tell the width of {what} (constant {value.value}); "
                               f"give it a type, e.g. u8({value.value})", loc)
            return self.builder.constant(self.fit_constant(value.value, width, loc, what),
                                         width, loc)
        if width is not None and value.width != width:
            raise HdlError(f"width mismatch: {what} is u{value.width}, expected u{width}", loc)
        return value

    def fit_constant(self, value: int, width: int, loc: Location, what: str) -> int:
        if not -(1 << (width - 1)) <= value < (1 << width):
            raise HdlError(f"constant {value} does not fit in u{width} ({what})", loc)
        return value & ((1 << width) - 1)

    def resolve_width(self, type_ref: ast.TypeRef) -> int:
        """The width in bits that a type names."""
        if type_ref.width is not None:
            if type_ref.name != "u":
                raise HdlError(f"only u(...) takes a width, not {type_ref.name}(...)",
                               type_ref.loc)
            width = self.constant(type_ref.width, "a width")
        else:
            width = self._named_width(type_ref.name, type_ref.loc)
            if width is None:
                raise HdlError(f"unknown type '{type_ref.name}'", type_ref.loc)
        if not 1 <= width <= MAX_WIDTH:
            raise HdlError(f"a width must be between 1 and {MAX_WIDTH}, not {width}",
                           type_ref.loc)
        return width

    def _named_width(self, name: str, loc: Location) -> int | None:
        binding = self.scope.lookup(name)
        if isinstance(binding, (TypeBinding, EnumBinding)):
            return binding.width
        if name == "bool":
            return 1
        match = _UINT_TYPE.match(name)
        if match and binding is None:
            return int(match.group(1))
        return None

    # ---- expressions

    def _reference(self, e: ast.Expr, hint: int | None):
        method = getattr(self, "_" + type(e).__name__.lower())
        return method(e, hint)

    def _number(self, e: ast.Number, hint):
        return Const(e.value)

    def _name(self, e: ast.Name, hint):
        binding = self.scope.lookup(e.name)
        if isinstance(binding, (Const, Signal, ArrayValue)):
            return binding
        if isinstance(binding, (MemorySpec, WireArray)):
            return PartialIndex(binding, (), e.loc)
        if isinstance(binding, RegisterSpec):
            return self.builder.register(binding, e.loc)
        if isinstance(binding, EnumBinding):
            raise HdlError(f"{e.name} is an enum; name one of its members, like "
                           f"{e.name}.{next(iter(binding.members), 'X')}", e.loc)
        if isinstance(binding, TypeBinding):
            raise HdlError(f"{e.name} is a type, not a value", e.loc)
        if isinstance(binding, FnBinding):
            raise HdlError(f"{e.name} is a function; call it: {e.name}(...)", e.loc)
        raise HdlError(f"unknown name '{e.name}'", e.loc)

    def _member(self, e: ast.Member, hint):
        binding = self.scope.lookup(e.base.name) if isinstance(e.base, ast.Name) else None
        if not isinstance(binding, EnumBinding):
            raise HdlError(f"only enums have members (.{e.name})", e.loc)
        if e.name not in binding.members:
            raise HdlError(f"enum {binding.name} has no member {e.name}", e.loc)
        return Const(binding.members[e.name])

    def _unary(self, e: ast.Unary, hint):
        value = self.expr(e.operand, hint if e.op != "!" else None)
        if isinstance(value, ArrayValue):
            raise HdlError(f"{e.op} of an array", e.loc)
        if isinstance(value, Const):
            return Const({"-": -value.value, "+": value.value, "~": ~value.value,
                          "!": int(value.value == 0)}[e.op])
        if e.op == "+":
            return value
        if e.op == "-":
            return self.builder.operator("neg", [value], e.loc)
        if e.op == "!" and value.width != 1:
            raise HdlError(f"! needs a 1-bit operand, not u{value.width}; "
                           f"compare with 0 instead", e.loc)
        return self.builder.operator("not", [value], e.loc)

    def _binary(self, e: ast.Binary, hint):
        is_comparison = e.op in COMPARISONS
        left = self.expr(e.left, None if is_comparison else hint)
        right = self.expr(e.right, None if is_comparison or e.op in SHIFTS else hint)
        for side in (left, right):
            if isinstance(side, ArrayValue):
                raise HdlError(f"operand of {e.op} is an array; index it", e.loc)
        if isinstance(left, Const) and isinstance(right, Const):
            return self._constant_binary(e, left.value, right.value)
        if e.op in ("/", "%"):
            raise HdlError(f"{e.op} is only for constants (the machine has no divider)", e.loc)
        if e.op in SHIFTS:
            return self._shift(e, left, right, hint)
        left, right = self.same_width(left, right, e.op, e.loc)
        if is_comparison:
            op, swap = COMPARISONS[e.op]
            return self.builder.operator(op, [right, left] if swap else [left, right], e.loc)
        return self.builder.operator(ARITHMETIC[e.op], [left, right], e.loc)

    def _constant_binary(self, e: ast.Binary, left: int, right: int) -> Const:
        if e.op in ("/", "%") and right == 0:
            raise HdlError(f"division by zero in a constant expression", e.loc)
        if e.op in SHIFTS and right < 0:
            raise HdlError(f"negative shift amount {right}", e.loc)
        if e.op == "<<" and right > MAX_WIDTH:
            raise HdlError(f"shift amount {right} is too large", e.loc)
        return Const(CONSTANT_OPERATORS[e.op](left, right))

    def _shift(self, e: ast.Binary, left, right, hint) -> Signal:
        left = self.fit(left, hint, e.left.loc, f"the left operand of {e.op}")
        if isinstance(right, Const):
            if right.value < 0:
                raise HdlError(f"negative shift amount {right.value}", e.right.loc)
            amount = min(right.value, 1 << 16)
            right = self.builder.constant(amount, max(1, amount.bit_length()), e.right.loc)
        return self.builder.operator(SHIFTS[e.op], [left, right], e.loc)

    def same_width(self, left: Value, right: Value, what: str, loc: Location):
        """Two scalars of one width: a constant takes the signal's width."""
        if isinstance(left, Const):
            left = self.fit(left, right.width, loc, f"the other operand of {what} is "
                                                    f"u{right.width}")
        elif isinstance(right, Const):
            right = self.fit(right, left.width, loc, f"the other operand of {what} is "
                                                     f"u{left.width}")
        if left.width != right.width:
            raise HdlError(f"width mismatch: u{left.width} {what} u{right.width}", loc)
        return left, right

    def _ternary(self, e: ast.Ternary, hint):
        condition = self.expr(e.condition)
        if isinstance(condition, Const):
            return self.expr(e.if_true if condition.value else e.if_false, hint)
        condition = self._condition(condition, e.condition.loc, "a ?: condition")
        arms = [self.expr(e.if_true, hint), self.expr(e.if_false, hint)]
        if_true, if_false = self._unify(arms, [e.if_true.loc, e.if_false.loc], hint, e.loc,
                                        "the arms of ?:")
        return self.builder.operator("mux", [condition, if_true, if_false], e.loc)

    def _condition(self, value: Value, loc: Location, what: str) -> Signal:
        if not isinstance(value, Signal) or value.width != 1:
            raise HdlError(f"{what} must be 1 bit, not {_describe(value)}", loc)
        return value

    def _unify(self, values: list[Value], locs: list[Location], hint: int | None,
               loc: Location, what: str) -> list[Signal]:
        """Values that must share one width: the hint's, else the first signal's."""
        width = hint
        if width is None:
            width = next((v.width for v in values if isinstance(v, Signal)), None)
        if width is None:
            if any(isinstance(v, ArrayValue) for v in values):
                raise HdlError(f"{what} are arrays; index them", loc)
            raise HdlError(f"cannot tell the width of {what} (all constants); "
                           f"give the result a type", loc)
        out = []
        for value, value_loc in zip(values, locs):
            if isinstance(value, Signal) and value.width != width:
                raise HdlError(f"width mismatch: {what} are u{width} and u{value.width}",
                               value_loc)
            out.append(self.fit(value, width, value_loc, what))
        return out

    def _match(self, e: ast.Match, hint):
        subject = self.expr(e.subject)
        defaults = [arm for arm in e.arms if not arm.patterns]
        if len(defaults) != 1:
            raise HdlError("a match needs exactly one default arm `_ => ...`"
                           if not defaults else "a match has more than one default arm",
                           (defaults[1] if defaults else e).loc)
        keys: dict[int, Location] = {}
        arm_keys = []
        for arm in e.arms:
            arm_keys.append([])
            for pattern in arm.patterns:
                key = self.constant(pattern, "a match pattern")
                if isinstance(subject, Signal):
                    key = self.fit_constant(key, subject.width, pattern.loc, "a match pattern")
                if key in keys:
                    raise HdlError(f"match pattern {key} is already covered (at {keys[key]})",
                                   pattern.loc)
                keys[key] = pattern.loc
                arm_keys[-1].append(key)
        if isinstance(subject, Const):
            for arm, arm_key_list in zip(e.arms, arm_keys):
                if subject.value in arm_key_list:
                    return self.expr(arm.value, hint)
            return self.expr(defaults[0].value, hint)
        if isinstance(subject, ArrayValue):
            raise HdlError("cannot match on an array", e.subject.loc)
        values = self._unify([self.expr(arm.value, hint) for arm in e.arms],
                             [arm.value.loc for arm in e.arms], hint, e.loc,
                             "the values of a match")
        result = values[e.arms.index(defaults[0])]
        for arm, arm_key_list, value in reversed(list(zip(e.arms, arm_keys, values))):
            if not arm_key_list:
                continue
            hits = [self.builder.operator("eq", [subject, self.builder.constant(
                key, subject.width, arm.loc)], arm.loc) for key in arm_key_list]
            hit = hits[0]
            for other in hits[1:]:
                hit = self.builder.operator("or", [hit, other], arm.loc)
            result = self.builder.operator("mux", [hit, value, result], arm.loc)
        return result

    def _concat(self, e: ast.Concat, hint):
        parts = []
        for part in e.parts:
            value = self.expr(part)
            if not isinstance(value, Signal):
                raise HdlError(f"a concatenation needs signals, not {_describe(value)}"
                               + ("; give it a width, e.g. u4(0)"
                                  if isinstance(value, Const) else ""), part.loc)
            parts.append(value)
        if len(parts) == 1:
            return parts[0]
        return self.builder.operator("concat", parts, e.loc)

    # ---- indexing and slicing

    def _index(self, e: ast.Index, hint):
        base = self._reference(e.base, None)
        index = self.expr(e.index)
        if isinstance(index, ArrayValue):
            raise HdlError("an index cannot be an array", e.index.loc)
        if isinstance(base, PartialIndex):
            base = PartialIndex(base.base, base.indices + (index,), base.loc)
            if len(base.indices) > base.dimensions():
                raise HdlError(f"{base.base.name} has {base.dimensions()} dimensions, "
                               f"not {len(base.indices)}", e.loc)
            if len(base.indices) == base.dimensions():
                return self._element(base, e.loc)
            return base
        if isinstance(base, ArrayValue):
            return _wrap(self._array_element(base.items, index, e.index.loc))
        if isinstance(base, Const):
            if not isinstance(index, Const):
                raise HdlError("a bit of a constant needs a constant index", e.index.loc)
            return Const((base.value >> index.value) & 1)
        if isinstance(index, Const):
            if not 0 <= index.value < base.width:
                raise HdlError(f"bit {index.value} is outside u{base.width}", e.index.loc)
            return self.builder.operator("slice", [base], e.loc, width=1, low=index.value)
        shifted = self.builder.operator("shr", [base, index], e.loc)
        return self.builder.operator("slice", [shifted], e.loc, width=1, low=0)

    def _slice(self, e: ast.Slice, hint):
        base = self.expr(e.base)
        high = self.constant(e.high, "the high bit of a slice")
        low = self.constant(e.low, "the low bit of a slice")
        if isinstance(base, Const):
            return Const((base.value >> low) & ((1 << (high - low + 1)) - 1))
        if not isinstance(base, Signal):
            raise HdlError("only a scalar can be sliced", e.loc)
        if not 0 <= low <= high < base.width:
            raise HdlError(f"slice [{high}:{low}] is outside u{base.width}", e.loc)
        if low == 0 and high == base.width - 1:
            return base
        return self.builder.operator("slice", [base], e.loc, width=high - low + 1, low=low)

    def _element(self, ref: PartialIndex, loc: Location) -> Signal:
        """A fully indexed memory (a read) or array wire (an element, or a dynamic pick)."""
        if isinstance(ref.base, MemorySpec):
            index = [self._memory_index(ref.base, d, i, loc) for d, i in enumerate(ref.indices)]
            return self.builder.read(ref.base, index, loc)
        if all(isinstance(i, Const) for i in ref.indices):
            key = tuple(i.value for i in ref.indices)
            if key not in ref.base.elements:
                raise HdlError(f"{ref.base.name}{''.join(f'[{k}]' for k in key)} is not "
                               f"defined (yet)", loc)
            return ref.base.elements[key]
        items = ref.base.as_value(loc).items
        for index in ref.indices:
            items = self._array_element(items, index, loc)
        return _wrap(items)

    def _memory_index(self, memory: MemorySpec, dim: int, index, loc: Location) -> Signal:
        size = memory.shape[dim]
        if isinstance(index, Const):
            if not 0 <= index.value < size:
                raise HdlError(f"index {index.value} is out of range for {memory.name} "
                               f"(dimension {dim} has {size} elements)", loc)
            return self.builder.constant(index.value, max(1, (size - 1).bit_length()), loc)
        return index

    def _materialize(self, ref: PartialIndex) -> ArrayValue:
        """A partly indexed memory or array wire as an array of its remaining elements."""
        if isinstance(ref.base, WireArray):
            items = ref.base.as_value(ref.loc).items
            for index in ref.indices:
                items = self._array_element(items, index, ref.loc)
            return _wrap(items)
        shape = ref.base.shape[len(ref.indices):]

        def build(prefix: tuple):
            if len(prefix) == len(shape):
                return self._element(PartialIndex(ref.base, ref.indices + prefix, ref.loc),
                                     ref.loc)
            return [build(prefix + (Const(i),)) for i in range(shape[len(prefix)])]

        return ArrayValue(build(()))

    def _array_element(self, items: list, index, loc: Location):
        """items[index] as nested lists (or one signal)."""
        if isinstance(index, Const):
            if not 0 <= index.value < len(items):
                raise HdlError(f"index {index.value} is out of range (the array has "
                               f"{len(items)} elements)", loc)
            return items[index.value]
        return self._pick(items, index, loc)

    def _pick(self, items: list, index: Signal, loc: Location):
        """items[index] for a signal index: a chain of muxes (0 when out of range)."""
        if isinstance(items[0], list):
            return [self._pick([item[k] for item in items], index, loc)
                    for k in range(len(items[0]))]
        count = len(items)
        if (1 << index.width) > count:
            result, rest = self.builder.constant(0, items[0].width, loc), items
        else:
            result, rest = items[-1], items[:-1]
        for position in reversed(range(len(rest))):
            hit = self.builder.operator(
                "eq", [index, self.builder.constant(position, index.width, loc)], loc)
            result = self.builder.operator("mux", [hit, rest[position], result], loc)
        return result

    # ---- calls

    def _call(self, e: ast.Call, hint):
        builtin = getattr(self, "_builtin_" + e.name, None)
        binding = self.scope.lookup(e.name)
        if isinstance(binding, FnBinding):
            return self.call_function(binding.decl, e)
        if builtin is not None and binding is None:
            return builtin(e)
        width = self._named_width(e.name, e.loc)
        if width is not None:
            self._arity(e, 1)
            value = self.constant(e.args[0], f"the argument of {e.name}(...)")
            return self.builder.constant(self.fit_constant(value, width, e.loc, e.name),
                                         width, e.loc)
        raise HdlError(f"unknown function '{e.name}'", e.loc)

    def call_function(self, decl: ast.FnDecl, call: ast.Call) -> Value:
        raise NotImplementedError  # provided by the statement elaborator

    def _arity(self, e: ast.Call, count: int) -> None:
        if len(e.args) != count:
            raise HdlError(f"{e.name} takes {count} argument{'s' if count != 1 else ''}, "
                           f"got {len(e.args)}", e.loc)

    def _extend(self, e: ast.Call, op: str):
        self._arity(e, 2)
        value = self.expr(e.args[0])
        if not isinstance(value, Signal):
            raise HdlError(f"{e.name} needs a signal, not {_describe(value)}", e.args[0].loc)
        width = self.constant(e.args[1], f"the width of {e.name}")
        if width < value.width:
            raise HdlError(f"{e.name} to {width} bits would drop bits of a u{value.width}; "
                           f"slice it instead", e.loc)
        if width == value.width:
            return value
        return self.builder.operator(op, [value], e.loc, width=width)

    def _builtin_zext(self, e: ast.Call):
        return self._extend(e, "zext")

    def _builtin_sext(self, e: ast.Call):
        return self._extend(e, "sext")

    def _builtin_pack(self, e: ast.Call):
        self._arity(e, 1)
        value = self.expr(e.args[0])
        if not isinstance(value, ArrayValue) or len(value.shape) != 1:
            raise HdlError(f"pack needs a one-dimensional array, not {_describe(value)}",
                           e.args[0].loc)
        elements = value.items
        if len(elements) == 1:
            return elements[0]
        return self.builder.operator("concat", list(reversed(elements)), e.loc)

    def _builtin_clog2(self, e: ast.Call):
        self._arity(e, 1)
        value = self.constant(e.args[0], "the argument of clog2")
        if value < 1:
            raise HdlError(f"clog2 needs a positive number, not {value}", e.loc)
        return Const((value - 1).bit_length())

    def _signed_comparison(self, e: ast.Call):
        self._arity(e, 2)
        left, right = (self.expr(a) for a in e.args)
        if isinstance(left, Const) and isinstance(right, Const):
            raise HdlError(f"{e.name} needs a signal to know the width", e.loc)
        left, right = self.same_width(left, right, e.name, e.loc)
        op, swap = SIGNED_COMPARISONS[e.name]
        return self.builder.operator(op, [right, left] if swap else [left, right], e.loc)

    _builtin_slt = _builtin_sle = _builtin_sgt = _builtin_sge = _signed_comparison

    def _min_max(self, e: ast.Call, hint):
        self._arity(e, 2)
        left, right = (self.expr(a, hint) for a in e.args)
        if isinstance(left, Const) and isinstance(right, Const):
            pick = min if e.name == "min" else max
            return Const(pick(left.value, right.value))
        left, right = self.same_width(left, right, e.name, e.loc)
        less = self.builder.operator("ult", [left, right], e.loc)
        if e.name == "min":
            return self.builder.operator("mux", [less, left, right], e.loc)
        return self.builder.operator("mux", [less, right, left], e.loc)

    def _builtin_min(self, e: ast.Call):
        return self._min_max(e, None)

    _builtin_max = _builtin_min


BUILTINS = sorted(name[len("_builtin_"):] for name in dir(ExpressionElaborator)
                  if name.startswith("_builtin_"))
