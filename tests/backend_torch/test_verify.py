"""`verify_plan` and `verify_schedule` accept what the compiler builds and name what is
broken in a plan or schedule that is not (each rejection built from a real one)."""

from __future__ import annotations

import copy

import pytest

from compile_helpers import TINY_SPEC, compile_plan
from qwengpu.backend_torch.ops import Function
from qwengpu.backend_torch.verify import PlanError, verify_plan, verify_schedule


@pytest.fixture(scope="module")
def compiled():
    return compile_plan(TINY_SPEC)          # compile_plan verifies every step


def broken(compiled):
    return copy.deepcopy(compiled.schedule)


def mlp_op(plan, region=None):
    return next(op for op in plan.ops if op.kind == "mlp" and op.inputs and
                (region is None or op.region == region))


def test_real_plans_and_schedules_pass(compiled):
    verify_plan(compiled.plan)
    verify_schedule(compiled.schedule)


@pytest.mark.parametrize("case, message", [
    ("unknown input", "unknown value"),
    ("two writers", "is written by both"),
    ("writes the embedding", "which the embedding sets"),
    ("undeclared read", "without declaring them"),
    ("nothing writes", "which nothing writes"),
    ("mixer without heads", "work of kind"),
    ("bad domain", "domain outside"),
    ("cycle", "in a circle"),
])
def test_broken_plans_are_named(compiled, case, message):
    schedule = broken(compiled)
    plan = schedule.plan
    op = mlp_op(plan)
    first, second = [o for o in plan.ops if o.kind == "mlp" and o.outputs][:2]
    if case == "unknown input":
        op.inputs.append("nowhere")
    elif case == "two writers":
        second.outputs.append(first.outputs[0])
    elif case == "writes the embedding":
        op.outputs.append(plan.embedding[0])
    elif case == "undeclared read":
        op.work = Function(((("v", plan.embedding[1]),)), lambda value: value)
        op.inputs = []
    elif case == "nothing writes":
        plan.value("orphan", 2)
        op.inputs.append("orphan")
    elif case == "mixer without heads":
        next(o for o in plan.ops if o.kind != "mlp").heads = 0
    elif case == "bad domain":
        plan.values[op.outputs[0]].domain = (99,)
    elif case == "cycle":
        reader = next(o for o in plan.ops if first.outputs[0] in o.inputs and o.outputs)
        first.inputs.append(reader.outputs[0])
    with pytest.raises(PlanError, match=message):
        verify_plan(plan)


@pytest.mark.parametrize("case, message", [
    ("outside", "outside 0.."),
    ("wrong kind", "at sublayer"),
    ("too early", "ready at"),
    ("units", "MLP units"),
    ("shared dims", "share residual dims"),
    ("erased early", "is erased at sublayer"),
])
def test_broken_schedules_are_named(compiled, case, message):
    schedule = broken(compiled)
    plan = schedule.plan
    op = mlp_op(plan, "step")
    if case == "outside":
        op.sublayer = 2 * schedule.target.num_layers + 1
    elif case == "wrong kind":
        op.sublayer -= 1
    elif case == "too early":
        producer = next(o for o in plan.ops if set(o.outputs) & set(op.inputs))
        producer_output = next(v for v in producer.outputs if v in op.inputs)
        schedule.ready[producer_output] = op.sublayer + 2
    elif case == "units":
        schedule.units[op.layer] = schedule.target.intermediate_size + 1
    elif case == "shared dims":
        a, b = schedule.order[0], schedule.order[1]
        schedule.start[b] = schedule.start[a]
    elif case == "erased early":
        name = next(v for v in schedule.erase_at if schedule.last_use()[v] > schedule.ready[v])
        schedule.erase_at[name] = schedule.ready[name]
    with pytest.raises(PlanError, match=message):
        verify_schedule(schedule)
