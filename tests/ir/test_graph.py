"""The IR's graph (qwengpu/ir/graph.py): `build_graph` from a design, the `Graph` wrapper's
reading and changing methods (edges follow `args`, ids in creation order, dependency order
with ties broken by id), `IrNode.function_key`, `word_dims`, `keep_origin` and `Encoding`.
Expected values are worked out by hand from the small graphs built here."""

from __future__ import annotations

from collections import Counter

import pytest

from qwengpu.dsl.elaborate import elaborate_source
from qwengpu.errors import Location
from qwengpu.ir import Encoding, IrNode, VerifyError, build_graph, keep_origin, verify, word_dims

from graph_helpers import COUNTER, register_graph, spec_graph


def test_build_graph_keeps_locations_and_makes_sinks():
    graph = spec_graph(COUNTER)
    verify(graph)
    ops = graph.op_counts()
    assert ops["write"] == 2 and ops["field"] == 1 and ops["stop"] == 1
    assert all(node.loc is not None for _, node in graph.items() if node.op != "const")
    add = next(node for _, node in graph.items() if node.op == "add")
    assert add.loc.file == "t.hdl" and add.loc.line == 8


def test_build_graph_keeps_netlist_ids_and_puts_sinks_after_them():
    design = elaborate_source("machine t;\n" + COUNTER, "t.hdl")
    graph = build_graph(design)
    for node in design.nodes:
        assert (graph.node(node.id).op, graph.node(node.id).args) == (node.op, node.args)
    # netlist: %3 = count + 1, %4 = const 1 : u1, %6 = (count == 10), %0 = done, %1 = count
    sinks = [(i, graph.node(i).op, graph.node(i).state, graph.node(i).args)
             for i in graph.sinks()]
    assert sinks == [(7, "write", "count", (4, 3)), (8, "write", "done", (6, 4)),
                     (9, "field", "count", (1,)), (10, "stop", None, (0,))]


def test_a_memory_write_sink_takes_enable_index_then_data():
    graph = spec_graph("""
memory m[4] : u8;
register i : u2;
stage s { emit i; m[i] <= 5 when i == 1; }
""")
    write = graph.node(graph.sinks()[0])
    assert write.op == "write" and write.state == "m" and write.width == 8
    assert [graph.node(a).op for a in write.args] == ["eq", "register", "const"]
    assert graph.node(write.args[2]).value == 5


def _small_graph():
    """a, b : u4 registers; %2 = add a, b; %3 = not %2; %4 = field out; %5 = const 5."""
    graph, (a, b) = register_graph(a=4, b=4)
    total = graph.add("add", 4, (a, b))
    inverted = graph.add("not", 4, (total,))
    graph.add("field", 4, (inverted,), state="out")
    graph.add("const", 4, value=5)
    return graph


def test_reading_a_graph():
    graph = _small_graph()
    assert len(graph) == 6 and graph.next_id == 6 and graph.ids() == [0, 1, 2, 3, 4, 5]
    assert 5 in graph and 6 not in graph
    assert graph.users(0) == [2] and graph.users(2) == [3] and graph.users(4) == []
    assert graph.sinks() == [4]
    assert graph.op_counts() == Counter({"register": 2, "add": 1, "not": 1, "field": 1,
                                         "const": 1})
    assert graph.const_value(5) == 5 and graph.const_value(2) is None
    assert graph.domain(5) == (5,) and graph.domain(0) == tuple(range(16))
    assert graph.ancestors_of([3]) == {0, 1, 2, 3}
    assert graph.edges() == [(0, 2), (1, 2), (2, 3), (3, 4)]
    assert graph.find_cycle() is None


def test_a_domain_overrides_the_width():
    graph, (a,) = register_graph(a=4)
    graph.update(a, domain=(1, 3))
    assert graph.domain(a) == (1, 3)


def test_update_moves_edges_and_order_breaks_ties_by_id():
    graph = _small_graph()
    graph.update(2, args=(0, 5))            # %2 = add a, const 5: b loses its user
    assert graph.edges() == [(0, 2), (2, 3), (3, 4), (5, 2)]
    assert graph.users(1) == [] and graph.users(5) == [2]
    # available first: 0, 1, 5 (smallest id first); then 2 once 0 and 5 are placed
    assert graph.order() == [0, 1, 5, 2, 3, 4]


def test_replace_uses_and_remove():
    graph = _small_graph()
    assert graph.replace_uses(2, 5) == 1
    assert graph.node(3).args == (5,) and graph.users(2) == []
    with pytest.raises(VerifyError, match="removing %5, which is still used by %3"):
        graph.remove(5)
    graph.remove(2)
    assert 2 not in graph and graph.users(0) == [] and graph.next_id == 6


def test_add_record_keeps_ids_unique_and_growing():
    graph = _small_graph()
    with pytest.raises(VerifyError, match="node %0 already exists"):
        graph.add_record(IrNode("const", 1, value=0), 0)
    assert graph.add_record(IrNode("const", 1, value=0), 10) == 10
    assert graph.add("const", 1, value=1) == 11


def test_an_argument_must_exist():
    """A node (or an update) naming an argument that is no node is refused at once (networkx
    would silently make an empty node for it)."""
    graph, (x, y) = register_graph(x=8, y=8)
    total = graph.add("add", 8, (x, y))
    with pytest.raises(VerifyError, match="argument %999 does not exist"):
        graph.add("add", 8, (999, x))
    with pytest.raises(VerifyError, match="argument %998 does not exist"):
        graph.update(total, args=(998, y))
    assert graph.node(total).args == (x, y) and 999 not in graph and 998 not in graph


def test_a_cycle_is_found():
    graph = _small_graph()
    graph.update(2, args=(0, 3))            # %2 = add a, %3 and %3 = not %2
    assert sorted(graph.find_cycle()) == [2, 3]


def test_copy_is_independent():
    graph = _small_graph()
    copy = graph.copy()
    copy.update(3, args=(0,))
    copy.add("const", 4, value=1)
    assert graph.node(3).args == (2,) and len(graph) == 6 and graph.users(0) == [2]


def test_function_key_ignores_origin_and_the_order_of_commutative_operands():
    here = Location("t.hdl", 3, 1)
    assert IrNode("add", 4, (1, 2), loc=here).function_key() == \
        IrNode("add", 4, (2, 1), name="x", stage="s").function_key()
    assert IrNode("sub", 4, (1, 2)).function_key() != IrNode("sub", 4, (2, 1)).function_key()
    assert IrNode("add", 4, (1, 2)).function_key() != IrNode("add", 5, (1, 2)).function_key()
    assert IrNode("lut", 2, (1,), table=(0, 1)).function_key() != \
        IrNode("lut", 2, (1,), table=(1, 0)).function_key()


@pytest.mark.parametrize("width, dims", [(1, 2), (3, 8), (4, 16), (5, 18), (8, 32),
                                         (32, 128)])
def test_word_dims_is_sixteen_per_full_digit_and_one_hot_of_the_rest(width, dims):
    assert word_dims(width) == dims


def test_keep_origin_copies_stage_name_location_digit_and_loop():
    here = Location("t.hdl", 4, 2)
    record = IrNode("add", 4, (1, 2), stage="s", name="s.x", loc=here, label="ignored",
                    digit=3, loop="lane=1")
    assert keep_origin(record) == {"stage": "s", "name": "s.x", "loc": here, "digit": 3,
                                   "loop": "lane=1"}


def test_encoding_text():
    texts = [str(Encoding(kind, dims)) for kind, dims in
             [("bit", 2), ("hex", 16), ("analog", 1), ("enum", 3), ("word", 32)]]
    assert texts == ["bit", "hex", "analog", "enum3", "word32"]
