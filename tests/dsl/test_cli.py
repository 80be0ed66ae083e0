"""`hdlc check` and `hdlc sim` end to end: output, JSON, and located errors with exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qwengpu.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPEC = str(ROOT / "specs" / "qwengpu.hdl")
PROGRAMS = Path(__file__).with_name("programs")
EXAMPLE_PROGRAM = Path(__file__).parents[2] / "examples" / "asm" / "divergent_loop.s"


def test_check_summarises_the_machine(capsys):
    assert main(["check", SPEC]) == 0
    out = capsys.readouterr().out
    for line in ["lanes per warp        4", "warps                 8",
                 "registers per lane    15", "memory words          126",
                 "opcodes               50 (members of enum Op)",
                 "pipeline stages       4: fetch -> decode -> execute -> writeback"]:
        assert line in out
    assert "regs          memory [8][4][15] x u32" in out
    assert "last_warp     register u3 = 7" in out
    assert "record (28 fields, 345 bits)" in out
    assert "trap_lane:u2" in out


def test_check_with_parameter_override(capsys):
    assert main(["check", SPEC, "-P", "LANES=8", "-P", "WARPS=4"]) == 0
    out = capsys.readouterr().out
    assert "lanes per warp        8" in out and "regs          memory [4][8][15] x u32" in out


def test_check_netlist(capsys):
    assert main(["check", str(ROOT / "specs" / "counter.hdl"), "--netlist",
                 "--no-locations"]) == 0
    assert "%3 = add %1, %2 : u8" in capsys.readouterr().out


def test_bad_parameter_is_a_located_error(capsys):
    assert main(["check", SPEC, "-P", "LANES=3"]) == 1
    err = capsys.readouterr().err
    assert "qwengpu.hdl:35:1: error: LANES must be a power of two" in err
    assert err.rstrip().endswith("^") and "Traceback" not in err


def test_bad_spec_prints_location_line_and_caret(capsys):
    bad = ROOT / "tests" / "errors" / "width_mismatch_operands.hdl"
    assert main(["check", str(bad)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"{bad}:4:20: error: width mismatch: u8 + u4"
    assert lines[1].strip().startswith("let sum = wide + narrow;")
    assert lines[2] == " " * 19 + "^"


def test_malformed_override_is_a_usage_error():
    with pytest.raises(SystemExit) as caught:
        main(["check", SPEC, "-P", "LANES"])
    assert caught.value.code == 2


def test_sim_prints_the_trace_and_the_final_memory(capsys):
    assert main(["sim", SPEC, str(EXAMPLE_PROGRAM)]) == 0
    out = capsys.readouterr().out
    assert "grid 1 x block 8 = 2 warps of 4 lanes" in out
    assert "    0  w0      0  0123    0123  s2r r0, tid" in out
    assert "r0 = [0 1 2 3]" in out
    assert "@p0 bra 9                 taken 0..." in out
    assert "mem[4] = 10 (lane 0)" in out
    assert "exited 0123" in out
    assert "finished: 70 records, no trap" in out
    assert "[  0]           0           1           3           6          10" in out


def test_sim_json(capsys):
    assert main(["sim", SPEC, str(PROGRAMS / "traps_at_the_end.s"), "--json"]) == 1   # a trap
    data = json.loads(capsys.readouterr().out)
    assert data["trap"] == {"code": 3, "name": "misaligned", "warp": 3, "pc": 18, "lane": 1}
    assert data["steps"] == len(data["records"]) and data["warps"] == 4
    assert len(data["memory"]) == 126 and data["memory"][10] == 0xFFFF_FFFF
    assert data["records"][0]["warp"] == 0


def test_sim_reports_a_trap_in_text(capsys):
    assert main(["sim", SPEC, str(PROGRAMS / "traps_at_the_end.s"), "--no-trace"]) == 1
    out = capsys.readouterr().out
    assert "TRAPPED: misaligned in warp 3 at pc 18, lane 1" in out
    assert "w0      0" not in out


def test_sim_program_error_is_located(tmp_path, capsys):
    program = tmp_path / "bad.s"
    program.write_text("    nop\n    add r1, r2\n")
    assert main(["sim", SPEC, str(program)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{program}:2:5: error: add takes 3 operands, got 2")


def test_sim_capacity_error_names_the_program(tmp_path, capsys):
    program = tmp_path / "big.s"
    program.write_text(".grid 3\n.block 12\n    exit\n")
    assert main(["sim", SPEC, str(program)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{program}: error: warps needed by the launch: 9")


def test_sim_endless_loop_is_an_error(tmp_path, capsys):
    program = tmp_path / "loop.s"
    program.write_text("top: bra top\n")
    assert main(["sim", SPEC, str(program), "--max-records", "20"]) == 1
    assert "did not finish within 20 records" in capsys.readouterr().err
