"""The scheduled layer graph as data: what `hdlc graph -o FILE.html` draws (`graph_view.py`).

`layer_graph(schedule)` gives one dict, plain JSON, that the page carries in a `<script
type="application/json">` block (so tests and other tools read it too):

- `chips`: one per op of the plan (in plan order, so chip `k` of kind `op` is `plan.ops[k -
  first_op]`), after one chip per embedding value (the token's own fields) and before one
  for the lm_head (it reads the emission).  Each names itself from the HDL
  (`names.plan_names`), says where it runs (`layer`, `place`: `embedding`, `mixer`, `mlp`,
  `lm_head`), its region, its cost as an integer (`units` or `heads`), the values it reads
  and writes (indices into `values`) and whether it holds state (`state`: the DeltaNet
  heads of the scratch and the memories, where a cone stops);
- `edges`: `[from, to, [values]]`, one per pair of chips where `to` reads a value `from`
  writes, every read of the schedule (an op's inputs come from the ops that wrote them, or
  from the embedding);
- `bands`: the rows of the picture top to bottom (the embedding, each used layer's mixer and
  MLP, the lm_head), each with its chips ordered so that edges cross less (a chip sits near
  the mean position of the chips it reads: one barycentre sweep down the bands);
- `layers`: per used layer the residual dims live at its input, the MLP units its ops and
  erasures use, its DeltaNet heads, each with the target's size, and the norm ledger;
- `values`: each residual value's name, dims, first dim, and the sublayers it lives from and
  to (erased or kept);
- `critical`: a longest chain of chips from the embedding to the lm_head (every schedule
  needs at least its ops one after another).

Every number is an integer; the same schedule gives the same dict (and the same bytes).
"""

from __future__ import annotations

import networkx as nx

from qwengpu.backend_torch.names import plan_names
from qwengpu.backend_torch.ops import NORM_ANCHOR
from qwengpu.backend_torch.schedule import Schedule, ledger_parts
from qwengpu.backend_torch.target import FULL

STATE_KINDS = ("scratch", "memory")       # chips whose DeltaNet heads hold state


def layer_graph(schedule: Schedule) -> dict:
    """The page's data (see the module doc)."""
    plan, target = schedule.plan, schedule.target
    names = plan_names(plan)
    value_index = {name: i for i, name in enumerate(plan.values)}
    chips: list[dict] = []
    writer: dict[str, int] = {}
    for name in plan.embedding:
        writer[name] = len(chips)
        chips.append(_chip(len(chips), name, "embedding", "embedding", -1, "embedding",
                           writes=[value_index[name]]))
    first_op = len(chips)
    for op in plan.ops:
        named = names.op(op)
        for v in op.outputs:
            writer[v] = len(chips)
        mlp = op.kind == "mlp"
        chips.append(_chip(len(chips), named.name, op.region, op.kind, op.layer,
                           "mlp" if mlp else "mixer", role=named.role, loc=named.loc,
                           text=named.text, cost=op.units if mlp else op.heads,
                           unit="units" if mlp else "heads",
                           reads=[value_index[v] for v in op.inputs],
                           writes=[value_index[v] for v in op.outputs],
                           element=getattr(op.work, "element", "")))
    chips.append(_chip(len(chips), "lm_head", "lm_head", "lm_head", schedule.layers_used,
                       "lm_head", role="the emitted token",
                       reads=[value_index[v] for v in plan.emission.values()]))
    edges = _edges(chips, plan, writer)
    bands = _bands(schedule, chips, edges)
    return {
        "title": f"{plan.graph.name} on {target.name}",
        "spec": plan.graph.file,
        "summary": _summary(schedule),
        "first_op": first_op,
        "chips": chips,
        "edges": edges,
        "bands": bands,
        "layers": [_layer(schedule, layer) for layer in range(schedule.layers_used)],
        "values": [_value(schedule, names.value(name), name) for name in plan.values],
        "critical": critical_path(len(chips), edges),
    }


def _chip(index: int, name: str, region: str, kind: str, layer: int, place: str, *,
          reads=(), writes=(), role: str = "", loc: str = "", text: str = "", cost: int = 0,
          unit: str = "", element: str = "") -> dict:
    return {"id": index, "name": name, "role": role, "loc": loc, "text": text,
            "region": region, "kind": kind, "layer": layer, "place": place, "cost": cost,
            "unit": unit, "reads": list(reads), "writes": list(writes), "element": element,
            "state": kind in STATE_KINDS}


def _edges(chips: list[dict], plan, writer: dict[str, int]) -> list[list]:
    names = list(plan.values)
    pairs: dict[tuple[int, int], list[int]] = {}
    for chip in chips:
        for v in chip["reads"]:
            source = writer.get(names[v])
            if source is not None:
                pairs.setdefault((source, chip["id"]), []).append(v)
    return [[source, target, sorted(set(values))]
            for (source, target), values in sorted(pairs.items())]


def _bands(schedule: Schedule, chips: list[dict], edges) -> list[dict]:
    """The rows top to bottom, each one's chips in barycentre order (ties: plan order)."""
    members: dict[tuple[int, str], list[int]] = {}
    for chip in chips:
        members.setdefault((chip["layer"], chip["place"]), []).append(chip["id"])
    types = schedule.target.layer_types
    rows = [(-1, "embedding")]
    for layer in range(schedule.layers_used):
        if types[layer] != FULL:
            rows.append((layer, "mixer"))
        rows.append((layer, "mlp"))
    rows.append((schedule.layers_used, "lm_head"))
    sources: dict[int, list[int]] = {}
    for source, target, _ in edges:
        sources.setdefault(target, []).append(source)
    position: dict[int, float] = {}          # chip -> where it sits in its row, 0..1

    def centre(chip_id: int) -> float:
        placed = [position[s] for s in sources.get(chip_id, []) if s in position]
        return sum(placed) / len(placed) if placed else 0.5
    bands = []
    for layer, place in rows:
        ids = sorted(members.get((layer, place), []), key=lambda c: (centre(c), c))
        for rank, chip_id in enumerate(ids):
            position[chip_id] = (rank + 0.5) / len(ids)
        bands.append({"layer": layer, "place": place, "chips": ids})
    return bands


def _layer(schedule: Schedule, layer: int) -> dict:
    plan, target = schedule.plan, schedule.target
    hot, anchor = ledger_parts(schedule, 2 * layer)
    linear = target.layer_types[layer] != FULL
    return {
        "layer": layer,
        "type": target.layer_types[layer],
        "dims": 1 + sum(plan.values[v].size for v in schedule.live_values(2 * layer)),
        "hidden": target.hidden_size,
        "units": schedule.layer_units(layer),
        "op_units": schedule.units.get(layer, 0),
        "erase_units": schedule.erase_units(layer),
        "intermediate": target.intermediate_size,
        "heads": schedule.heads.get(layer, 0),
        "head_cap": target.linear_heads if linear else 0,
        "hot": hot,
        "anchor": anchor,
        "erased": len(schedule.erased_at(2 * layer + 1)),
    }


def _value(schedule: Schedule, shown: str, name: str) -> dict:
    value = schedule.plan.values[name]
    return {"name": shown, "dims": value.size, "encoding": value.group(0).kind,
            "first_dim": schedule.start.get(name, -1), "from": schedule.ready.get(name, -1),
            "erased_at": schedule.erase_at.get(name, -1),
            "anchor": name == NORM_ANCHOR}


def _summary(schedule: Schedule) -> dict:
    plan, target = schedule.plan, schedule.target
    return {"target": target.name, "num_layers": target.num_layers,
            "layers_used": schedule.layers_used, "hidden": target.hidden_size,
            "intermediate": target.intermediate_size, "heads": target.linear_heads,
            "dims": schedule.dims, "peak_live_dims": schedule.peak_live_dims,
            "ops": len(plan.ops), "units": sum(op.units for op in plan.ops),
            "op_heads": sum(op.heads for op in plan.ops)}


def critical_path(count: int, edges) -> list[int]:
    """A longest chain of chips (ties broken by chip order: deterministic)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(range(count))
    graph.add_edges_from((source, target) for source, target, _ in edges)
    return nx.dag_longest_path(graph, topo_order=list(nx.lexicographical_topological_sort(graph)))
