"""The launch prompt: replayed by a small independent reader, it must hold the launch.

The expected state comes from the launch file itself (buffers laid out from word 0 in file
order, grid, block) and docs/isa.md's "State" table, not from the code under test; only the
machine code is taken from the loader (`launch.instructions`), since encoding PTX is not the
prompt's job.  The generic layer below it (`state_prompt`, `prompt_text`, ...) is tested in
tests/trace/test_trace_prompt.py.
"""

from __future__ import annotations

import json
import math
import struct

import pytest

from runtime_helpers import IDS, RUNNABLE, VECTOR_ADD, launch_of
from qwengpu.trace.protocol import ProtocolError, TraceProtocol
from qwengpu.cli import main
from qwengpu.dsl.elaborate import load_design
from qwengpu.runtime.machine_state import DEFAULT_SPEC
from qwengpu.runtime.prompt import build_prompt, initial_state
from qwengpu.trace.prompt import prompt_text, state_prompt


def replay(ids, protocol):
    """Apply a prompt's writes as docs/trace.md describes them: {(name, index): value}, every
    element 0 after `<bos>` until a commit token writes it."""
    assert ids[0] == protocol.bos_id and ids[-1] == protocol.trace_id
    assert ids.count(protocol.trace_id) == 1 and ids.count(protocol.bos_id) == 1
    staged, scratch, written = {}, set(), set()
    state = {(element.name, index): 0 for element in protocol.state
             for index in element.indices()}
    for token_id in ids[1:-1]:
        token = protocol.describe(token_id)
        if token.kind == "init":
            scratch.add(token.slot)
        elif token.kind == "stage":
            staged[token.byte] = token.value
        else:
            assert token.kind == "commit", token.text
            # every slot written before the first commit
            assert scratch == set(range(len(protocol.record_slots)))
            assert set(staged) == set(range(protocol.stage_bytes))
            element = protocol.state_by_name[token.name]
            value = sum(staged[b] << (8 * b) for b in range(element.bytes))
            assert value < 1 << element.width, f"{token.text}: stray bits above the width"
            assert (token.name, token.index) not in written, f"{token.text} written twice"
            assert value != 0, f"{token.text}: writes the 0 that <bos> left there"
            written.add((token.name, token.index))
            state[token.name, token.index] = value
    return state


def buffer_words(values) -> list[int]:
    """A launch file's buffer as words: integers mod 2^32, {"f32": [...]} as binary32 bits
    (struct rounds the example's values, none of which lies near a tie)."""
    if isinstance(values, dict):
        named = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
        return [struct.unpack("<I", struct.pack("<f", named.get(value, value)
                                                 if isinstance(value, str) else value))[0]
                for value in values["f32"]]
    return [value % 2**32 for value in values]


def buffer_bases(launch_file: dict, align_words: int = 1) -> dict[str, int]:
    """docs/launch.md, "Memory layout": buffers in file order from word 0, each at a multiple
    of the kernel's widest access."""
    bases, word = {}, 0
    for name, values in launch_file["buffers"].items():
        bases[name] = word = -(-word // align_words) * align_words
        word += len(buffer_words(values))
    return bases


def expected_state(launch_file: dict, instructions, shared_words=0, local_words=0,
                   local_align_words=1, buffer_align_words=1) -> dict:
    grid, block = (shape if isinstance(shape, int) else math.prod(shape)
                   for shape in (launch_file["grid"], launch_file["block"]))
    memory = [0] * 126
    bases = buffer_bases(launch_file, buffer_align_words)
    for (name, values), base in zip(launch_file["buffers"].items(), bases.values()):
        words = buffer_words(values)
        memory[base:base + len(words)] = words
    end = max((base + len(buffer_words(launch_file["buffers"][name]))
               for name, base in bases.items()), default=0)
    program = [i.encode() for i in instructions] + [0] * (128 - len(instructions))
    per_block = -(-block // 4)
    # docs/launch.md, "Memory layout": a window a block of shared memory after the buffers,
    # then one a thread of local memory from a multiple of the kernel's local alignment
    local_start = -(-(end + grid * shared_words) // local_align_words) * local_align_words
    state = {("prog", (i,)): word for i, word in enumerate(program)}
    state.update({("mem", (i,)): word for i, word in enumerate(memory)})
    for warp in range(8):
        used = warp < grid * per_block
        state["warp_ctaid", (warp,)] = warp // per_block if used else 0
        state["warp_tid0", (warp,)] = (warp % per_block) * 4 if used else 0
        state["warp_block", (warp,)] = warp // per_block if used else 0
        state["warp_shared", (warp,)] = \
            end + (warp // per_block) * shared_words if used and shared_words else 0
        state["waiting", (warp,)] = 0
        for lane in range(4):
            tid = (warp % per_block) * 4 + lane
            state["live", (warp, lane)] = int(used and tid < block)
            thread = (warp // per_block) * block + tid
            state["thread_local", (warp, lane)] = \
                local_start + thread * local_words if used and tid < block and local_words else 0
            state["pc", (warp, lane)] = 0
            for reg in range(15):
                state["regs", (warp, lane, reg)] = 0
            for pred in range(7):
                state["preds", (warp, lane, pred)] = 0
    state.update({("ntid", ()): block, ("nctaid", ()): grid, ("last_warp", ()): 7,
                  ("shared_words", ()): shared_words, ("local_words", ()): local_words,
                  ("halted", ()): 0, ("trap", ()): 0})
    return state


@pytest.mark.parametrize("example", RUNNABLE, ids=IDS)
def test_prompt_holds_the_launch(example, protocol):
    launch = launch_of(example)
    ids = build_prompt(launch, protocol)
    assert ids == build_prompt(launch, protocol)           # deterministic
    assert len(ids) < 2048
    state = replay(ids, protocol)
    launch_file = json.loads((example / "launch.json").read_text())
    # the words of shared and local memory are the kernel's (the loader's); where they lie is
    # the layout above
    expected = expected_state(launch_file, launch.instructions, launch.windows.shared_words,
                              launch.windows.local_words,
                              max(launch.program.local_alignment // 4, 1),
                              launch.program.buffer_alignment // 4)
    params = {key: value for key, value in state.items() if key[0] == "params"}
    assert {key: value for key, value in state.items() if key[0] != "params"} == expected
    assert len(params) == 8
    # scalar arguments appear among the parameter words; a buffer passes its byte address
    bases = {name: 4 * word for name, word in
             buffer_bases(launch_file, launch.program.buffer_alignment // 4).items()}
    for arg in launch_file["args"]:
        value = bases[arg] if isinstance(arg, str) else arg % 2**32
        assert value in params.values(), f"argument {arg!r} missing from params"


def test_vector_add_parameters_exactly(protocol):
    state = replay(build_prompt(launch_of(VECTOR_ADD.parent), protocol), protocol)
    # a, b, c at words 0, 16, 32 (bytes 0, 64, 128), then n = 14
    assert [state["params", (i,)] for i in range(4)] == [0, 64, 128, 14]


def test_prompt_is_short_and_readable(protocol):
    ids = build_prompt(launch_of(VECTOR_ADD.parent), protocol)
    text = prompt_text(ids, protocol)
    lines = text.splitlines()
    assert lines[0] == "<bos>" and lines[-1] == "<trace>"
    assert lines[1].startswith("init:warp.b0 ") and lines[1].endswith("init:taken.b0")
    assert lines[2].endswith(" prog[0]")
    nonzero = sum(1 for value in initial_state(launch_of(VECTOR_ADD.parent)).values()
                  for word in value if word)
    assert 40 < nonzero < 1109                            # of 1109 state elements
    assert len(lines) == 1 + 1 + nonzero + 1              # one line per element that is not 0
    assert len(ids) <= 600                                # issue: the prompt halved (1,290 before)


def test_protocol_of_another_spec_is_refused(protocol):
    wide = TraceProtocol.from_design(load_design(DEFAULT_SPEC, {"LANES": 8, "WARPS": 4}))
    with pytest.raises(ProtocolError, match="different spec"):
        build_prompt(launch_of(VECTOR_ADD.parent), wide)


def test_hdlc_launch_writes_the_prompt(protocol, tmp_path, capsys):
    out = tmp_path / "prompt.json"
    assert main(["launch", str(VECTOR_ADD), "-o", str(out)]) == 0
    ids = json.loads(out.read_text())["input_ids"]
    assert ids == build_prompt(launch_of(VECTOR_ADD.parent), protocol)
    assert "prompt tokens" in capsys.readouterr().err
    checkpoint = tmp_path / "ckpt"
    protocol.save(checkpoint)
    assert main(["launch", str(VECTOR_ADD), "--model", str(checkpoint)]) == 0
    assert json.loads(capsys.readouterr().out) == {"input_ids": ids}
    assert main(["launch", str(VECTOR_ADD), "--text"]) == 0
    assert capsys.readouterr().out.startswith("<bos>\ninit:warp.b0")


def test_hdlc_launch_errors(tmp_path, capsys):
    assert main(["launch", str(tmp_path / "missing.json")]) == 1
    assert "launch file not found" in capsys.readouterr().err
    assert main(["launch", str(VECTOR_ADD), "--model", str(tmp_path)]) == 1
    assert "not a compiled QwenGPU checkpoint" in capsys.readouterr().err
    too_big = VECTOR_ADD.parents[1] / "too_big" / "launch.json"
    assert main(["launch", str(too_big)]) == 1
    assert "registers" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main(["launch", str(VECTOR_ADD), "-o", str(tmp_path / "file" / "p.json")]) == 1
    assert "is a file, not a folder" in capsys.readouterr().err


def test_hdlc_launch_makes_missing_folders(tmp_path, capsys):
    target = tmp_path / "new" / "deeper" / "prompt.json"
    assert main(["launch", str(VECTOR_ADD), "-o", str(target)]) == 0
    assert json.loads(target.read_text())["input_ids"]


def test_build_prompt_is_the_prompt_of_the_initial_state(protocol):
    launch = launch_of(VECTOR_ADD.parent)
    assert state_prompt(protocol, initial_state(launch)) == build_prompt(launch, protocol)
