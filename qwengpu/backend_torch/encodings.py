"""Binary residual encodings: which values are held as signs, and the cube algebra to read them.

A one-hot group spends one residual dim per value (a hex digit 16); a binary group
(`residual.BINARY`) spends one dim per bit (a hex digit 4), each `+1` or `-1`, so the norm
ledger still sees the same sum of squares on every token.  Writing a binary value costs
nothing more than writing a one-hot one: every writer (an MLP step, a DeltaNet read-out, the
embedding) adds a linear image of a one-hot choice, and the signs of value `v` are such an
image.  Reading is where the encodings differ:

- an AND term "the value is in set S" (steps, SiLU key and value channels) needs S to be a
  *cube* (some bits fixed, the rest free): `cube_form` is 1 on the cube and 0 or less off it.
  Any other set is split into disjoint cubes (`cubes.disjoint_cubes`, values outside the domain
  being free), one step per cube, so a binary read may take more MLP units;
- a weighted sum (`sum` ops) needs its table to be affine in the bits (`cubes.affine_in_bits`):
  adders' digit terms are, arbitrary tables are not;
- a one-hot *set* read by a linear form that is not an AND (the scratch's write enable sums
  its slots), the lm_head's emission groups and the constant group `tok.bos` stay one-hot;
- so do the scratch's read-outs: a cube form adds up every bit's deviation, so a binary
  value must be exactly +-1, and a scratch head whose slots were written at different
  tokens reads them back at uneven scales (memories write a whole value at once and read
  back clean).

A binary value is exact only at exactly the scale the norm ledger promises (a cube form's
constant is read from ONE), so a binary plan's embedding also holds the *norm anchor*, one
dim at `ANCHOR_SCALE` on every token, which keeps every sublayer's RMS within 1e-3 of the
ledger even on tokens whose values are not clean; and analog dims never reuse another
value's dims (`schedule.reuse_layout`).

`choose_encodings(plan, "binary")` makes every value binary whose readers all allow it
(docs/schedule.md, "Binary values"; `hdlc compile`'s default in float32, refused in bf16);
`onehot`, the API's default, keeps every value one-hot.
"""

from __future__ import annotations

from typing import Iterable

from qwengpu.backend_torch.cubes import affine_in_bits, bits_for, disjoint_cubes
from qwengpu.backend_torch.ops import CONSTANT_GROUP, NORM_ANCHOR, DigitWork, MemoryWork, Plan

ONEHOT_ONLY, BINARY_WHERE_READABLE = "onehot", "binary"
ENCODINGS = (BINARY_WHERE_READABLE, ONEHOT_ONLY)
# The norm anchor's value (`plan.NORM_ANCHOR`): its square, 262,144, outweighs any sum of
# squares the live values may be off by on a token where they are not clean (a few hundred
# on a launch prompt's first tokens), so the RMS every read is folded with stays within
# 1e-3 of the ledger's.  A one-hot read tolerates a wrong scale (its AND steps compare
# entries with thresholds); a binary cube form does not: its constant is read from ONE, and
# outputs written at scale f are f^2 too large or small.
ANCHOR_SCALE = 512.0
MAX_BINARY_BITS = 8           # larger values stay one-hot (cube covers grow as 3^bits)


def choose_encodings(plan: Plan, encoding: str = BINARY_WHERE_READABLE) -> dict[str, str]:
    """Make binary every value whose readers allow it and add the norm anchor (see the
    module doc); returns value -> why it stays one-hot."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r} (choose from {', '.join(ENCODINGS)})")
    why: dict[str, str] = {}
    if encoding == ONEHOT_ONLY:
        return {name: "--encoding onehot" for name in plan.values}
    for name in plan.emission.values():
        why[name] = "read by the lm_head"
    why[CONSTANT_GROUP] = "the constant group"
    for name, value in plan.values.items():
        if value.analog_scale is not None:
            why[name] = "analog"
        elif not 2 <= value.size or bits_for(value.size) > MAX_BINARY_BITS:
            why.setdefault(name, f"{value.size} values")
    for op in plan.ops:
        for name, reason in _onehot_reads(plan, op):
            why.setdefault(name, reason)
    for name, value in plan.values.items():
        if name not in why:
            value.make_binary(bits_for(value.size))
    plan.embedding.append(plan.value(NORM_ANCHOR, 1, (1,), analog_scale=ANCHOR_SCALE))
    return why


def _onehot_reads(plan: Plan, op) -> Iterable[tuple[str, str]]:
    """The inputs of `op` it can only read one-hot."""
    if op.kind == "scratch":
        for name in op.inputs:
            yield name, "read by the scratch (a sum of slots)"
        # A scratch head's regions are written at different tokens, so until every slot
        # holds a write of its own the read-out norm scales them unevenly: a one-hot entry
        # scaled by 0.7 still wins its AND step, a cube of 4 bits scaled so does not.
        for name in op.outputs:
            yield name, "written by the scratch (read-outs not always of unit scale)"
    elif isinstance(op.work, MemoryWork):
        for group, values in op.work.when:
            count = plan.values[group].size
            if len(disjoint_cubes(values, range(count), bits_for(count))) != 1:
                yield group, "a write condition that is not one cube"
    elif isinstance(op.work, DigitWork) and op.work.operator == "priority":
        # Each arm ANDs the false sets of every earlier condition: cube covers would multiply.
        for value, term in _variable_terms(plan, op):
            true = {v for v in value.domain if term[v]}
            bits = bits_for(value.size)
            if max(len(disjoint_cubes(true, value.domain, bits)),
                   len(disjoint_cubes(set(value.domain) - true, value.domain, bits))) > 1:
                yield value.name, "a priority condition that is not one cube"
    elif isinstance(op.work, DigitWork) and op.work.operator == "sum":
        for value, term in _variable_terms(plan, op):
            domain = sorted(value.domain)
            weights = [term[v] if v < len(term) else 0 for v in domain]
            if affine_in_bits(weights, domain, bits_for(value.size)) is None:
                yield value.name, "a sum term not affine in the bits"


def _variable_terms(plan: Plan, op):
    """(value, its term) for each operand of a `sum` or `priority` op that is not a
    constant."""
    for (kind, payload), term in zip(op.work.operands, op.work.node.terms):
        if kind == "v":
            yield plan.values[payload], term


def format_encodings(plan: Plan) -> str:
    """Every value's encoding and size: `name  binary 4 dims (10 values)`."""
    lines = []
    for value in plan.values.values():
        kind = "analog" if value.analog_scale is not None else value.encoding
        lines.append(f"{value.name}  {kind} {value.size} dims ({value.values} values)")
    return "\n".join(lines) + "\n"
