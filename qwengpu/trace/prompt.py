"""Prompts: any machine state as tokens of the trace protocol.

    ids = state_prompt(protocol, state)     # state: element -> flat row-major values
    print(prompt_text(ids, protocol))       # one state write per line, for reading

A prompt puts the machine into a state; it never carries anything the machine computes:

    <bos>
    init:warp.b0 init:pc.b0 ... init:trap_lane.b0        record scratch, every slot once
    set.b0=00 ... set.b7=00                               staging scratch, every slot once,
    set.b0=.. ... prog[0]  set.b0=.. prog[1] ...          then every state element that is
                                                          not 0, in design order, row-major,
                                                          then registers
    <trace>                                               the model answers with record 0

(`prompt_text` prints the staging scratch's first writes on the first commit's line.)

A state write stages the value's bytes (`set.bK=VV`), restaging only the bytes that differ
from what the staging scratch holds, then commits it with the token that names the element
and index (qwengpu/trace/protocol.py states the guarantees the emitter may rely on).  Only
elements that are not 0 are written: `<bos>` writes the encoding of 0 into every slot of
every store of a compiled machine (docs/state.md, "Initialisation"), so an element the
prompt leaves out reads 0, as in the interpreter.  A launch's prompt is the state its loader
sets up (`qwengpu.runtime.prompt.build_prompt`).
"""

from __future__ import annotations

from qwengpu.dsl.interp import Simulator
from qwengpu.dsl.netlist import Design
from qwengpu.trace.protocol import ProtocolError, TraceProtocol, commit_text


def check_protocol(protocol: TraceProtocol, design: Design) -> None:
    """The protocol must be the one of the machine (`design`) the state is laid out for."""
    expected = TraceProtocol.from_design(design)
    if protocol != expected:
        raise ProtocolError(
            f"the checkpoint's trace protocol ({protocol!r}) is not the one of the spec "
            f"{design.file} ({expected!r}): it was compiled from a different spec; "
            "recompile it (hdlc compile) or use the spec it was compiled from")


def simulator_state(simulator: Simulator) -> dict[str, list[int]]:
    """A simulator's state elements, flat and row-major (a register as a list of one value),
    as `state_prompt` takes them."""
    state = {name: list(values) for name, values in simulator.memories.items()}
    state.update({name: [value] for name, value in simulator.registers.items()})
    return state


def state_prompt(protocol: TraceProtocol, state: dict[str, list[int]]) -> list[int]:
    """A prompt putting the machine into `state` (every element of the protocol, flat and
    row-major, a register as a list of one value; values must fit their widths)."""
    ids = [protocol.bos_id]
    ids += [protocol.init_token(name, byte) for name, byte in protocol.record_slots]
    staged = [0] * protocol.stage_bytes
    ids += [protocol.stage_token(byte, 0) for byte in range(protocol.stage_bytes)]
    for element in protocol.state:
        values = state.get(element.name)
        if values is None or len(values) != element.size:
            raise ProtocolError(f"the state for the prompt needs {element.size} values for "
                                f"{element.name}, it has "
                                f"{'none' if values is None else len(values)}")
        for index, value in zip(element.indices(), values):
            if not 0 <= value < 1 << element.width:
                raise ProtocolError(f"{commit_text(element.name, index)} = {value} does not "
                                    f"fit {element.width} bits")
            if value == 0:                 # `<bos>` left 0 there
                continue
            for byte in range(element.bytes):
                wanted = value >> (8 * byte) & 0xFF
                if staged[byte] != wanted:
                    ids.append(protocol.stage_token(byte, wanted))
                    staged[byte] = wanted
            ids.append(protocol.commit_token(element.name, index))
    ids.append(protocol.trace_id)
    return ids


def prompt_text(ids: list[int], protocol: TraceProtocol) -> str:
    """The prompt as token texts, one state write per line (for reading, not for running)."""
    lines, line = [], []
    for token_id in ids:
        token = protocol.describe(token_id)
        if token.kind == "control" and line:       # staged bytes no commit followed
            lines.append(" ".join(line))
            line = []
        line.append(token.text)
        last_init = token.kind == "init" and token.slot == len(protocol.record_slots) - 1
        if token.kind in ("commit", "control") or last_init:
            lines.append(" ".join(line))
            line = []
    if line:
        lines.append(" ".join(line))
    return "\n".join(lines)
