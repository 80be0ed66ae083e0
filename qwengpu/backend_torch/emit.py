"""Weights of a scheduled plan: MLP gadgets for the digit primitives, DeltaNet heads for the
scratch and the state, the embedding and lm_head from the trace protocol.

MLP ops (one `MlpWriter` each, over their own units of the layer's MLP; the input rms comes
from the schedule's norm ledger) are built from restoring `step` units (see
`gadgets/core.py`), so every output is a clean one-hot group whatever the small deviations
of the inputs:

- `sum`: the total `S = sum terms[i][x_i]` is a linear form (an analog operand's affine term
  reads its dim); a bias writes the table value at the lowest reachable total and one step
  per breakpoint of the table moves the hot entry (`put(new) - put(old)`): 2 units per
  breakpoint.
- `mul_column` (analog): one gated unit per bit `a_i` reaching the column, as
  `gadgets/multiply.py`'s products layer: condition `a_i`, value the form of b's bits it
  meets there, output `put_analog`.
- `carry`: one step per possible origin of the carry (cin or a generate followed only by
  propagates; the origins are mutually exclusive), on a 0 bias.
- `select`, `choose` (a selector value *set* per arm, and a default arm), `priority`:
  one AND step per (arm, arm value): `[conditions of the arm] + [arm == v] -> v`.
- `lut` and `fn` (any Python function of the operands): rows over every input but the one
  with the most values; per row and output value one step (as `PairLookup` does).

Binary values (`encodings.py`) are read through cube forms: an AND term on a set that is
not one cube becomes one step per disjoint cube; their outputs are the signs `put` writes.
Constant operands are folded into the forms.  Mixer ops: `scratch` (a DeltaNet memory whose
slots hold disjoint regions of the value, so one query over all slots reads every slot at
once; written by field/init/stage tokens and spread over all slots on `<bos>`) and `memory`
(`gadgets.memory.Memory`, one replica per read port).  Every function here is exercised by
the compile tests, which run the whole checkpoint under stock transformers.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import torch

from qwengpu.backend_torch.cubes import disjoint_cubes
from qwengpu.backend_torch.gadgets.core import Form, MlpWriter, bit_of, const, cube_form, \
    entries, put, put_analog, value_of, weighted
from qwengpu.backend_torch.gadgets.memory import (Memory, HeadWriter, address, drive_for,
                                                  fixed_address, when)
from qwengpu.backend_torch.ops import CONSTANT_GROUP, HEAD_DIM, Choose, DigitWork, Function, \
    Op, Plan, SharedLuts
from qwengpu.backend_torch.residual import ANALOG, BINARY, Group
from qwengpu.ir.digits import DIGIT_BITS, DIGIT_OPS, affine_fit, sum_values


class _Operands:
    """Operands of one op resolved to (group or None, domain, constant or None)."""

    def __init__(self, plan: Plan, groups: dict[str, Group], operands: Sequence[tuple]):
        self.items = []
        for kind, payload in operands:
            if kind == "c":
                self.items.append((None, (payload,), payload))
            else:
                self.items.append((groups[payload], plan.values[payload].domain, None))


def _term_forms(group: Group, accepted, domain) -> list[Form]:
    """Forms that are 1 when `group` holds one of `accepted` (a one-hot group: one form; a
    binary group: one per disjoint cube, values outside `domain` being free)."""
    if group.kind == BINARY:
        cubes = disjoint_cubes(accepted, domain, group.size)
        return [cube_form(group, cube) for cube in cubes]
    return [entries(group, [v for v in accepted if 0 <= v < group.size])]




def step(writer: MlpWriter, form, threshold: float, output, gap: float = 0.5) -> None:
    """`MlpWriter.step` with the pair's offset `B` read from a constant group instead of ONE.

    The two units of a restoring step differ only by `B` in their pre-activation.  Written on
    ONE, `B` is added to a constant of the size of `scale * threshold`, and both are rounded
    separately in bf16 (a threshold of 30 puts the constant near 4000, where bf16's spacing is
    32 and `B` is 48): the step's output would be 1 +- 0.7.  Here the large part is the same
    in both rows (rounded the same way, cancelling in the difference) and `+-B/2` comes from
    the dims of `tok.bos` (whose entries sum to 1 on every token), so the output is 1 within
    bf16's relative precision."""
    drive = writer.drive
    scale = drive.kappa / gap
    base = Form(form) * scale + const(-scale * threshold)
    constant = writer.constant_group
    half = Form({constant.dim(v): drive.step_b / 2 / constant.scale
                 for v in range(constant.size)})
    plus, minus = writer._take(2)
    for unit, gate, sign in ((plus, base + half, 1.0), (minus, base - half, -1.0)):
        writer._row(writer._gate, unit, gate)
        writer._row(writer._up, unit, const(1.0))
        writer._column(unit, Form(output) * (sign / drive.step_b))


# An AND term on an embedding value (always exactly +-1 or one-hot) weighs this much: where
# it is false, the other terms cannot outweigh it even if they are far from clean (values
# computed from a prompt token's scratch are; a binary cube form adds every bit's deviation).
EXACT_WEIGHT = 8.0


def _step_all(writer: MlpWriter, terms: list[tuple[Group, set, Sequence[int]]],
              output: Form) -> None:
    """`output` when every (group, accepted values, domain) term holds; no terms: always.
    One step, or one per combination of cubes where binary groups need several; terms on
    embedding values weigh `EXACT_WEIGHT`."""
    if not terms:
        writer.bias(output)
        return
    choices = [_term_forms(group, accepted, domain) for group, accepted, domain in terms]
    exact = getattr(writer, "exact_groups", set())
    weights = [EXACT_WEIGHT if group.name in exact and len(terms) > 1 else 1.0
               for group, _, _ in terms]
    for parts in itertools.product(*choices):
        form = Form()
        for part, weight in zip(parts, weights):
            form = form + part * weight
        step(writer, form, sum(weights) - 0.5, output)


def emit_mlp(writer: MlpWriter, op: Op, plan: Plan, groups: dict[str, Group]) -> None:
    """Add the units of MLP op `op` (its output group is zero before this layer)."""
    work = op.work
    out = groups[op.outputs[0]]
    writer.constant_group = groups[CONSTANT_GROUP]
    writer.exact_groups = set(plan.embedding)

    def operands(items) -> _Operands:
        return _Operands(plan, groups, items)

    if isinstance(work, Function):
        _emit_function(writer, operands(work.operands), work.fn, out)
    elif isinstance(work, Choose):
        arms = [(values, operands([arm]).items[0]) for values, arm in work.arms]
        _emit_choose(writer, operands([work.selector]).items[0], arms,
                     operands([work.default]).items[0], out)
    elif isinstance(work, SharedLuts):
        fns = [_lut_function(plan, node) for node in work.nodes]
        _emit_function(writer, operands(work.operands),
                       lambda *values: tuple(fn(*values) for fn in fns),
                       [groups[name] for name in op.outputs])
    elif not isinstance(work, DigitWork):
        raise ValueError(f"{op.name}: {work.label} is not MLP work")
    elif work.operator == "sum":
        _emit_sum(writer, work.node, operands(work.operands), out)
    elif work.operator == "carry":
        _emit_carry(writer, operands(work.operands), out)
    elif work.operator == "select":
        items = operands(work.operands).items
        selector, arms = items[0], items[1:]
        _emit_choose(writer, selector, [((i,), arm) for i, arm in enumerate(arms)], None, out)
    elif work.operator == "mul_column":
        _emit_mul_column(writer, work.node, operands(work.operands), out)
    elif work.operator == "priority":
        _emit_priority(writer, work.node, operands(work.operands), out)
    elif work.operator == "lut":
        _emit_function(writer, operands(work.operands), _lut_function(plan, work.node), out)
    else:
        raise ValueError(f"{op.name}: unknown MLP op {work.operator}")


def _lut_function(plan: Plan, node):
    """A `lut` node's table as a function of its operands' values."""
    widths = [plan.graph.node(a).width for a in node.args]
    return lambda *values: DIGIT_OPS["lut"].evaluate(node, values, widths)


def _emit_sum(writer, node, ops: _Operands, out: Group) -> None:
    form, domains, terms = Form(), [], []
    for (group, domain, value), term in zip(ops.items, node.terms):
        if group is None:
            form = form + const(term[value])
            domains.append((value,))
        elif group.kind == ANALOG:
            line = affine_fit([(v, term[v]) for v in sorted(domain)])
            if line is None:
                raise ValueError(f"{group.name}: an analog value read through a term that is "
                                 "not affine")
            form = form + value_of(group) * float(line[0]) + const(line[1])
            domains.append(domain)
        else:
            form = form + weighted(group, lambda v, t=term: t[v] if v < len(t) else 0,
                                   domain)
            domains.append(domain)
        terms.append(term)
    totals = sorted(sum_values(terms, domains))

    def table(s):
        return node.table[s - node.base]
    writer.bias(put(out, table(totals[0])))
    for s, t in zip(totals, totals[1:]):
        if table(s) != table(t):
            step(writer, form, (s + t) / 2, put(out, table(t)) - put(out, table(s)),
                 gap=(t - s) / 2)


def _emit_mul_column(writer, node, ops: _Operands, out: Group) -> None:
    """Per bit `a_i` (a constant bit: a linear unit, or nothing), the form of b's bits that it
    meets in column `node.low`, weighted `2^((i+j) % 4)`."""
    count = node.groups[0]
    a, b = ops.items[:count], ops.items[count:]
    b_bits = []                    # bit j of b as a form (a constant digit: a constant)
    for group, _, value in b:
        b_bits += [const((value >> bit) & 1) if group is None else bit_of(group, bit)
                   for bit in range(DIGIT_BITS)]
    for p, (group, _, value) in enumerate(a):
        for bit in range(DIGIT_BITS):
            i = DIGIT_BITS * p + bit
            form = Form()
            for j, b_bit in enumerate(b_bits):
                if (i + j) // DIGIT_BITS == node.low:
                    form = form + b_bit * float(2 ** ((i + j) % DIGIT_BITS))
            form = Form({dim: c for dim, c in form.items() if c})
            if not form:
                continue
            if group is None:
                if (value >> bit) & 1:
                    writer.linear(form, put_analog(out))
                continue
            condition = bit_of(group, bit)
            if condition:
                writer.gated(condition, form, put_analog(out))


def _emit_carry(writer, ops: _Operands, out: Group) -> None:
    items = ops.items
    origins = [(items[0], 1)] + [(item, 2) for item in items[1:]]
    writer.bias(put(out, 0))
    for position, (origin, wanted) in enumerate(origins):
        required = [(origin, wanted)] + [(item, 1) for item in items[position + 1:]]
        terms, possible = [], True
        for (group, domain, value), need in required:
            if group is None:
                possible &= value == need
            elif need in domain:
                terms.append((group, {need}, domain))
            else:
                possible = False
        if possible:
            _step_all(writer, terms, put(out, 1) - put(out, 0))
            if not terms:
                return


def _emit_arm(writer, conditions, arm, out: Group) -> None:
    group, domain, value = arm
    if group is None:
        _step_all(writer, conditions, put(out, value))
        return
    for v in domain:
        if v < out.count:     # staged bytes above an element's width are 0 (protocol)
            _step_all(writer, conditions + [(group, {v}, domain)], put(out, v))


def _emit_choose(writer, selector, arms, default, out: Group) -> None:
    sel_group, sel_domain, sel_value = selector
    covered = set()
    for values, arm in arms:
        live = [v for v in values if v in sel_domain and v not in covered]
        covered.update(live)
        if not live:
            continue
        _emit_arm(writer, [] if sel_group is None else [(sel_group, set(live), sel_domain)],
                  arm, out)
    rest = [v for v in sel_domain if v not in covered]
    if rest and default is not None:
        _emit_arm(writer, [] if sel_group is None else [(sel_group, set(rest), sel_domain)],
                  default, out)


def _emit_priority(writer, node, ops: _Operands, out: Group) -> None:
    count = len(node.terms)
    conds, arms, default = ops.items[:count], ops.items[count:2 * count], ops.items[-1]
    previous_false: list = []
    blocked = False
    for term, cond, arm in zip(node.terms, conds, arms + [default]):
        group, domain, value = cond
        true = {v for v in domain if term[v]}
        false = set(domain) - true
        if group is None:
            if term[value]:
                if not blocked:
                    _emit_arm(writer, list(previous_false), arm, out)
                return
            continue
        if true and not blocked:
            _emit_arm(writer, previous_false + [(group, true, domain)], arm, out)
        if not false:
            blocked = True
            break
        previous_false.append((group, false, domain))
    if not blocked:
        _emit_arm(writer, previous_false, default, out)


def _emit_function(writer, ops: _Operands, fn, out) -> None:
    """Rows over every input but the widest; `out` a group, or a list of groups when `fn`
    returns one value per group (luts sharing their inputs share the AND units)."""
    if isinstance(out, list):
        outs = out

        def put_all(values) -> Form:
            form = Form()
            for group, value in zip(outs, values):
                form = form + put(group, value)
            return form
    else:
        def put_all(value) -> Form:
            return put(out, value)
    items = ops.items
    variable = [i for i, (g, _, _) in enumerate(items) if g is not None]
    base = [value for _, _, value in items]
    if not variable:
        writer.bias(put_all(fn(*base)))
        return
    inner = max(variable, key=lambda i: (len(items[i][1]), -i))
    outer = [i for i in variable if i != inner]
    for combo in itertools.product(*(items[i][1] for i in outer)):
        values = list(base)
        for i, v in zip(outer, combo):
            values[i] = v
        by_output: dict[int, set] = {}
        for y in items[inner][1]:
            values[inner] = y
            by_output.setdefault(fn(*values), set()).add(y)
        for w, ys in sorted(by_output.items()):
            terms = [(items[i][0], {v}, items[i][1]) for i, v in zip(outer, combo)]
            if len(by_output) > 1:
                terms.append((items[inner][0], ys, items[inner][1]))
            if not terms:
                writer.bias(put_all(w))
            else:
                _step_all(writer, terms, put_all(w))


BF16_SAFE_RANGE = 16


def bf16_risks(plan: Plan) -> list[tuple[Op, int]]:
    """`sum` ops whose reachable totals span more than `BF16_SAFE_RANGE`: their far steps
    have pre-activations too large for bf16 gate outputs (measured: the multiplier column
    sums of tests/backend_torch/specs/alu_mix.hdl fail in bf16, pass in fp32)."""
    risks = []
    for op in plan.ops:
        if not isinstance(op.work, DigitWork) or op.work.operator != "sum":
            continue
        node = op.work.node
        domains = [(o[1],) if o[0] == "c" else plan.values[o[1]].domain
                   for o in op.work.operands]
        totals = sum_values(node.terms, domains)
        if max(totals) - min(totals) > BF16_SAFE_RANGE:
            risks.append((op, max(totals) - min(totals)))
    return risks


def count_units(op: Op, plan: Plan) -> int:
    """The MLP units op `op` takes (its emitter run on a counting writer)."""
    names = op.inputs + op.outputs + [CONSTANT_GROUP]
    groups = {}
    for name in names:
        groups[name] = plan.values[name].group(0)
    writer = MlpWriter(None, range(1 << 30), 1.0)
    emit_mlp(writer, op, plan, groups)
    return writer.flush()


# -- mixers ---------------------------------------------------------------------------------
def emit_scratch(model, layer: int, heads: Sequence[int], rms: float, op: Op,
                 groups: dict[str, Group]) -> None:
    """Install a scratch op (see the module doc) into value heads `heads` of `layer`."""
    attn = model.model.layers[layer].linear_attn
    drive = drive_for(attn.in_proj_qkv.weight.dtype)
    writer = HeadWriter(attn, rms, drive)
    slot_group = groups[op.work.slot_value]
    bos = groups["tok.bos"]
    beta = drive.beta
    for head, slots in zip(heads, op.work.heads):
        writer.claim(head, op.name)
        key_head = writer.key_head(head)
        offset, regions_in_head = 0, sum(len(regions) for _, regions in slots)
        normalised = math.sqrt(HEAD_DIM / regions_in_head)
        beta_form = const(-beta) + Form({bos.dim(1): 2 * beta})
        for key, (slot, regions) in enumerate(slots):
            writer.channel("k", key_head, key,
                           [(0, Form({slot_group.dim(slot): drive.key_gain})
                             + const(-drive.key_offset) + Form({bos.dim(1): drive.key_gain}))])
            writer.channel("q", key_head, key, [(0, const(drive.key_hot))])
            beta_form = beta_form + Form({slot_group.dim(slot): 2 * beta})
            selected = Form({slot_group.dim(slot): drive.value_gain})
            for source, size, value in regions:
                src, target = groups[source], groups[value]
                for entry in range(size):
                    form = selected + Form({src.dim(entry): drive.value_gain}) + \
                        const(-drive.value_gain - drive.value_offset)
                    if entry == 0:
                        form = form + Form({bos.dim(1): drive.value_gain})
                    writer.channel("v", head, offset + entry, [(0, form)])
                    writer.read_out(head, offset + entry,
                                    put(target, entry, 1.0 / (normalised * drive.gate)))
                offset += size
        writer.beta(head, beta_form)


def emit_memory(model, layer: int, heads: Sequence[int], rms: float, op: Op,
                groups: dict[str, Group], sizes: dict[str, int]) -> None:
    """Install one replica of a state element (a `memory` op)."""
    work = op.work
    kind, payload = work.address
    key = fixed_address(payload) if kind == "fixed" else \
        address(groups[payload], lambda v: min(v, HEAD_DIM - 1))   # v >= size: enable is 0
    memory = Memory(op.name, key, [groups[v] for v in work.values],
                    [when(groups[g], *vals) for g, vals in work.when], groups[work.init])
    kind, payload = work.query
    if kind == "fixed":
        query = fixed_address(payload)
    else:
        spare = min(sizes[work.element], HEAD_DIM - 1)
        query = address(groups[payload], lambda v: min(v, spare))
    memory.install(model, layer, list(heads), rms, query, [groups[v] for v in op.outputs])


# -- embedding and lm_head --------------------------------------------------------------------
def embedding_table(plan: Plan, groups: dict[str, Group], hidden: int) -> torch.Tensor:
    from qwengpu.backend_torch.plan import embedding_values
    protocol = plan.protocol
    table = torch.zeros(protocol.vocab_size, hidden, dtype=torch.float64)
    table[:, 0] = 1.0
    for token_id in range(protocol.vocab_size):
        for name, value in embedding_values(plan, token_id).items():
            group = groups[name]
            if group.kind == ANALOG:
                table[token_id, group.start] = value * group.scale
                continue
            for dim, coef in put(group, value).items():
                table[token_id, dim] = coef
    return table


def lm_head_table(plan: Plan, groups: dict[str, Group], hidden: int, final_rms: float,
                  margin: float) -> torch.Tensor:
    """Rows of field tokens, port tokens and eos collect `margin` per matching emission group
    (a missing high digit is a wildcard; port tokens and eos match any digit); every other
    token's row is 0.  See the module doc of `gadgets/tokens.py` for why the right token
    wins by `margin`."""
    protocol = plan.protocol
    kind, lo, hi = (groups[plan.emission[k]] for k in ("kind", "lo", "hi"))
    unit = margin * final_rms
    table = torch.zeros(protocol.vocab_size, hidden, dtype=torch.float64)
    for token in protocol.tokens:
        row = table[token.id]
        if token.kind == "field":
            row[kind.dim(token.slot)] = unit
            row[lo.dim(token.value & 15)] = unit
            spec = protocol.field_by_name[token.name]
            if spec.width - 8 * token.byte > 4:
                row[hi.dim(token.value >> 4)] = unit
            else:
                row[hi.start:hi.stop] = unit
        elif token.id == protocol.eos_id or token.kind == "port":
            position = token.slot if token.kind == "port" else protocol.tokens_per_record
            row[kind.dim(position)] = unit
            row[lo.start:lo.stop] = unit
            row[hi.start:hi.stop] = unit
    return table
