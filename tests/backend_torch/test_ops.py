"""The plan's data (`backend_torch/ops.py`): an op's kind and label follow its typed work,
values count their norm-ledger entries by encoding, a plan refuses inputs it does not know,
and its text form lists every op in order."""

from __future__ import annotations

import pytest

from compile_helpers import compile_plan
from qwengpu.backend_torch.ops import ANALOG_SCALE, NORM_ANCHOR, Choose, DigitWork, Function, \
    MemoryWork, Op, Plan, ScratchWork, SharedLuts, Value, format_plan
from qwengpu.backend_torch.residual import BINARY


def test_kind_and_label_follow_the_work():
    works = [(DigitWork("sum", None, ()), "mlp", "sum"), (SharedLuts((), ()), "mlp", "luts"),
             (Function((), int), "mlp", "fn"), (Choose(("c", 0), (), ("c", 0)), "mlp", "choose"),
             (ScratchWork("tok.rslot", ()), "scratch", "scratch"),
             (MemoryWork("mem", ("fixed", 0), (), (), "tok.bos", ("fixed", 0)), "memory",
              "memory")]
    for work, kind, label in works:
        op = Op("o", work, [], [], "step")
        assert (op.kind, op.label) == (kind, label)


def test_hot_entries_by_encoding():
    onehot = Value("a", 16, tuple(range(16)))
    binary = Value("b", 16, tuple(range(16)))
    binary.make_binary(4)
    analog = Value("c", 1, (0, 1), analog_scale=ANALOG_SCALE)
    anchor = Value(NORM_ANCHOR, 1, (1,), analog_scale=512.0)
    assert (onehot.hot_entries, binary.hot_entries, analog.hot_entries,
            anchor.hot_entries) == (1, 4, 0, 512.0 ** 2)
    assert binary.encoding == BINARY and binary.values == 16 and binary.group(3).stop == 7


def test_a_plan_refuses_unknown_inputs_and_keeps_values_once():
    plan = compile_plan("specs/counter.hdl").plan
    assert plan.value("tok.bos", 99) == "tok.bos" and plan.values["tok.bos"].size != 99
    with pytest.raises(KeyError, match="unknown input nowhere"):
        plan.add(Op("x", Function((), int), ["nowhere"], [], "step"))
    assert isinstance(plan, Plan)


def test_the_text_form_lists_every_op():
    plan = compile_plan("specs/counter.hdl").plan
    text = format_plan(plan).splitlines()
    assert text[0] == f"plan of counter: {len(plan.ops)} ops, {len(plan.values)} values"
    assert text[1].startswith("embedding: tok.rslot, tok.sslot, tok.lo")
    assert len(text) == 3 + len(plan.ops) and text[-1].startswith("emission: ")
    assert all(f"  {op.name} = {op.label}(" in line for op, line in zip(plan.ops, text[2:]))
