"""docs/hdl.md's walkthrough, done: a copy of specs/qwengpu.hdl grows an ALU instruction
(`andn rd, ra, B`: d = a & ~B) by three edits to the spec and nothing else; the copy's ISA
has it (opcode, assembly form, class), the assembler and the listing take it, the reference
interpreter runs it, and a small instance of the copy compiled into a Qwen3.5 checkpoint runs
it inside the model, token for token as the interpreter (the sparse engine writes the ids;
it is held to stock transformers on every compiled test machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compile_helpers import compile_to, engine_generate, expected_trace
from qwengpu.cli import main
from qwengpu.isa import format_instruction
from qwengpu.isa.asm import assemble
from qwengpu.isa.machine import MachineIsa
from qwengpu.runtime.machine_state import load_machine, new_simulator
from qwengpu.trace.prompt import simulator_state, state_prompt

pytestmark = pytest.mark.heavy     # one worker runs the heavy files in turn: tests/workers.py

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "qwengpu.hdl"
# The three edits of docs/hdl.md, "Adding an instruction": the opcode with its assembly form,
# its meaning in the ALU, and its class (it writes register d).
EDITS = [
    ('    FADD2 = 49 "fadd.s2 rd, ra, B, rc", // d = a + B, rounded, from c = fadd.s1 a, B\n',
     '    FADD2 = 49 "fadd.s2 rd, ra, B, rc", // d = a + B, rounded, from c = fadd.s1 a, B\n'
     '    ANDN = 50 "andn rd, ra, B",         // d = a & ~B\n'),
    ("        Op.XOR     => a ^ b,\n", "        Op.XOR     => a ^ b,\n        Op.ANDN    => a & ~b,\n"),
    ("| Op.FADD2 => 1,", "| Op.FADD2 | Op.ANDN => 1,"),
    ("out bad_opcode = (op == Op.INVALID) | (op > Op.FADD2);",
     "out bad_opcode = (op == Op.INVALID) | (op > Op.ANDN);"),
]
SMALL = {"LANES": 1, "WARPS": 1, "REGS": 4, "PREDS": 2, "MEM_WORDS": 8, "PROG_WORDS": 16,
         "PARAM_WORDS": 1}
PROGRAM = """\
.block 1
    add r0, rz, 0x00FF00FF
    add r1, rz, 0x0F0F0F0F
    andn r2, r0, r1             ; 0x00F000F0
    andn r3, r0, -256           ; 0x000000FF
    st [rz+0], r2
    st [rz+4], r3
    exit
"""


@pytest.fixture(scope="module")
def grown_spec(tmp_path_factory) -> Path:
    text = SPEC.read_text()
    for old, new in EDITS:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path_factory.mktemp("grown") / "qwengpu_andn.hdl"
    path.write_text(text)
    return path


def test_the_grown_isa_has_the_instruction(grown_spec):
    isa = load_machine(grown_spec, SMALL).isa
    andn = isa.opcodes["ANDN"]
    assert andn.value == 50 and andn.syntax.text == "andn rd, ra, B"
    assert andn.classes == {"writes_register"}
    program = assemble(PROGRAM, "andn.s", isa)
    assert [format_instruction(i, isa) for i in program.instructions][2:4] == \
        ["andn r2, r0, r1", "andn r3, r0, -256"]
    # the default machine does not have it
    with pytest.raises(Exception, match="unknown instruction 'andn'"):
        assemble(PROGRAM, "andn.s")


def test_the_interpreter_runs_it(grown_spec, tmp_path, capsys):
    program = tmp_path / "andn.s"
    program.write_text(PROGRAM)
    capsys.readouterr()
    assert main(["sim", str(grown_spec), str(program), "--json"] +
                [f"-P{name}={value}" for name, value in SMALL.items()]) == 0
    import json
    memory = json.loads(capsys.readouterr().out)["memory"]
    assert memory[:2] == [0x00FF00FF & ~0x0F0F0F0F, 0x00FF00FF & ~(-256 & 0xFFFFFFFF)]


def test_the_compiled_model_runs_it(grown_spec, tmp_path):
    compiled = compile_to(str(grown_spec), tmp_path / "model", params=SMALL)
    machine = load_machine(grown_spec, SMALL)
    program = assemble(PROGRAM, "andn.s", machine.isa)
    sim = new_simulator(machine, program.instructions, [], [], 1, 1)
    prompt = state_prompt(compiled.protocol, simulator_state(sim))
    expected = expected_trace(compiled, sim)
    assert engine_generate(tmp_path / "model", prompt, len(expected)) == expected
