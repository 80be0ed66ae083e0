"""`backend_torch.names`: every op and value of a plan named from the HDL (a wire's name, or
the expression it came from and its digit), the compiler's own ops by their plan names, and
no bare node id (`c%22`) anywhere."""

from __future__ import annotations

from compile_helpers import compile_plan
from qwengpu.backend_torch.names import NODE_ID, node_name, plan_names
from qwengpu.errors import Location
from qwengpu.ir import IrNode

LUTS = """machine luts;
register x : u4;
register y : u4;
stage s {
    let both = x & y;
    emit a = x ^ y, b = both;
    x <= x + 1;
    y <= y + 3;
}
"""


def test_the_counter_is_named_from_its_spec():
    plan = compile_plan("specs/counter.hdl").plan
    names = plan_names(plan)
    by_name = {names.op(op).name: names.op(op) for op in plan.ops}
    assert set(by_name) == {
        "record_scratch", "staging_scratch", "(count + 1).d0 \u00b7 add.sum",
        "(count + 1).d1 \u00b7 add.sum", "count == LIMIT \u00b7 eq", "wr.count.d0",
        "wr.count.d1", "wr.count.en", "wr.done.d0", "wr.done.en", "s.count.r0", "s.done.r0",
        "next.kind", "next.lo", "next.hi"}
    adder = by_name["(count + 1).d1 \u00b7 add.sum"]
    assert (adder.role, adder.loc, adder.text) == ("add.sum", "specs/counter.hdl:16:20",
                                                   "count + 1")
    write = by_name["wr.done.en"]
    assert (write.role, write.text) == ("", "done <= 1 when count == LIMIT;")
    for op in plan.ops:
        for value in op.inputs + op.outputs:
            assert not NODE_ID.search(names.value(value)), value


def test_shared_luts_name_every_output(tmp_path):
    spec = tmp_path / "luts.hdl"
    spec.write_text(LUTS)
    plan = compile_plan(str(spec), estimate=True).plan
    names = plan_names(plan)
    luts = next(op for op in plan.ops if op.label == "luts")
    assert names.op(luts).name == "x ^ y \u00b7 xor, s.both" and names.op(luts).role == "xor, and"
    assert [names.value(v) for v in luts.outputs] == ["x ^ y \u00b7 xor", "s.both"]


def test_a_node_without_text_is_named_by_its_role_and_place():
    here = Location("gone.hdl", 3, 7, span=(3, 7, 3, 12))
    assert node_name(IrNode("sum", 4, label="add.sum", loc=here)) == "add.sum @gone.hdl:3:7"
    assert node_name(IrNode("sum", 4, label="add.sum", loc=here, digit=2)) == \
        "add.sum @gone.hdl:3:7"
    assert node_name(IrNode("sum", 4)) == "sum"
    assert node_name(IrNode("sum", 4, name="s.wire.d2", loc=here)) == "s.wire.d2"
