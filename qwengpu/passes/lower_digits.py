"""`lower-digits`: word operations become circuits of digit-level primitives.

Every value wider than 4 bits becomes its digits: 4-bit slots from the least significant up,
the last one partial (a 7-bit PC is a hex digit and a 3-bit digit).  A digit node may be
narrower than its slot (its high bits are then 0), which lets `zext` and constants cost
nothing.  Each word operator becomes `lut`/`sum`/`carry`/`select` nodes (qwengpu.passes.
digits), built through `DigitBuilder` so constants, identities and one-input functions are
folded as they are made:

- slices, concatenations, extensions and shifts by constants move bits: a result digit made
  of one whole source digit *is* that digit; otherwise one `sum` gathers its bits;
- bitwise and/or/xor: one two-input `lut` per digit; not: a one-input `sum` per digit;
- add/sub/neg: carry-lookahead.  Per digit a `sum` classifies `a + b` (or `a + ~b`) as
  generate/propagate/kill, a `carry` per digit gathers the classes below it, and a `sum`
  adds `a + b + carry` modulo 16: three levels, whatever the width;
- comparisons: the same classes on `a - b` (sign bits flipped for signed ones) and one
  `carry` for `<`/`<=`; equality is a `sum` per digit and one `sum` over those;
- shifts by a variable amount: a `sum` turns the amount's digits into a digit offset `q`
  (or "all out") and a bit offset `r`; a `select` per digit shifts by `4q`, another by `r`;
- multiply: `a * b = sum_k 16^k Q_k` with analog column sums `Q_k` (`mul_column`, one
  gated unit per bit of `a` and column), split as `gadgets/multiply.py` does but with
  one-hot carries: `D_k = Q_k // 16` as two digits (`sum`s with a step per 16),
  `S_k = Q_k - 16 D_k + D_(k-1)` (at most 15 + 29 for 32-bit words; a linear form the next
  `sum`s read, never a value), `h_k = S_k // 16` in {0, 1, 2}, and the adder above on the
  columns `S_k - 16 h_k + h_(k-1)` (at most 17): six levels;
- mux: a `select` per digit; state reads and registers: one port node per digit; sinks
  take the digits as arguments (`groups`).
"""

from __future__ import annotations

from qwengpu.dsl.semantics import mask
from qwengpu.ir.digit_build import Bit, DigitBuilder
from qwengpu.ir.digits import DIGIT_BITS, GENERATE, KILL, PROPAGATE
from qwengpu.ir import SINK_OPS, Graph, IrNode, keep_origin
from qwengpu.passes.registry import register


def slot_widths(width: int) -> list[int]:
    """The widths of a `width`-bit value's digit slots, least significant first."""
    full, rest = divmod(width, DIGIT_BITS)
    return [DIGIT_BITS] * full + ([rest] if rest else [])


class Lowering:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.build = DigitBuilder(graph)
        self.digits: dict[int, list[int]] = {}

    # ---- values as digits and bits ---------------------------------------------------------

    def bits(self, node_id: int) -> list[Bit]:
        out: list[Bit] = []
        for digit, slot in zip(self.digits[node_id], slot_widths(self.graph.node(node_id).width)):
            value = self.graph.const_value(digit)
            digit_width = self.graph.node(digit).width
            for bit in range(slot):
                if value is not None:
                    out.append((value >> bit) & 1)
                elif bit >= digit_width:
                    out.append(0)
                else:
                    out.append((digit, bit))
        return out

    def from_bits(self, bits: list[Bit]) -> list[int]:
        out, position, digit = [], 0, self.build.origin.get("digit")
        for k, slot in enumerate(slot_widths(len(bits))):
            self.at_digit(k)
            out.append(self.build.gather(bits[position:position + slot]))
            position += slot
        self.at_digit(digit)
        return out

    # ---- one word node ---------------------------------------------------------------------

    def lower(self, node_id: int, node: IrNode) -> None:
        self.build.origin = {"stage": node.stage, "loc": node.loc, "loop": node.loop,
                             "digit": None}
        first_new = self.graph.next_id
        method = getattr(self, "op_" + node.op)
        digits = method(node_id, node)
        assert len(digits) == len(slot_widths(node.width)), (node.op, digits)
        self.digits[node_id] = digits
        # a named wire's digits are `name.dK`; the new digits of a word of several know K
        several = len(digits) > 1
        for k, digit in enumerate(digits):
            if digit < first_new or self.graph.node(digit).name is not None:
                continue
            named = {"name": node.name + (f".d{k}" if several else "")} if node.name else {}
            self.graph.update(digit, digit=k if several else None, **named)

    def at_digit(self, k: int | None) -> None:
        """The nodes made from here on work on digit `k` of the word being lowered (a
        carry into it, its generate/propagate class): what names them (`IrNode.digit`)."""
        self.build.origin = {**self.build.origin, "digit": k}

    def arg_digits(self, node: IrNode, index: int) -> list[int]:
        return self.digits[node.args[index]]

    def op_const(self, node_id, node):
        return [self.build.const((node.value >> (DIGIT_BITS * k)) & mask(slot), slot)
                for k, slot in enumerate(slot_widths(node.width))]

    def op_register(self, node_id, node):
        if node.width <= DIGIT_BITS:
            return [node_id]
        return [self.graph.add("register", slot, state=node.state, low=DIGIT_BITS * k,
                               **keep_origin(node))
                for k, slot in enumerate(slot_widths(node.width))]

    def op_field_input(self, node_id, node):
        if node.width <= DIGIT_BITS:
            return [node_id]
        return [self.graph.add("field_input", slot, state=node.state, low=DIGIT_BITS * k,
                               **keep_origin(node))
                for k, slot in enumerate(slot_widths(node.width))]

    def op_next_lane(self, node_id, node):
        if node.width > DIGIT_BITS:
            raise NotImplementedError(f"next_lane of u{node.width} (at most 16 lanes)")
        return [node_id]

    def op_read(self, node_id, node):
        index = [self.digits[a] for a in node.args]
        args = tuple(d for digits in index for d in digits)
        groups = tuple(len(digits) for digits in index)
        return [self.graph.add("read", slot, args, state=node.state, low=DIGIT_BITS * k,
                               groups=groups, **keep_origin(node))
                for k, slot in enumerate(slot_widths(node.width))]

    # bit movement

    def op_slice(self, node_id, node):
        return self.from_bits(self.bits(node.args[0])[node.low:node.low + node.width])

    def op_concat(self, node_id, node):
        bits: list[Bit] = []
        for arg in reversed(node.args):
            bits += self.bits(arg)
        return self.from_bits(bits)

    def op_zext(self, node_id, node):
        bits = self.bits(node.args[0])
        return self.from_bits(bits + [0] * (node.width - len(bits)))

    def op_sext(self, node_id, node):
        bits = self.bits(node.args[0])
        return self.from_bits(bits + [bits[-1]] * (node.width - len(bits)))

    # bitwise

    def _bitwise(self, node, fn, label):
        a, b = self.arg_digits(node, 0), self.arg_digits(node, 1)
        if node.width == 1:
            # One bit: a threshold on x + y, which later merges with neighbouring ones.
            return [self.build.sum([(a[0], _identity), (b[0], _identity)],
                                   lambda s: fn(s & 1, s >> 1) if s < 2 else fn(1, 1), 1, label)]
        return [self.build.lut([x, y], fn, slot, label)
                for x, y, slot in zip(a, b, slot_widths(node.width))]

    def op_and(self, node_id, node):
        return self._bitwise(node, lambda x, y: x & y, "and")

    def op_or(self, node_id, node):
        return self._bitwise(node, lambda x, y: x | y, "or")

    def op_xor(self, node_id, node):
        return self._bitwise(node, lambda x, y: x ^ y, "xor")

    def op_not(self, node_id, node):
        return [self.build.sum([(x, lambda v, m=mask(slot): v ^ m)], lambda s: s, slot, "not")
                for x, slot in zip(self.arg_digits(node, 0), slot_widths(node.width))]

    def op_mux(self, node_id, node):
        (condition,) = self.arg_digits(node, 0)
        then, otherwise = self.arg_digits(node, 1), self.arg_digits(node, 2)
        return [self.build.select(condition, [e, t], slot, "mux")
                for t, e, slot in zip(then, otherwise, slot_widths(node.width))]

    # arithmetic

    def add_columns(self, columns: list[list[tuple[int, object]]], carry_in: int,
                    width: int, label: str,
                    bounds: list[tuple[int, int]] | None = None) -> list[int]:
        """Digits of the sum of the column terms (each (node, map)) plus `carry_in`.

        Every column but the last must total at most 31, so that its carry out is 0 or 1.
        `bounds` are the totals each column really reaches (without the carry), when its terms
        are not independent (a multiplier's `S_k - 16 h_k`): the tables are constant outside
        them, so the steps are only those at reachable totals."""
        slots = slot_widths(width)
        classes, out = [], []
        for k, (terms, slot) in enumerate(zip(columns, slots)):
            self.at_digit(k)
            low, high = bounds[k] if bounds else (None, None)
            carry = carry_in if k == 0 else self.build.carry(carry_in, classes, label + ".carry")
            out.append(self.build.sum(terms + [(carry, lambda v: v)],
                                      lambda s, m=mask(slot), lo=low, hi=high:
                                      _clamp(s, lo, None if hi is None else hi + 1) & m,
                                      slot, label + ".sum"))
            if k + 1 < len(slots):
                classes.append(self.build.sum(terms, lambda s, lo=low, hi=high:
                                              _classify_sum(_clamp(s, lo, hi)),
                                              2, label + ".gp"))
        self.at_digit(None)
        return out

    def op_add(self, node_id, node):
        a, b = self.arg_digits(node, 0), self.arg_digits(node, 1)
        columns = [[(x, _identity), (y, _identity)] for x, y in zip(a, b)]
        return self.add_columns(columns, self.build.const(0, 1), node.width, "add")

    def op_sub(self, node_id, node):
        a, b = self.arg_digits(node, 0), self.arg_digits(node, 1)
        columns = [[(x, _identity), (y, lambda v, m=mask(slot): m - v)]
                   for x, y, slot in zip(a, b, slot_widths(node.width))]
        return self.add_columns(columns, self.build.const(1, 1), node.width, "sub")

    def op_neg(self, node_id, node):
        columns = [[(y, lambda v, m=mask(slot): m - v)]
                   for y, slot in zip(self.arg_digits(node, 0), slot_widths(node.width))]
        return self.add_columns(columns, self.build.const(1, 1), node.width, "neg")

    def op_mul(self, node_id, node):
        """Analog column sums, their one-hot carries and splits, then the adder (module doc)."""
        a, b = self.arg_digits(node, 0), self.arg_digits(node, 1)
        constants = [self.graph.const_value(d) for d in a + b]
        if all(c is not None for c in constants):
            product = _word(constants[:len(a)]) * _word(constants[len(a):])
            return self.op_const(node_id, IrNode("const", node.width,
                                                 value=product & mask(node.width)))
        a, b = _trim_zero_digits(self.graph, a), _trim_zero_digits(self.graph, b)
        count = len(slot_widths(node.width))
        q, d = [], []
        for k in range(count):
            self.at_digit(k)
            q.append(self.build.mul_column(a, b, k))
        for k in range(count):
            self.at_digit(k)
            # D_k = Q_k // 16 as digits (one-hot: a step's error never meets the factor 16)
            d.append([self._analog_digit(q[k], lambda v: (v >> 4) & 15, "mul.carries"),
                      self._analog_digit(q[k], lambda v: v >> 8, "mul.carries")])
        columns, bounds, h = [], [], []
        for k in range(count):
            self.at_digit(k)
            # S_k = Q_k - 16 D_k + D_(k-1) (at most 15 + 29 for 32-bit words), h_k = S_k // 16
            s_terms = self._analog_terms(q[k]) + [(d[k][0], lambda v: -16 * v),
                                                  (d[k][1], lambda v: -256 * v)]
            s_high = 15
            if k:
                s_terms += [(d[k - 1][0], _identity), (d[k - 1][1], lambda v: 16 * v)]
                s_high += self._analog_max(q[k - 1]) // 16
            h.append(self.build.sum(s_terms, lambda t, hi=s_high: _clamp(t, 0, hi) // 16,
                                    (s_high // 16).bit_length() or 1, "mul.split"))
            columns.append(s_terms + [(h[k], lambda v: -16 * v)] +
                           ([(h[k - 1], _identity)] if k else []))
            bounds.append((0, 15 + (max(self.graph.domain(h[k - 1])) if k else 0)))
        return self.add_columns(columns, self.build.const(0, 1), node.width, "mul", bounds)

    def _analog_digit(self, value, fn, label: str) -> int:
        """A one-hot digit `fn(v)` of an analog value `(node or None, constant)`."""
        node_id, constant = value
        if node_id is None:
            return self.build.const(fn(constant), DIGIT_BITS)
        return self.build.sum([(node_id, _identity)], lambda t: fn(t + constant),
                              DIGIT_BITS, label)

    def _analog_terms(self, value) -> list[tuple[int, object]]:
        """An analog value `(node or None, constant)` as terms of a `sum`."""
        node_id, constant = value
        if node_id is None:
            return [(self.build.const(0, 1), lambda v, c=constant: c)]
        return [(node_id, lambda v: v + constant)]

    def _analog_max(self, value) -> int:
        node_id, constant = value
        return constant + (max(self.graph.domain(node_id)) if node_id is not None else 0)

    # comparisons

    def _equal(self, node):
        digits = []
        for k, (x, y) in enumerate(zip(self.arg_digits(node, 0), self.arg_digits(node, 1))):
            self.at_digit(k)
            digits.append(self.build.sum([(x, _identity), (y, _negate)],
                                         lambda s: int(s == 0), 1, "eq.digit"))
        self.at_digit(None)
        return self.build.sum([(d, _identity) for d in digits],
                              lambda s, n=len(digits): int(s == n), 1, "eq")

    def op_eq(self, node_id, node):
        return [self._equal(node)]

    def op_ne(self, node_id, node):
        return [self.build.sum([(self._equal(node), _identity)], lambda s: 1 - s, 1, "ne")]

    def _less(self, node, or_equal: bool, signed: bool):
        a, b = self.arg_digits(node, 0), self.arg_digits(node, 1)
        slots = slot_widths(self.graph.node(node.args[0]).width)
        classes = []
        for k, (x, y, slot) in enumerate(zip(a, b, slots)):
            self.at_digit(k)
            flip = 1 << (slot - 1) if signed and k == len(slots) - 1 else 0
            classes.append(self.build.sum([(x, lambda v, f=flip: v ^ f),
                                           (y, lambda v, f=flip: -(v ^ f))],
                                          _classify_difference, 2, "cmp.gp"))
        self.at_digit(None)
        return [self.build.carry(self.build.const(int(or_equal), 1), classes, "cmp")]

    def op_ult(self, node_id, node):
        return self._less(node, False, False)

    def op_ule(self, node_id, node):
        return self._less(node, True, False)

    def op_slt(self, node_id, node):
        return self._less(node, False, True)

    def op_sle(self, node_id, node):
        return self._less(node, True, True)

    # shifts

    def _shifted_bits(self, op: str, bits: list[Bit], amount: int, fill: Bit) -> list[Bit]:
        width = len(bits)
        amount = min(amount, width)
        if op == "shl":
            return [0] * amount + bits[:width - amount]
        return bits[amount:] + [fill] * amount

    def _shift(self, node):
        bits = self.bits(node.args[0])
        fill = bits[-1] if node.op == "sar" else 0
        amount = self.graph.node(node.args[1])
        if amount.op == "const":
            return self.from_bits(self._shifted_bits(node.op, bits, amount.value, fill))
        width = node.width
        last_q = (width - 1) // DIGIT_BITS
        if last_q + 2 > 16:
            raise NotImplementedError(f"variable shift of a u{width} value (at most u60)")
        terms = [(d, lambda v, k=k: min(v << (DIGIT_BITS * k), width))
                 for k, d in enumerate(self.digits[node.args[1]])]
        q_select = self.build.sum(terms, lambda s: s >> 2 if s < width else last_q + 1,
                                  (last_q + 1).bit_length(), "shift.q")
        r_select = self.build.sum(terms, lambda s: s & 3 if s < width else 0, 2, "shift.r")
        slots = slot_widths(width)
        by_digits = [self.from_bits(self._shifted_bits(node.op, bits, 4 * q, fill))
                     for q in range(last_q + 1)] + [self.from_bits([fill] * width)]
        middle = []
        for k, slot in enumerate(slots):
            self.at_digit(k)
            middle.append(self.build.select(q_select, [option[k] for option in by_digits], slot,
                                            "shift.digits"))
        self.at_digit(None)
        middle_bits: list[Bit] = []
        for digit, slot in zip(middle, slots):
            middle_bits += self._digit_bits(digit, slot)
        by_bits = [self.from_bits(self._shifted_bits(node.op, middle_bits, r, fill))
                   for r in range(4)]
        return [self.build.select(r_select, [option[k] for option in by_bits], slot,
                                  "shift.bits") for k, slot in enumerate(slots)]

    def _digit_bits(self, digit: int, slot: int) -> list[Bit]:
        value = self.graph.const_value(digit)
        width = self.graph.node(digit).width
        if value is not None:
            return [(value >> b) & 1 for b in range(slot)]
        return [(digit, b) if b < width else 0 for b in range(slot)]

    def op_shl(self, node_id, node):
        return self._shift(node)

    def op_shr(self, node_id, node):
        return self._shift(node)

    def op_sar(self, node_id, node):
        return self._shift(node)

    # sinks

    def lower_sink(self, node_id: int, node: IrNode) -> None:
        operands = [self.digits[a] for a in node.args]
        self.graph.update(node_id, args=tuple(d for digits in operands for d in digits),
                          groups=tuple(len(digits) for digits in operands))


def _identity(v: int) -> int:
    return v


def _clamp(value: int, low: int | None, high: int | None) -> int:
    """`value` held inside `[low, high]` (a bound of None is open)."""
    if low is not None and value < low:
        return low
    if high is not None and value > high:
        return high
    return value


def _word(digits: list[int]) -> int:
    return sum(d << (DIGIT_BITS * p) for p, d in enumerate(digits))


def _trim_zero_digits(graph: Graph, digits: list[int]) -> list[int]:
    """The digits without the constant-0 ones on top (a `zext`'s), at least one."""
    out = list(digits)
    while len(out) > 1 and graph.const_value(out[-1]) == 0:
        out.pop()
    return out


def _negate(v: int) -> int:
    return -v


def _classify_sum(total: int) -> int:
    """Generate/propagate/kill of a digit position from `a + b` (at most 31)."""
    return GENERATE if total >= 16 else PROPAGATE if total == 15 else KILL


def _classify_difference(difference: int) -> int:
    """For `a < b`: the digit decides `a < b` (generate), `a > b` (kill), or defers."""
    return GENERATE if difference < 0 else PROPAGATE if difference == 0 else KILL


@register("lower-digits", "lower word operations into digit-level lut/sum/carry/select circuits")
def lower_digits(graph: Graph) -> int:
    if graph.level == "digit":
        return 0
    lowering = Lowering(graph)
    word_nodes = []
    for node_id in graph.order():
        node = graph.node(node_id)
        if node.op in SINK_OPS:
            lowering.lower_sink(node_id, node)
        else:
            lowering.lower(node_id, node)
            word_nodes.append(node_id)
    for node_id in reversed(word_nodes):
        if not graph.users(node_id) and lowering.digits[node_id] != [node_id]:
            graph.remove(node_id)
    graph.level = "digit"
    return len(word_nodes)
