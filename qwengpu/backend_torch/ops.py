"""The plan's data: residual values, the operations that compute them, and the plan itself.

A `Plan` (built by `plan.build_plan`) lists `Value`s (residual groups: one-hot, binary or
analog) and `Op`s, each an operation of one pass of the compiled model with typed work:

- MLP work: `DigitWork` (a digit operator of the graph), `SharedLuts`, `Function` (a table
  of any function of its operands), `Choose` (an operand per selector value);
- mixer work: `ScratchWork` (the record and staging scratch), `MemoryWork` (a replica of a
  store).

Operands are `("v", value name)` or `("c", constant)`.  `schedule.py` places the ops,
`emit.py` writes their weights, `verify.verify_plan` checks a plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Union

from qwengpu.backend_torch.residual import ANALOG, BINARY, ONEHOT, Group
from qwengpu.errors import Location
from qwengpu.ir import Graph, IrNode
from qwengpu.trace.protocol import TraceProtocol

HEAD_DIM = 128
# A binary plan's embedding holds this one dim at a large constant (`encodings.py`): it
# dominates every sublayer's RMS, so values that are not clean on some token barely move
# the scale every read is folded with.
NORM_ANCHOR = "norm.anchor"
# One hot entry on every token (`<bos>`'s flag and its complement): its dims sum to exactly 1,
# the offset of every restoring step (`emit.step`).
CONSTANT_GROUP = "tok.bos"
# Analog column sums of a multiplier hold the number times this (small enough that their
# squares do not move the norm ledger).
ANALOG_SCALE = 2.0 ** -16
MODE_OTHER, MODE_CLOSE, MODE_BOS, MODE_COMMIT = 0, 1, 2, 3


@dataclass
class Value:
    name: str
    size: int                          # residual dims (one-hot: the number of values)
    domain: tuple[int, ...]
    loc: Location | None = None
    analog_scale: float | None = None   # analog: one dim holding `value * analog_scale`
    encoding: str = ONEHOT              # or BINARY (`encodings.choose_encodings`)
    count: int = 0                      # how many values (0: `size`)

    def make_binary(self, bits: int) -> None:
        self.count, self.size, self.encoding = self.size, bits, BINARY

    @property
    def values(self) -> int:
        return self.count or self.size

    @property
    def hot_entries(self) -> float:
        """What this value adds to the norm ledger's sum of squares: 1 for a one-hot group,
        one per dim for a binary one, 0 for an analog dim (except the norm anchor's)."""
        if self.name == NORM_ANCHOR:
            return self.analog_scale ** 2
        if self.analog_scale is not None:
            return 0
        return self.size if self.encoding == BINARY else 1

    def group(self, start: int) -> Group:
        """Its residual group from dim `start`."""
        if self.analog_scale is not None:
            return Group(self.name, start, 1, self.analog_scale, ANALOG)
        if self.encoding == BINARY:
            return Group(self.name, start, self.size, kind=BINARY, values=self.count)
        return Group(self.name, start, self.size)


# An operand: ("v", value name) or ("c", constant).
Operand = tuple


@dataclass(frozen=True)
class DigitWork:
    """A digit operator of the graph (`qwengpu.ir.digits.DIGIT_OPS`: sum, carry, select,
    priority, lut, mul_column, ...) on its operands."""
    operator: str
    node: IrNode
    operands: tuple[Operand, ...]

    @property
    def label(self) -> str:
        return self.operator


@dataclass(frozen=True)
class SharedLuts:
    """Several `lut`s of one region over the same operands, as one op (`nodes`: the luts,
    each writing its own output)."""
    operands: tuple[Operand, ...]
    nodes: tuple[IrNode, ...]
    label = "luts"


@dataclass(frozen=True)
class Function:
    """Any function of the operands' values (a flat index, an enable, the next record
    position), written as a table."""
    operands: tuple[Operand, ...]
    fn: Callable[..., int]
    label = "fn"


@dataclass(frozen=True)
class Choose:
    """The operand of the arm whose value set holds the selector (`arms`: (values, operand)),
    else `default`."""
    selector: Operand
    arms: tuple[tuple[tuple[int, ...], Operand], ...]
    default: Operand
    label = "choose"


@dataclass(frozen=True)
class ScratchWork:
    """The record and staging scratch: DeltaNet heads keyed by `slot_value`; per head, its
    slots and the (source, size, value) regions each holds."""
    slot_value: str
    heads: tuple
    label = "scratch"


@dataclass(frozen=True)
class MemoryWork:
    """One replica of a store: written at `address` with `values` when every `when` (value,
    accepted values) holds, cleared on `init`, read at `query` (("fixed", slot) or ("value",
    name)).  A store of more than a head's `HEAD_DIM` slots is spread over `banks` groups of
    heads, bank b holding elements 128 b to 128 b + 127 (`emit.emit_memory`)."""
    element: str
    address: tuple
    values: tuple[str, ...]
    when: tuple[tuple[str, tuple[int, ...]], ...]
    init: str
    query: tuple
    banks: int = 1
    label = "memory"


MLP_WORK = (DigitWork, SharedLuts, Function, Choose)
Work = Union[DigitWork, SharedLuts, Function, Choose, ScratchWork, MemoryWork]


@dataclass
class Op:
    name: str
    work: Work
    inputs: list[str]
    outputs: list[str]
    region: str                        # scratch | commit | state | step | emit
    loc: Location | None = None
    units: int = 0                     # MLP units (mlp ops)
    heads: int = 0                     # DeltaNet value heads (mixer ops)
    sublayer: int = -1                 # set by the scheduler: 2*layer (+1 for the MLP)
    # set by the scheduler: the units as the gadget placed them (emit.Recording)
    recording: object = field(default=None, repr=False, compare=False)

    @property
    def kind(self) -> str:
        """Where the op runs: `mlp`, or a mixer (`scratch`, `memory`)."""
        return "mlp" if isinstance(self.work, MLP_WORK) else self.work.label

    @property
    def label(self) -> str:
        """What the op computes, in a word (`sum`, `fn`, `choose`, `memory`, ...)."""
        return self.work.label

    @property
    def layer(self) -> int:
        return self.sublayer // 2


@dataclass
class Plan:
    protocol: TraceProtocol
    graph: Graph
    values: dict[str, Value] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    embedding: list[str] = field(default_factory=list)
    emission: dict[str, str] = field(default_factory=dict)   # kind/lo/hi -> value
    estimate: bool = False
    stores: list = field(default_factory=list)

    def value(self, name: str, size: int, domain=None, loc=None,
              analog_scale: float | None = None) -> str:
        if name not in self.values:
            self.values[name] = Value(name, size, tuple(domain if domain is not None
                                                         else range(size)), loc, analog_scale)
        return name

    def add(self, op: Op) -> Op:
        for name in op.inputs:
            if name not in self.values:
                raise KeyError(f"{op.name}: unknown input {name}")
        self.ops.append(op)
        return op


def operand_values(operands) -> list[str]:
    return [o[1] for o in operands if o[0] == "v"]


def format_plan(plan: Plan) -> str:
    """The plan's text form: the embedding's values, then every op in plan order as
    `name = label(inputs) -> outputs [region, cost] @loc`, then the emission."""
    lines = [f"plan of {plan.graph.name}: {len(plan.ops)} ops, {len(plan.values)} values",
             f"embedding: {', '.join(plan.embedding)}"]
    for op in plan.ops:
        cost = f"{op.heads} heads" if op.kind != "mlp" else "mlp"
        where = f" @{op.loc}" if op.loc else ""
        lines.append(f"  {op.name} = {op.label}({', '.join(op.inputs)}) -> "
                     f"{', '.join(op.outputs)} [{op.region}, {cost}]{where}")
    lines.append("emission: " + ", ".join(f"{label} = {name}"
                                          for label, name in plan.emission.items()))
    return "\n".join(lines) + "\n"
