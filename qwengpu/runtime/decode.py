"""Decoding a generated trace: token ids -> records -> final memory and buffers.

Decoding reads what the trace says; it computes nothing the machine computes.  Each record is
its fields' byte tokens in emit order, then its port tokens (`commit:port1` ..., only for a
machine with several writes to one store per step; qwengpu/backend_torch/protocol.py), which
must be there in order and say nothing more; the final memory is
the launch's memory image with every record's stores applied in record order and, within a
record, in lane order (`mwen`, `maddrN`, `mvalN`, docs/isa.md "A record").  A trap record names
its fault; the registers it reports are rebuilt from the records' register writes.

    result = decode_launch(launch, ids, protocol)     # ids: trace, or prompt + trace
    result = decode_launch(launch, ids, protocol, machine)   # a launch laid out for `machine`
    result.buffers, result.records, result.trap, result.tokens

`TraceDecoder` does the same one token at a time (the model backend feeds it while the model
generates).  Every stream that is not a well-formed trace — a token out of place, a missing
byte, tokens after eos, no eos — is a `DecodeError` naming the position (an index into the
ids given) and what was expected there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

from qwengpu.backend_torch.protocol import TraceProtocol
from qwengpu.errors import UserError
from qwengpu.runtime.launch import Launch, LaunchResult, describe_trap
from qwengpu.runtime.machine_state import Machine
from qwengpu.runtime.prompt import build_prompt


class DecodeError(UserError):
    """A token stream that is not a well-formed trace of the launch."""


def _kind_text(token) -> str:
    return {"control": "a control token", "field": "a record token",
            "port": "a record's port token",
            "init": "a prompt (scratch) token", "stage": "a prompt (staging) token",
            "commit": "a prompt (state) token"}[token.kind]


class TraceDecoder:
    """Records from trace token ids, one id at a time (see the module docstring).

    `offset` is the position of the first id fed, so errors count from the start of the
    stream the caller holds (for example after a prompt)."""

    def __init__(self, protocol: TraceProtocol, offset: int = 0):
        self.protocol = protocol
        self.position = offset
        self.records: list[dict[str, int]] = []
        self.ended = False
        self._slot = 0
        self._partial: dict[str, int] = {}

    @property
    def tokens(self) -> int:
        """Trace tokens fed so far (eos included)."""
        return len(self.records) * self.protocol.tokens_per_record + self._slot + self.ended

    def expected(self) -> str:
        """What the next token must be, in words."""
        if self.ended:
            return "nothing (the launch has ended)"
        record = len(self.records)
        if self._slot == 0:
            name = self.protocol.record_slots[0][0]
            return f"{name}.b0=.. (the start of record {record}) or <eos>"
        fields = len(self.protocol.record_slots)
        if self._slot >= fields:
            port = self._slot - fields + 1
            return f"commit:port{port} (write port {port} of record {record})"
        name, byte = self.protocol.record_slots[self._slot]
        return f"{name}.b{byte}=.. (byte {byte} of field {name} of record {record})"

    def feed(self, token_id: int) -> dict[str, int] | None:
        """Take one id; returns the record it completes, if any."""
        protocol, position = self.protocol, self.position
        if not isinstance(token_id, int) or not 0 <= token_id < protocol.vocab_size:
            raise DecodeError(f"position {position}: token id {token_id!r} is not in the "
                              f"vocabulary (0 .. {protocol.vocab_size - 1}); expected "
                              f"{self.expected()}")
        token = protocol.describe(token_id)
        if self.ended:
            raise DecodeError(f"position {position}: {token.text} after <eos> (the end of the "
                              "launch); expected nothing more")
        if token_id == protocol.eos_id and self._slot == 0:
            self.ended = True
            self.position += 1
            return None
        if token.kind not in ("field", "port") or token.slot != self._slot:
            what = "<eos> in the middle of a record" if token_id == protocol.eos_id else \
                f"{token.text} ({_kind_text(token)})"
            raise DecodeError(f"position {position}: expected {self.expected()}, got {what}")
        if token.kind == "field":
            self._partial[token.name] = self._partial.get(token.name, 0) | \
                token.value << (8 * token.byte)
        self._slot += 1
        self.position += 1
        if self._slot < protocol.tokens_per_record:
            return None
        record = {field.name: self._partial[field.name] for field in protocol.fields}
        self.records.append(record)
        self._slot, self._partial = 0, {}
        return record

    def finish(self) -> list[dict[str, int]]:
        """The records, once the stream has ended; `DecodeError` if it stopped short."""
        if not self.ended:
            state = "stops in the middle of a record" if self._slot else "has no <eos>"
            raise DecodeError(f"position {self.position}: the trace {state} (truncated?); "
                              f"expected {self.expected()}")
        return self.records


def decode_trace(ids: Iterable[int], protocol: TraceProtocol, offset: int = 0
                 ) -> list[dict[str, int]]:
    """The records of a whole trace (the ids after `<trace>`, ending with eos)."""
    decoder = TraceDecoder(protocol, offset)
    for token_id in ids:
        decoder.feed(token_id)
    return decoder.finish()


def split_prompt(ids: list[int], protocol: TraceProtocol) -> tuple[list[int], list[int]]:
    """(prompt, trace): the prompt is everything up to and including the first `<trace>`;
    a stream without `<trace>` must be a bare trace."""
    if protocol.trace_id in ids:
        cut = ids.index(protocol.trace_id) + 1
        return ids[:cut], ids[cut:]
    first = ids[0] if ids else None
    if isinstance(first, int) and 0 <= first < protocol.vocab_size \
            and protocol.describe(first).kind in ("init", "stage", "commit") \
            or first == protocol.bos_id:
        raise DecodeError(f"position 0: the stream starts with "
                          f"{protocol.describe(ids[0]).text}, but has no <trace> token: a "
                          "prompt must end with <trace>, a bare trace starts with a record")
    return [], ids


@dataclass
class DecodedLaunch(LaunchResult):
    """A launch's outcome read from its trace; `tokens` counts the trace tokens (eos
    included, the prompt not), `prompt_tokens` the prompt's; when a model produced them,
    `engine` names what ran it, `seconds` is the generation time and `first_token_seconds`
    the part of it before the first id after the prompt (the prefill) (JSON: all four,
    after `tokens`; the last as `prefill_seconds`)."""

    tokens: int = 0
    prompt_tokens: int = 0
    seconds: float | None = None
    first_token_seconds: float | None = None
    engine: str | None = None

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
    """Final memory and trap of a launch from its decoded records (see the module docstring)."""
    lanes, words = launch.limits.lanes, launch.limits.memory_words
    memory = list(launch.memory)
    registers: dict[tuple[int, int, int], int] = {}
    for number, record in enumerate(records):
        if record.get("trap") and number != len(records) - 1:
            raise DecodeError(f"record {number} is a trap (code {record['trap']}), but the trace "
                              f"goes on for {len(records) - 1 - number} more records")
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
                             lambda warp, lane, index: registers.get((warp, lane, index), 0))
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
    result.prompt_tokens = len(prompt)
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
