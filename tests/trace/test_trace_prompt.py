"""Prompts of any machine state (qwengpu/trace/prompt.py): `state_prompt` on small machines
against prompts written out by hand from the layout in the module docstring (scratch
initialisation, little-endian staging that restages only changed bytes, one commit per
element that is not 0), `prompt_text`, `simulator_state` and `check_protocol`.  The launch prompt built on
top of these is tested in tests/runtime/test_prompt.py.  (The file is not called
test_prompt.py: that name is tests/runtime's, and pytest imports test files by base name.)"""

from __future__ import annotations

import pytest

from qwengpu.dsl.elaborate import load_design
from qwengpu.dsl.interp import Simulator
from qwengpu.trace.prompt import check_protocol, prompt_text, simulator_state, state_prompt
from qwengpu.trace.protocol import ProtocolError, TraceProtocol

from trace_helpers import SPECS


def machine(name: str):
    design = load_design(SPECS / f"{name}.hdl")
    return design, TraceProtocol.from_design(design)


def test_counter_prompt_by_hand():
    design, protocol = machine("counter")
    ids = state_prompt(protocol, {"count": [5], "done": [1]})
    texts = ["<bos>", "init:count.b0", "set.b0=00", "set.b0=05", "count", "set.b0=01", "done",
             "<trace>"]
    assert ids == [protocol.token_id(text) for text in texts]
    assert prompt_text(ids, protocol) == \
        "<bos>\ninit:count.b0\nset.b0=00 set.b0=05 count\nset.b0=01 done\n<trace>"


def test_a_byte_already_staged_is_not_staged_again():
    design, protocol = machine("counter")
    ids = state_prompt(protocol, {"count": [1], "done": [1]})
    assert prompt_text(ids, protocol).splitlines()[2:] == ["set.b0=00 set.b0=01 count", "done",
                                                           "<trace>"]


def test_tiny_prompt_stages_words_little_endian():
    design, protocol = machine("tiny")
    state = {"prog": [0x1234, 0x1200] + [0] * 14, "regs": [0, 7, 0, 0], "pc": [3],
             "halted": [0]}
    lines = prompt_text(state_prompt(protocol, state), protocol).splitlines()
    assert lines == [
        "<bos>",
        "init:pc.b0 init:op.b0 init:rd.b0 init:value.b0",     # the record's fields, in order
        "set.b0=00 set.b1=00 set.b0=34 set.b1=12 prog[0]",   # u16 words: two staging bytes
        "set.b0=00 prog[1]",                                  # byte 1 still holds 12
        "set.b0=07 regs[1]",                                  # what is 0 is not written:
        "set.b0=03 pc",                                       # <bos> left 0 everywhere
        "<trace>",
    ]


def test_a_state_of_zeros_is_the_scratch_alone():
    design, protocol = machine("tiny")
    state = {"prog": [0] * 16, "regs": [0] * 4, "pc": [0], "halted": [0]}
    assert prompt_text(state_prompt(protocol, state), protocol).splitlines() == [
        "<bos>", "init:pc.b0 init:op.b0 init:rd.b0 init:value.b0", "set.b0=00 set.b1=00",
        "<trace>"]


def test_state_prompt_refuses_incomplete_or_wide_state(protocol):
    state = simulator_state(Simulator(load_design(SPECS / "qwengpu.hdl")))
    state_prompt(protocol, state)
    with pytest.raises(ProtocolError, match="needs 126 values for mem, it has none"):
        state_prompt(protocol, {k: v for k, v in state.items() if k != "mem"})
    with pytest.raises(ProtocolError, match=r"pc\[0\]\[1\] = 128 does not fit 7 bits"):
        state_prompt(protocol, {**state, "pc": [0, 128] + [0] * 30})
    with pytest.raises(ProtocolError, match="needs 1 values for halted, it has 2"):
        state_prompt(protocol, {**state, "halted": [0, 0]})


def test_simulator_state_is_flat_with_registers_as_lists_of_one():
    design, _ = machine("counter")
    simulator = Simulator(design)
    simulator.run(3)
    assert simulator_state(simulator) == {"count": [3], "done": [0]}
    design, _ = machine("tiny")
    simulator = Simulator(design)
    simulator.write_memory("regs", [2], 9)
    assert simulator_state(simulator) == {"prog": [0] * 16, "regs": [0, 0, 9, 0], "pc": [0],
                                          "halted": [0]}


def test_check_protocol_wants_the_protocol_of_the_design():
    counter, counter_protocol = machine("counter")
    tiny, tiny_protocol = machine("tiny")
    check_protocol(counter_protocol, counter)
    with pytest.raises(ProtocolError, match="compiled from a different spec"):
        check_protocol(tiny_protocol, counter)
