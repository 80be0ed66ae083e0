"""The assembler of `hdlc sim`: round trip with `format_instruction`, labels, directives and
located errors."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from qwengpu.isa import (BINARY_ALU, Cmp, Instruction, Op, PT, RZ, Special, format_instruction)
from qwengpu.isa import DEFAULT_ISA, Space
from qwengpu.isa.asm import MNEMONICS, AsmError, assemble

REG_B_OPS = sorted(BINARY_ALU)


def canonical_examples() -> list[Instruction]:
    """At least one instruction per opcode, in each operand form it has."""
    examples = [Instruction(Op.INVALID), Instruction(Op.NOP), Instruction(Op.EXIT),
                Instruction(Op.ABS, d=1, a=2)]
    for op in REG_B_OPS:
        examples += [Instruction(op, d=3, a=4, b=5),
                     Instruction(op, d=14, a=RZ, bimm=True, imm=0xFFFF_FFFF),
                     Instruction(op, d=0, a=1, bimm=True, imm=0x8000_0000)]
    examples += [Instruction(Op.MAD, d=1, a=2, b=3, c=4),
                 Instruction(Op.MAD, d=1, a=2, bimm=True, imm=7, c=RZ),
                 Instruction(Op.FADD2, d=1, a=2, b=3, c=4),
                 Instruction(Op.FADD2, d=1, a=2, bimm=True, imm=0x3F80_0000, c=5)]
    for code in range(16):
        examples.append(Instruction(Op.SETP, d=code % 8, a=2, b=3, c=code))
    examples.append(Instruction(Op.SETP, d=0, a=2, bimm=True, imm=0xFFFF_FFFB, c=Cmp.LT))
    examples += [Instruction(Op.SELP, d=1, a=2, b=3, c=4),
                 Instruction(Op.SELP, d=1, a=2, bimm=True, imm=9, c=PT)]
    for op in (Op.PAND, Op.POR, Op.PXOR):
        examples.append(Instruction(op, d=1, a=PT, b=6))
    examples += [Instruction(Op.PNOT, d=6, a=0),
                 Instruction(Op.LD, d=1, a=2, imm=8), Instruction(Op.LD, d=1, a=RZ, imm=0),
                 Instruction(Op.LD, d=1, a=2, imm=0xFFFF_FFFC),
                 Instruction(Op.ST, a=2, b=3, imm=4), Instruction(Op.ST, a=2, b=3, imm=0),
                 Instruction(Op.BRA, imm=17), Instruction(Op.BRA, imm=0xFFFF_FFFF),
                 Instruction(Op.LDP, d=5, imm=3), Instruction(Op.LDP, d=5, imm=4000)]
    for special in list(Special) + [8, 99]:
        examples.append(Instruction(Op.S2R, d=2, imm=int(special)))
    examples += [Instruction(Op.VOTE, d=3, a=PT), Instruction(Op.VOTE, d=3, a=2),
                 Instruction(Op.BAR)]
    for space in list(Space) + [3]:
        examples += [Instruction(Op.LD, d=1, a=2, imm=8, space=int(space)),
                     Instruction(Op.ST, a=2, b=3, imm=4, space=int(space)),
                     Instruction(Op.ST_U8, a=2, b=3, imm=5, space=int(space)),
                     Instruction(Op.ST_U16, a=2, b=3, imm=6, space=int(space))]
        for op in DEFAULT_ISA.opcodes_in("is_atomic"):
            examples.append(Instruction(Op[op], d=1, a=2, b=3, imm=12, space=int(space),
                                        c=4 if op == "ATOM_CAS" else 0))
    return examples


def with_guards(instruction: Instruction) -> list[Instruction]:
    from dataclasses import replace
    return [instruction, replace(instruction, pg=0), replace(instruction, pg=6, pn=True),
            replace(instruction, pg=PT, pn=True)]


EXAMPLES = [guarded for example in canonical_examples() for guarded in with_guards(example)]


def test_examples_cover_every_opcode():
    assert {example.op for example in EXAMPLES} == set(Op)
    assert {op.value for op in Op} == set(DEFAULT_ISA.by_value)


@pytest.mark.parametrize("instruction", EXAMPLES, ids=format_instruction)
def test_format_then_assemble_round_trips(instruction):
    text = format_instruction(instruction)
    program = assemble(text + "\n", "roundtrip.s")
    assert program.instructions == [instruction]
    assert program.instructions[0].encode() == instruction.encode()


@given(st.sampled_from(REG_B_OPS), st.integers(0, 14), st.integers(0, 15),
       st.integers(0, 0xFFFF_FFFF), st.integers(0, 7), st.booleans())
def test_round_trip_of_immediate_forms(op, d, a, imm, pg, pn):
    instruction = Instruction(op, d=d, a=a, bimm=True, imm=imm, pg=pg, pn=pn)
    assert assemble(format_instruction(instruction)).instructions == [instruction]


def test_program_round_trips_through_its_listing():
    listing = "\n".join(format_instruction(i) for i in EXAMPLES)
    assert assemble(listing).instructions == EXAMPLES


def test_labels_comments_and_directives():
    program = assemble("""
; a comment line
// another
.grid 3
.block 12
.param 0 0x10
.param 2 -1
.mem 4 1 -2 0x30
start:  s2r r0, tid        ; trailing comment
loop:
back:   @!p0 add r1, r1, -1
        bra loop
        bra start
        ld r2, [r1+8]
        st [r1-4], r2
        ld r3, [0x10]
        exit
""", "demo.s")
    assert program.grid == 3 and program.block == 12
    assert program.params == [16, 0, 0xFFFF_FFFF]
    assert program.memory == [0, 0, 0, 0, 1, 0xFFFF_FFFE, 0x30]
    assert program.labels == {"start": 0, "loop": 1, "back": 1}
    assert program.instructions[2] == Instruction(Op.BRA, imm=1)
    assert program.instructions[3] == Instruction(Op.BRA, imm=0)
    assert program.instructions[1] == Instruction(Op.ADD, d=1, a=1, bimm=True,
                                                  imm=0xFFFF_FFFF, pg=0, pn=True)
    assert program.instructions[6] == Instruction(Op.LD, d=3, a=RZ, imm=16)
    assert program.lines == [9, 11, 12, 13, 14, 15, 16, 17]


def test_defaults_are_one_block_of_one_warp():
    program = assemble("exit")
    assert (program.grid, program.block, program.params, program.memory) == (1, 4, [], [])


@pytest.mark.parametrize("source, message, line, column", [
    ("add r1, r2", "add takes 3 operands, got 2", 1, 1),
    ("  frob r1", "unknown instruction 'frob'", 1, 3),
    ("add r1, p2, 3", "expected a register (r0..r14 or rz), got 'p2'", 1, 9),
    ("add r15, r1, 2", "expected a register", 1, 5),
    ("setp.lt r1, r2, r3", "expected a predicate (p0..p6 or pt), got 'r1'", 1, 9),
    ("nop\nbra nowhere", "unknown label 'nowhere'", 2, 5),
    ("x: nop\nx: nop", "label 'x' is already defined", 2, 1),
    ("ld r1, r2", "expected an address like [r1+4]", 1, 8),
    ("add r1, r2, 0x100000000", "does not fit in 32 bits", 1, 13),
    ("s2r r1, clock", "unknown special register 'clock'", 1, 9),
    (".grid 0", ".grid must be at least 1", 1, 7),
    (".block 4\n.block 8", ".block is already given", 2, 1),
    (".mem 0 1\n.mem 0 2", "memory word 0 is already set", 2, 8),
    (".param 1", ".param takes 2 numbers, got 1", 1, 1),
    (".stack 4", "unknown directive .stack", 1, 2),
    ("add r1,, r2", "unexpected ','", 1, 8),
    ("add r1, r2, r3 % 2", "unexpected character '%'", 1, 16),
    ("add r1, r2, 0x_", "unexpected 'x_'", 1, 14),
    ("@p7 nop", "expected a predicate", 1, 2),
    ("bra -1", "a branch target must be 0..", 1, 5),
])
def test_errors_are_located(source, message, line, column):
    with pytest.raises(AsmError) as caught:
        assemble(source, "bad.s")
    error = caught.value
    assert message in error.message
    assert (error.loc.file, error.loc.line, error.loc.column) == ("bad.s", line, column)
    rendered = error.render()
    assert rendered.startswith(f"bad.s:{line}:{column}: error: ")
    assert rendered.splitlines()[-1] == " " * (column - 1) + "^"


def test_every_mnemonic_assembles():
    operands = {"rd": "r1", "ra": "r2", "B": "r3", "rc": "r4", "pd": "p1", "pa": "p2",
                "pb": "p3", "pc": "p4", "[ra+imm]": "[r5+4]", "rb": "r6", "target": "0",
                "{imm:Special}": "tid", "imm": "1"}
    for name, (opcode, fixed) in MNEMONICS.items():
        text = name + " " + ", ".join(operands[o.text] for o in opcode.syntax.operands)
        instruction = assemble(text).instructions[0]
        assert instruction.op == Op[opcode.name]
        assert all(getattr(instruction, field) == value for field, value in fixed.items())
