"""A launch's outcome from its trace: token ids -> records (`qwengpu.trace.decode`) -> final
memory, buffers and trap.

Decoding reads what the trace says; it computes nothing the machine computes.  The final
memory is the launch's memory image with every record's stores applied in record order and,
within a record, in lane order (`mwen`, `maddrN`, `mvalN`, docs/isa.md "A record").  A trap
record names its fault; the registers it reports are rebuilt from the records' register
writes.

    result = decode_launch(launch, ids, protocol)     # ids: trace, or prompt + trace
    result = decode_launch(launch, ids, protocol, machine)   # a launch laid out for `machine`
    result.buffers, result.records, result.trap, result.tokens

Every stream that is not a well-formed trace of the launch is a `DecodeError` naming the
position (an index into the ids given) and what was expected there, or the record and the
rule of a trace it breaks (`qwengpu.runtime.trace_rules`: another launch's trace, a forged
record, a lone `<eos>`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from qwengpu.runtime.launch import Launch, LaunchResult, describe_trap
from qwengpu.runtime.machine_state import Machine
from qwengpu.runtime.prompt import build_prompt
from qwengpu.runtime.trace_rules import check_trace_rules
from qwengpu.trace.decode import DecodeError, decode_trace, split_prompt
from qwengpu.trace.protocol import TraceProtocol


@dataclass
class DecodedLaunch(LaunchResult):
    """A launch's outcome read from its trace; `tokens` counts the trace tokens (eos
    included, the prompt not), `prompt_tokens` the prompt's; when a model produced them,
    `engine` names what ran it, `seconds` is the generation time and `first_token_seconds`
    the part of it before the first id after the prompt (the prefill) (JSON: all four,
    after `tokens`; the last as `prefill_seconds`).  `ids` are the trace's ids themselves
    (after the prompt, `<eos>` included), which the trace page shows record by record."""

    tokens: int = 0
    prompt_tokens: int = 0
    seconds: float | None = None
    first_token_seconds: float | None = None
    engine: str | None = None
    ids: list[int] | None = None

    def as_json(self) -> dict:
        data = super().as_json()
        result = {"buffers": data["buffers"], "records": data["records"],
                  "tokens": self.tokens}
        if self.seconds is not None:
            result["engine"] = self.engine
            result["prompt_tokens"] = self.prompt_tokens
            result["seconds"] = round(self.seconds, 3)
            if self.first_token_seconds is not None:
                result["prefill_seconds"] = round(self.first_token_seconds, 3)
        result["trap"] = data["trap"]
        return result


def _check_prompt(prompt: list[int], launch: Launch, protocol: TraceProtocol,
                  machine: Machine | None) -> None:
    expected = build_prompt(launch, protocol, machine)
    for position, (want, got) in enumerate(zip(expected, prompt)):
        if want != got:
            got_text = protocol.describe(got).text if 0 <= got < protocol.vocab_size else \
                f"token id {got}"
            raise DecodeError(f"position {position}: the stream's prompt is not the prompt of "
                              f"this launch: expected {protocol.describe(want).text}, got "
                              f"{got_text}")
    if len(prompt) != len(expected):
        raise DecodeError(f"position {len(prompt) - 1}: the stream's prompt has {len(prompt)} "
                          f"tokens, the prompt of this launch {len(expected)}")


def launch_outcome(launch: Launch, records: list[dict[str, int]], tokens: int
                   ) -> DecodedLaunch:
    """Final memory and trap of a launch from its decoded records (see the module docstring),
    once they keep every rule a trace of the launch keeps (`qwengpu.runtime.trace_rules`)."""
    check_trace_rules(launch, records)
    lanes, words = launch.limits.lanes, launch.limits.memory_words
    memory = list(launch.memory)
    registers: dict[tuple[int, int, int], int] = {}
    for number, record in enumerate(records):
        for lane in range(lanes):
            if record["mwen"] >> lane & 1:
                word = record[f"maddr{lane}"]
                if word >= words:
                    raise DecodeError(f"record {number}: lane {lane} stores to word {word}, "
                                      f"outside the {words} words of memory")
                memory[word] = record[f"mval{lane}"]
            if record["rwen"] >> lane & 1:
                registers[record["warp"], lane, record["rd"]] = record[f"rval{lane}"]
    trap = None
    if records and records[-1].get("trap"):
        trap = describe_trap(launch, len(records) - 1, records[-1],
                             lambda warp, lane, index: registers.get((warp, lane, index), 0),
                             records)
    return DecodedLaunch(launch, memory, records, trap, tokens=tokens)


def decode_launch(launch: Launch, ids: list[int], protocol: TraceProtocol,
                  machine: Machine | None = None) -> DecodedLaunch:
    """Decode a stream (a bare trace, or the launch's prompt followed by its trace); the
    prompt is checked against the one of `machine` (default specs/qwengpu.hdl), the machine
    the launch was laid out for."""
    prompt, trace = split_prompt(ids, protocol)
    if prompt:
        _check_prompt(prompt, launch, protocol, machine)
    records = decode_trace(trace, protocol, offset=len(prompt))
    result = launch_outcome(launch, records, tokens=len(trace))
    result.prompt_tokens, result.ids = len(prompt), list(trace)
    return result


def read_token_file(path: str) -> list[int]:
    """Ids from a JSON file: a list of ints, `{"ids": [...]}` or `{"input_ids": [...]}`
    (a batch of one, `[[...]]`, is accepted too)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise DecodeError(f"{path}: token file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DecodeError(f"{path}: cannot read the token file: {error}") from None
    if isinstance(data, dict):
        keys = [key for key in ("ids", "input_ids") if key in data]
        if len(keys) != 1:
            raise DecodeError(f'{path}: expected a JSON list of token ids or an object with '
                              f'"ids" (or "input_ids"), got keys {sorted(data)}')
        data = data[keys[0]]
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], list):
        data = data[0]
    if not isinstance(data, list):
        raise DecodeError(f"{path}: expected a list of token ids")
    for position, value in enumerate(data):
        if not isinstance(value, int) or isinstance(value, bool):
            raise DecodeError(f"{path}: position {position}: {value!r} is not a token id")
    return data
