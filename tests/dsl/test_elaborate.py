"""Elaboration: parameters, constants, types, enums, loops, arrays, functions, match, stages,
and the shape of the netlist it produces."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwengpu.dsl.elaborate import elaborate_source, load_design
from qwengpu.dsl.netlist import format_design, verify_design
from qwengpu.errors import HdlError

SPECS = sorted((Path(__file__).resolve().parents[2] / "specs").glob("*.hdl"))


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_every_shipped_spec_elaborates_and_verifies(path):
    design = load_design(path)
    verify_design(design)
    assert design.record and design.stop is not None


def test_qwengpu_spec_has_the_state_and_numbers_of_docs_isa():
    design = load_design(SPECS[0].parent / "qwengpu.hdl")
    assert design.params == {"LANES": 4, "REGS": 15, "PREDS": 7, "MEM_WORDS": 126,
                             "PARAM_WORDS": 8, "PROG_WORDS": 128, "WARPS": 8,
                             "SHARED_WORDS": 64, "LOCAL_WORDS": 16}
    shapes = {name: (m.shape, m.width) for name, m in design.memories.items()}
    assert shapes == {"prog": ((128,), 64), "mem": ((126,), 32), "params": ((8,), 32),
                      "regs": ((8, 4, 15), 32), "preds": ((8, 4, 7), 1),
                      "pc": ((8, 4), 7), "live": ((8, 4), 1), "warp_ctaid": ((8,), 32),
                      "warp_tid0": ((8,), 32), "warp_block": ((8,), 3),
                      "warp_shared": ((8,), 7), "thread_local": ((8, 4), 7),
                      "waiting": ((8,), 1)}
    registers = {name: (r.width, r.reset) for name, r in design.registers.items()}
    assert registers == {"ntid": (32, 0), "nctaid": (32, 0), "last_warp": (3, 7),
                         "halted": (1, 0), "trap": (3, 0), "shared_words": (8, 0),
                         "local_words": (8, 0)}
    assert [stage.name for stage in design.stages] == ["fetch", "decode", "execute",
                                                       "writeback"]
    assert len(design.enums["Op"]) == 50
    widths = {f.name: f.width for f in design.record}
    assert widths == {"warp": 3, "pc": 7, "active": 4, "exec": 4, "op": 6, "rd": 4, "rwen": 4,
                      **{f"rval{i}": 32 for i in range(4)}, "pd": 3, "pwen": 4, "pval": 4,
                      "mwen": 4, **{f"maddr{i}": 7 for i in range(4)},
                      **{f"mval{i}": 32 for i in range(4)}, "taken": 4, "exited": 4, "released": 1,
                      "trap": 3, "trap_lane": 2}


def test_parameter_overrides_change_the_machine():
    design = load_design(SPECS[0].parent / "qwengpu.hdl", {"LANES": 8, "WARPS": 16})
    assert design.memories["regs"].shape == (16, 8, 15)
    assert {f.name: f.width for f in design.record}["warp"] == 4
    assert "rval7" in {f.name for f in design.record}


def test_unknown_parameter_override_is_rejected():
    with pytest.raises(HdlError, match="bad parameter: the spec has no parameter LANEZ"):
        load_design(SPECS[0].parent / "qwengpu.hdl", {"LANEZ": 8})


COUNTER_NETLIST = """\
machine counter
param WIDTH = 8
param LIMIT = 10
register count : u8 = 0
register done : u1 = 0
stage count_up
  %0 = register done : u1
  %1 = register count : u8
  %2 = const 1 : u8
  %3 = add %1, %2 : u8
  %4 = const 1 : u1
  %5 = const 10 : u8
  %6 = eq %1, %5 : u1
write count <= %3 when %4
write done <= %4 when %6
emit count = %1 : u8
stop when %0
"""


def test_counter_netlist_text():
    design = load_design(SPECS[0].parent / "counter.hdl")
    assert format_design(design, with_locations=False) == COUNTER_NETLIST
    assert "@" in format_design(design)


def elaborate(text: str, **overrides):
    design = elaborate_source(text, "t.hdl", overrides)
    verify_design(design)
    return design


def ops(design) -> list[str]:
    return [node.op for node in design.nodes]


def test_constant_expressions_fold_completely():
    design = elaborate("""
param N = 6;
const BITS = clog2(N) + max(1, 2) * 3 - (N % 4) - (N / 4);
register r : u(BITS);
stage s { emit r = r + (BITS << 2 >> 1 == 16 ? 1 : 2); }
""")
    assert design.constants == {"BITS": 3 + 6 - 2 - 1}
    assert design.registers["r"].width == 6
    # BITS << 2 >> 1 == 12, so the ternary picks 2 at elaboration time: no mux.
    assert "mux" not in ops(design)
    const = [n for n in design.nodes if n.op == "const"]
    assert [(n.value, n.width) for n in const] == [(2, 6)]


def test_operators_with_all_constant_operands_are_folded():
    design = elaborate("""
register r : u8;
stage s {
    let a : u8 = 200;
    let b = a + 100;          // both constants: folded to 44
    emit r = r + b;
}
""")
    assert 44 in [n.value for n in design.nodes if n.op == "const"]
    assert ops(design).count("add") == 1
    assert design.nodes[design.nodes[design.record[0].node].args[1]].value == 44


def test_enums_count_up_and_act_as_types():
    design = elaborate("""
enum Op : u3 { A, B, C = 5, D }
register r : Op;
stage s { emit is_d = r == Op.D; }
""")
    assert design.enums == {"Op": {"A": 0, "B": 1, "C": 5, "D": 6}}
    assert design.registers["r"].width == 3


def test_for_loops_arrays_pack_and_dynamic_index():
    design = elaborate("""
memory m[4][2] : u8;
register sel : u2;
stage s {
    for i in 0..4 {
        let doubled = m[i][0] + m[i][0];     // local to one iteration
        let total[i] = doubled + m[i][1];
    }
    emit picked = total[sel], packed = pack(total), row = pack(m[sel]);
}
""")
    record = {f.name: f.width for f in design.record}
    assert record == {"picked": 8, "packed": 32, "row": 16}
    names = [n.name for n in design.nodes if n.name]
    assert "s.total[3]" in names and "s.doubled[i=2]" in names
    # total[sel] with a 2-bit index over 4 elements: 3 muxes, no zero fallback.
    assert ops(design).count("mux") == 3


def test_nodes_know_the_loop_iteration_that_made_them():
    design = elaborate("""
register r : u8;
stage s {
    for i in 0..2 {
        for j in 0..2 { let t[i * 2 + j] = (r + i) ^ j; }
    }
    emit e = r + 1, packed = pack(t);
}
""")
    adds = [n.loop for n in design.nodes if n.op == "add"]
    assert adds == ["i=0,j=0", "i=0,j=1", "i=1,j=0", "i=1,j=1", None]


def test_functions_inline_with_typed_and_untyped_parameters():
    design = elaborate("""
register r : u8;
fn scale(x : u8, factor) : u8 { let y = x * factor; return y + 1; }
fn first(items) : u8 = items[0];
stage s {
    let values[0] = scale(r, 3);
    let values[1] = scale(r, 5);
    emit a = first(values), b = values[1];
}
""")
    assert ops(design).count("mul") == 2
    assert any(n.name == "s.scale.y" for n in design.nodes)


def test_match_lowers_to_a_mux_chain_with_or_of_patterns():
    design = elaborate("""
register op : u3;
stage s {
    let value : u8 = match op { 0 | 1 => 10, 2 => 20, _ => 30 };
    emit value;
}
""")
    assert ops(design).count("mux") == 2
    assert ops(design).count("eq") == 3
    assert ops(design).count("or") == 1


def test_pipeline_registers_are_visible_to_later_stages_only():
    design = elaborate("""
memory prog[4] : u8;
register pc : u2;
stage fetch { out word = prog[pc]; for i in 0..2 { out half[i] = word[4 * i + 3 : 4 * i]; } }
stage execute { let local = half[1]; emit local, word; }
""")
    outputs = [(o.name, o.shape, o.width) for o in design.stages[0].outputs]
    assert outputs == [("word", (), 8), ("half", (2,), 4)]
    assert design.stages[1].outputs == ()
    with pytest.raises(HdlError, match="unknown name 'local'"):
        elaborate("""
register r : u8;
stage a { let local = r; }
stage b { emit x = local; }
""")


def test_writes_carry_index_data_and_enable():
    design = elaborate("""
memory m[2][4] : u8;
register i : u2;
register go : bool;
stage s {
    m[1][i] <= 7 when go;
    m[0][0] <= 9;
    i <= i + 1 when 0;          // a constant-false write disappears
    emit i;
}
""")
    assert [(w.state, len(w.index)) for w in design.writes] == [("m", 2), ("m", 2)]
    first = design.writes[0]
    assert design.nodes[first.data].value == 7
    assert design.nodes[first.enable].op == "register"
    assert design.nodes[design.writes[1].enable].value == 1


def test_signed_builtins_and_extensions():
    design = elaborate("""
register a : u8;
register b : u8;
stage s {
    emit lt = slt(a, b), ge = sge(a, -1), wide = sext(a, 16) * zext(b, 16),
         top = (sext(a, 16) >>> 3)[15:8], lowest = min(a, b), biggest = max(a, 3);
}
""")
    assert {f.name: f.width for f in design.record} == {"lt": 1, "ge": 1, "wide": 16,
                                                         "top": 8, "lowest": 8, "biggest": 8}
    assert {"slt", "sle", "sext", "zext", "sar", "slice", "ult"} <= set(ops(design))


def test_asserts_on_parameters():
    source = 'param N = 3;\nassert N < 4, "N must be below 4";\nregister r : u(N);\n'
    elaborate(source)
    with pytest.raises(HdlError, match="N must be below 4") as caught:
        elaborate(source, N=4)
    assert caught.value.loc.line == 2


def test_qwengpu_write_back_is_carried_by_the_trace():
    """docs/compiler.md: every write's index, data and enable depend only on record fields,
    on state the machine never writes (the program, parameters, launch geometry) and on
    constants."""
    design = load_design(SPECS[0].parent / "qwengpu.hdl")
    fields = {f.node for f in design.record}
    written = {w.state for w in design.writes}
    for write in design.writes:
        stack, seen = [write.enable, write.data, *write.index], set()
        while stack:
            node = design.nodes[stack.pop()]
            if node.id in seen or node.id in fields:
                continue
            seen.add(node.id)
            assert node.op not in ("read", "register") or node.state not in written, \
                f"write to {write.state} at {write.loc} reads {node.state} outside the record"
            stack.extend(node.args)
