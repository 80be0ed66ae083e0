"""`backend_torch.graph_data.layer_graph`: the page's data holds a chip per op (named from
the HDL), every edge of the scheduled graph, bands that place every chip once, per-layer
figures equal to the schedule's, a longest chain as the critical path, only integers, and
the same bytes from the same spec."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from compile_helpers import TINY_SPEC, compile_plan
from graph_page_helpers import chip_graph
from qwengpu.backend_torch.graph_data import layer_graph
from qwengpu.backend_torch.names import NODE_ID


@pytest.fixture(scope="module", params=["specs/counter.hdl", TINY_SPEC])
def scheduled(request):
    schedule = compile_plan(request.param).schedule
    return schedule, layer_graph(schedule)


def test_a_chip_per_op_and_per_embedding_value(scheduled):
    schedule, data = scheduled
    plan = schedule.plan
    chips = data["chips"]
    assert len(chips) == len(plan.embedding) + len(plan.ops) + 1
    assert [c["name"] for c in chips[:len(plan.embedding)]] == plan.embedding
    assert data["first_op"] == len(plan.embedding)
    for op, chip in zip(plan.ops, chips[data["first_op"]:]):
        assert chip["layer"] == op.layer and chip["region"] == op.region
        assert chip["cost"] == (op.units if op.kind == "mlp" else op.heads)
        assert [data["values"][v]["name"] for v in chip["writes"]] and \
            len(chip["writes"]) == len(op.outputs)
        assert chip["state"] == (op.kind != "mlp")
    assert chips[-1]["kind"] == "lm_head"
    assert not any(NODE_ID.search(c["name"]) for c in chips)
    assert not any(NODE_ID.search(v["name"]) for v in data["values"])


def test_every_edge_of_the_scheduled_graph(scheduled):
    schedule, data = scheduled
    expected = set(chip_graph(schedule.plan).edges)
    assert {(a, b) for a, b, _ in data["edges"]} == expected
    assert len(data["edges"]) == len(expected)
    for a, b, values in data["edges"]:
        assert set(values) <= set(data["chips"][a]["writes"]) & set(data["chips"][b]["reads"])


def test_bands_run_down_the_layers_and_place_every_chip_once(scheduled):
    schedule, data = scheduled
    placed = [c for band in data["bands"] for c in band["chips"]]
    assert sorted(placed) == list(range(len(data["chips"])))
    order = [(band["layer"], band["place"]) for band in data["bands"]]
    assert order[0] == (-1, "embedding") and order[-1] == (schedule.layers_used, "lm_head")
    for band in data["bands"]:
        assert all(data["chips"][c]["layer"] == band["layer"] and
                   data["chips"][c]["place"] == band["place"] for c in band["chips"])
    for a, b, _ in data["edges"]:          # every edge runs down the page
        assert order.index((data["chips"][a]["layer"], data["chips"][a]["place"])) < \
            order.index((data["chips"][b]["layer"], data["chips"][b]["place"]))


def test_layer_figures_are_the_schedules(scheduled):
    schedule, data = scheduled
    plan, target = schedule.plan, schedule.target
    assert len(data["layers"]) == schedule.layers_used
    for row in data["layers"]:
        layer = row["layer"]
        live = {v for op in plan.ops if op.sublayer < 2 * layer for v in op.outputs}
        live |= set(plan.embedding)
        live = {v for v in live if schedule.erase_at.get(v, 2 * layer) >= 2 * layer}
        assert row["dims"] == 1 + sum(plan.values[v].size for v in live)
        units = sum(op.units for op in plan.ops if op.sublayer == 2 * layer + 1)
        erased = sum(plan.values[v].size for v, at in schedule.erase_at.items()
                     if at == 2 * layer + 1)
        assert (row["op_units"], row["erase_units"], row["units"]) == \
            (units, erased, units + erased)
        assert row["heads"] == sum(op.heads for op in plan.ops if op.sublayer == 2 * layer)
        assert (row["hidden"], row["intermediate"]) == (target.hidden_size,
                                                       target.intermediate_size)
        assert row["hot"] + row["anchor"] == round(schedule.hot_entries(2 * layer))


def test_the_critical_path_is_a_longest_chain(scheduled):
    schedule, data = scheduled
    graph = chip_graph(schedule.plan)
    path = data["critical"]
    assert all(graph.has_edge(a, b) for a, b in zip(path, path[1:]))
    assert len(path) - 1 == nx.dag_longest_path_length(graph)


def test_only_integers_and_the_same_bytes_every_time(scheduled):
    schedule, data = scheduled

    def numbers(item):
        if isinstance(item, dict):
            return [n for v in item.values() for n in numbers(v)]
        if isinstance(item, list):
            return [n for v in item for n in numbers(v)]
        return [item] if isinstance(item, (int, float)) and not isinstance(item, bool) else []
    assert all(isinstance(n, int) for n in numbers(data))
    assert json.dumps(layer_graph(schedule)) == json.dumps(data)
