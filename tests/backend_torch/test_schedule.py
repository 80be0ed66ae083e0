"""The planner and the scheduler: the execution model's regions, the layer placement, the
norm ledger, capacity errors that name the resource and the HDL line, the trace-carried check,
the text dump and the `hdlc compile` / `hdlc graph` commands.

The whole machine's IR is verified after every step once (`whole_machine_plan`, 35 s); its
other targets and encodings schedule it unverified (16 s each)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from compile_helpers import compile_plan, whole_machine_plan
from qwengpu.backend_torch.schedule import format_schedule
from qwengpu.backend_torch.target import NUM_LAYERS, load_target
from qwengpu.cli import main
from qwengpu.compiler import compile
from qwengpu.errors import CapacityError, HdlError
from qwengpu.ir.check_trace_carried import trace_carried_problems

pytestmark = pytest.mark.heavy     # one worker runs the heavy files in turn: tests/workers.py

COUNTER = "specs/counter.hdl"
TINY = "tests/backend_torch/specs/tiny_carried.hdl"


def test_counter_schedule_regions_in_order():
    schedule = compile_plan(COUNTER).schedule
    ops = {op.name: op for op in schedule.plan.ops}
    assert ops["record_scratch"].sublayer == 0 and ops["staging_scratch"].sublayer == 0
    commit = [op for op in ops.values() if op.region == "commit"]
    state = [op for op in ops.values() if op.region == "state"]
    emit = [op for op in ops.values() if op.region == "emit"]
    # each replica's write (commit logic) below it, emission reads what the replicas hold
    producer = {v: op for op in ops.values() for v in op.outputs}
    for replica in state:
        writes = [producer[v] for v in replica.inputs if v in producer]
        assert writes and all(w.region == "commit" for w in writes)
        assert max(w.sublayer for w in writes) < replica.sublayer
    assert commit
    assert min(op.sublayer for op in emit) > min(op.sublayer for op in state)
    assert all(op.sublayer % 2 == 0 for op in state)        # mixers
    # min: the smallest unit cap that fits (no layer wider than the widest op needs)
    widest_op = max(op.units for op in ops.values())
    assert max(schedule.units.values()) == widest_op == 66
    widest_layer = max(map(schedule.layer_units, range(NUM_LAYERS)))
    assert schedule.target.intermediate_size == -(-widest_layer // 8) * 8
    assert schedule.layers_used == 6 and schedule.target.num_layers == NUM_LAYERS


def test_norm_ledger_counts_every_live_value_once():
    schedule = compile_plan(TINY, encoding="onehot").schedule      # one hot entry a value
    end = 2 * schedule.target.num_layers
    assert schedule.hot_entries(0) == 1 + len(schedule.plan.embedding)
    erased = set(schedule.erase_at)
    assert erased, "TINY has values whose dims are reused"
    assert schedule.hot_entries(end) == 1 + len(schedule.order) - len(erased)
    for s in range(end + 1):
        written = sum(1 for v in schedule.order if schedule.ready[v] <= s)
        gone = sum(1 for v, at in schedule.erase_at.items() if at < s)
        assert schedule.hot_entries(s) == 1 + written - gone


def test_schedule_is_deterministic_text():
    first = format_schedule(compile_plan(TINY).schedule)
    assert first == format_schedule(compile_plan(TINY).schedule)
    assert "layer 0 (linear_attention)" in first
    assert "mixer s.regs.r0 = memory(" in first
    assert "layers 11..44: empty" in first


def test_the_schedule_does_not_read_the_norm_eps():
    """A splice builds its weights, with the design's `rms_norm_eps`, on the schedule its base
    check made for the base's eps (`compiler.resume`): the schedule must not depend on it."""
    target = dataclasses.replace(load_target("qwen3.5-2b"), narrowest=True)
    base, design = (compile_plan(TINY, dataclasses.replace(target, rms_norm_eps=eps)).schedule
                    for eps in (1e-6, 2.12e-28))
    assert format_schedule(base) == format_schedule(design)
    assert (base.dims, base.order, base.start, base.erase_at) == \
        (design.dims, design.order, design.start, design.erase_at)


def test_the_text_form_names_ops_from_the_hdl(capsys):
    """`hdlc graph` without -o: the ops and values by the names the page shows, the norm
    ledger as whole numbers, no bare node id."""
    assert main(["graph", COUNTER]) == 0
    text = capsys.readouterr().out
    assert "mlp   (count + 1).d0 \u00b7 add.sum = sum(scr.count.b0.lo) -> (count + 1).d0 " \
        "\u00b7 add.sum [commit, add.sum, 31 units] @specs/counter.hdl:16:20" in text
    assert "fn(tok.mode, count == LIMIT \u00b7 eq) -> wr.done.en" in text
    assert not re.search(r"%\d", text)
    ledgers = re.findall(r"hot entries (\S+) \(\+(\S+) the norm anchor's\)", text)
    assert ledgers and all(hot.isdigit() and anchor == "262144" for hot, anchor in ledgers)


def test_too_few_units_is_a_capacity_error(tmp_path):
    toml = tmp_path / "narrow.toml"
    toml.write_text('name = "narrow"\nnum_layers = 45\nhidden_size = 4096\n'
                    'intermediate_size = 40\n[linear_attention]\nnum_key_heads = 16\n'
                    'num_value_heads = 16\n')
    with pytest.raises(CapacityError) as error:
        compile_plan(TINY, str(toml))
    assert "MLP units" in str(error.value) and "a layer has 40" in str(error.value)
    assert error.value.loc is not None and error.value.loc.line > 0


def test_too_few_dims_is_a_capacity_error(tmp_path):
    toml = tmp_path / "thin.toml"
    toml.write_text('name = "thin"\nnum_layers = 45\nhidden_size = 200\n'
                    'intermediate_size = 6144\n[linear_attention]\nnum_key_heads = 16\n'
                    'num_value_heads = 16\n')
    with pytest.raises(CapacityError, match="residual dims: the plan needs 242 "):
        compile_plan(TINY, str(toml), encoding="onehot")


def test_write_not_carried_by_the_trace_is_rejected():
    with pytest.raises(HdlError) as error:
        compile_plan("specs/tiny.hdl")
    message = str(error.value)
    assert "write to 'pc' is not carried by the trace" in message
    assert "'regs'" in message
    assert error.value.loc.line == 45          # pc <= jumps ? ... : pc + 1;


def test_trace_carried_check_on_the_real_spec_after_the_cut():
    """The real spec's writes take record fields only: carried once the write cones are cut
    at the fields; without the cut the passes merge commit with step logic and the check
    names the writes."""
    from qwengpu.dsl import load_design
    from qwengpu.ir import build_graph
    from qwengpu.passes import DEFAULT_PIPELINE, run_passes
    design = load_design("specs/qwengpu.hdl")
    graph = build_graph(design)
    run_passes(graph, DEFAULT_PIPELINE)
    assert trace_carried_problems(graph) == []
    uncut = build_graph(design)
    run_passes(uncut, [p for p in DEFAULT_PIPELINE if p != "cut-at-fields"])
    problems = trace_carried_problems(uncut)
    assert problems and all(p.loc is not None for p in problems)
    assert "regs" in {p.state for p in problems}


def test_cli_compile_and_graph(tmp_path, capsys):
    assert main(["graph", COUNTER]) == 0
    assert "schedule of counter" in capsys.readouterr().out
    page = tmp_path / "counter.html"
    assert main(["graph", COUNTER, "-o", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("<!doctype html>") and "record_scratch" in text
    assert main(["compile", "specs/tiny.hdl", "-o", str(tmp_path / "x")]) == 1
    assert "not carried by the trace" in capsys.readouterr().err


def test_min_caps_units_and_heads_per_layer():
    """min: the smallest per-layer caps that still fit 45 layers; no layer is wider than the
    built shape, and the widest layer is no wider than the uncapped (ASAP) schedule's."""
    from qwengpu.backend_torch.schedule import _list_schedule
    schedule = compile_plan(TINY).schedule
    target, plan = schedule.target, schedule.plan
    assert max(schedule.units.values()) <= target.intermediate_size
    assert max(schedule.heads.values()) <= target.linear_heads
    uncapped = load_target("min")
    _, units, _ = _list_schedule(plan, uncapped, uncapped.units_per_layer,
                                 uncapped.heads_per_layer)
    assert max(schedule.units.values()) <= max(units.values())
    # one unit fewer per layer no longer fits the 45 layers
    with pytest.raises(CapacityError, match="layers: ") as too_deep:
        _list_schedule(plan, uncapped, max(schedule.units.values()) - 1, target.linear_heads)
    assert not re.search(r"%\d", str(too_deep.value))      # the op by its HDL name
    assert _list_schedule(plan, uncapped, max(schedule.units.values()),
                          target.linear_heads)[1] == schedule.units


def test_file_target_caps_and_full_attention_layers():
    schedule = compile_plan(TINY, "qwen3.5-2b").schedule
    types = schedule.target.layer_types
    assert all(units <= 6144 for units in schedule.units.values())
    assert all(op.kind == "mlp" or types[op.layer] != "full_attention"
               for op in schedule.plan.ops)


def test_reused_dims_never_overlap_live_values():
    schedule = compile_plan(TINY).schedule
    sizes = {v: schedule.plan.values[v].size for v in schedule.order}
    last, end = schedule.last_use(), 2 * schedule.target.num_layers
    # a value holds its dims until its erasure, or to the end of the pass
    until = {v: schedule.erase_at[v] + 1 if v in schedule.erase_at else end + 1
             for v in schedule.order}
    for v, at in schedule.erase_at.items():
        assert at % 2 == 1 and at >= last[v] and at - last[v] <= 1
    values, start = schedule.order, schedule.start
    for i, a in enumerate(values):
        for b in values[i + 1:]:
            lives = schedule.ready[a] < until[b] and schedule.ready[b] < until[a]
            dims_meet = start[a] < start[b] + sizes[b] and start[b] < start[a] + sizes[a]
            assert not (lives and dims_meet), (a, b)
    assert schedule.peak_live_dims <= schedule.dims < 1 + sum(sizes.values())
    assert schedule.target.hidden_size >= schedule.dims
    assert all(schedule.layer_units(layer) <= schedule.target.intermediate_size
               for layer in range(schedule.target.num_layers))


def test_the_full_machine_schedules_into_45_layers_at_min():
    """specs/qwengpu.hdl at its own parameters: every write carried, `mem`'s four lane stores
    on port tokens, `prog` (128 words, every index in range) in one head per replica; with
    binary values its min residual is 2,456 dims since the FPU's add (2,224 since ISA v2:
    shared and local windows, barriers, atomics, shuffles, votes), wider than Qwen3.5-2B's
    2,048, as min keeps to 13 heads (docs/schedule.md, "Figures"); all one-hot it is more than
    two and a half times wider.  min weighs
    heads against units (a DeltaNet head costs each residual dim 642 weights, an MLP unit 3):
    the layers get the fewest heads that hold the plan, layer 0's 13 scratch heads, where
    taking the fewest units first needed 28 (2.27 G weights in the layers, then 1.43 G; 1.53 G
    since optional record fields: the tables that pick the next position widen layer 1; 1.66 G
    since the pairs of small fields in one token: the emission's high digit has more arms,
    and the greedy schedule peaks 108 dims higher; 1.92 G since ISA v2; 2.16 G since the FPU's
    add)."""
    schedule = whole_machine_plan().schedule
    target = schedule.target
    assert schedule.layers_used <= NUM_LAYERS
    assert schedule.plan.protocol.tokens_per_record == 51         # at most: optional fields
    assert target.hidden_size <= 2460
    scratch_heads = sum(op.heads for op in schedule.plan.ops if op.region == "scratch")
    assert target.linear_heads == scratch_heads == 13
    layer_weights = (NUM_LAYERS - 1) * target.hidden_size * (
        642 * target.linear_heads + 3 * target.intermediate_size)
    assert layer_weights < 2.2e9
    onehot = compile_plan("specs/qwengpu.hdl", "min", encoding="onehot", check=False).schedule
    assert onehot.target.hidden_size > 2.5 * target.hidden_size


def test_the_full_machine_schedules_into_the_2b_shape():
    """Issue #4's shape: the whole machine in Qwen3.5-2B's 45 layers of hidden 2048,
    intermediate 6144 and 16 DeltaNet heads, erasures included, with binary values (since
    ISA v2 its ops take 39 of the 45 layers; the layers after them pass the residual on)."""
    schedule = compile_plan("specs/qwengpu.hdl", "qwen3.5-2b", encoding="binary",
                            check=False).schedule
    target = schedule.target
    assert (target.hidden_size, target.intermediate_size, target.linear_heads) == \
        (2048, 6144, 16)
    assert schedule.layers_used <= target.num_layers == NUM_LAYERS and schedule.dims <= 2048
    assert all(schedule.layer_units(layer) <= 6144 for layer in range(NUM_LAYERS))
    assert all(heads <= 16 for heads in schedule.heads.values())
    types = target.layer_types
    assert all(op.kind == "mlp" or types[op.layer] != "full_attention"
               for op in schedule.plan.ops)


def test_a_splice_takes_the_narrowest_residual_its_caps_give():
    """A splice's target (`Target.narrowest`) tries a finer grid of unit caps and keeps the
    one with the fewest residual dims, the rest going to the text gate: the 2-lane machine in
    the 2B shape takes 1,873 dims there (175 free) where the first cap that fits takes 1,911;
    the whole machine takes 1,996 either way or fewer (docs/splice.md, "Gate dims")."""
    from dataclasses import replace

    from qwengpu.backend_torch import schedule as scheduling

    target = load_target("qwen3.5-2b")
    lanes = {"LANES": 2}
    first = compile_plan("specs/qwengpu.hdl", target, params=lanes, check=False).schedule
    narrow = compile_plan("specs/qwengpu.hdl", replace(target, narrowest=True),
                          params=lanes, check=False).schedule
    assert narrow.dims < first.dims
    assert (first.dims, narrow.dims) == (1911, 1873)
    # the narrowest of the grid: every other cap's layout is at least as wide
    plan = narrow.plan
    smallest = scheduling._smallest_unit_cap(plan, target, target.heads_per_layer,
                                             target.units_per_layer)
    for factor in scheduling.NARROWEST_CAP_FACTORS:
        cap = min(target.units_per_layer, int(smallest * factor))
        ready, units, _ = scheduling._list_schedule(plan, target, cap, target.heads_per_layer)
        assert scheduling.reuse_layout(plan, target, ready, units,
                                       target.units_per_layer)[1] >= narrow.dims, factor
    whole = compile_plan("specs/qwengpu.hdl", replace(target, narrowest=True),
                         check=False).schedule
    assert whole.dims <= 1998 and whole.layers_used <= NUM_LAYERS


def test_folded_lanes_and_port_tokens_together():
    """A two-lane QwenGPU folds its lanes and commits its second store on a port token that
    only a record whose lane 1 stores has; with optional fields the lane of the next field is
    computed (`next.lane`, a choose on `tok.next` over the masks), not held by the token, and
    takes both lanes: the choose's arms name lane 1 where the next field is lane 1's."""
    params = {"LANES": 2, "WARPS": 1, "REGS": 15, "PREDS": 7, "MEM_WORDS": 32,
              "PROG_WORDS": 64, "PARAM_WORDS": 4}
    # the plan, unverified (the whole machine's plan is verified in whole_machine_plan)
    plan = compile("specs/qwengpu.hdl", "min", params=params, stop_after="plan",
                   check=False).plan
    protocol = plan.protocol
    assert protocol.write_ports == 2 and protocol.port_when == ((("mwen", 1),),)
    assert "tok.lane" not in plan.values and len(plan.values["next.lane"].domain) == 2
    lane = next(op for op in plan.ops if op.outputs == ["next.lane"]).work
    # mid-field positions name their field's lane; the first byte of an optional field a table
    assert {operand[1] for _, operand in lane.arms if operand[0] == "c"} == {0, 1}
    assert any(operand[0] == "v" for _, operand in lane.arms)
