"""Decoding a generated trace: token ids -> records.

Each record is its fields' byte tokens in emit order, then its port tokens (`commit:port1`
..., only for a machine with several writes to one store per step;
qwengpu/trace/protocol.py), which must be there in order and say nothing more.  An optional
field is there exactly when its condition (a field before it) holds, and reads 0 when not.

    records = decode_trace(ids, protocol)          # the ids after <trace>, ending with eos
    decoder = TraceDecoder(protocol, offset=len(prompt));  decoder.feed(id) ...

`TraceDecoder` reads one token at a time (the model backend feeds it while the model
writes).  Every stream that is not a well-formed trace — a token out of place, a missing
byte, tokens after eos, no eos — is a `DecodeError` naming the position (an index into the
ids given) and what was expected there.  What the records mean for a launch (its memory,
buffers and trap) is `qwengpu.runtime.decode`'s.
"""

from __future__ import annotations

from typing import Iterable

from qwengpu.errors import UserError
from qwengpu.trace.protocol import TraceProtocol


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
        self._tokens = 0

    @property
    def tokens(self) -> int:
        """Trace tokens fed so far (eos included)."""
        return self._tokens

    def expected(self) -> str:
        """What the next token must be, in words."""
        if self.ended:
            return "nothing (the launch has ended)"
        record = len(self.records)
        if self._slot == 0:
            return f"{self.protocol.slot_pattern(0)} (the start of record {record}) or <eos>"
        fields = len(self.protocol.record_slots)
        if self._slot >= fields:
            port = self._slot - fields + 1
            return f"commit:port{port} (write port {port} of record {record})"
        name, byte = self.protocol.record_slots[self._slot]
        field = self.protocol.field_by_name[name]
        pattern = self.protocol.slot_pattern(self._slot)
        if self._slot in self.protocol.slot_pair:
            return f"{pattern} (fields {name} and {self.protocol.slot_pair[self._slot]} of " \
                f"record {record})"
        why = "" if field.when is None or byte else \
            f"; {name} is present: {field.condition_text()} holds"
        return f"{pattern} (byte {byte} of field {name} of record {record}{why})"

    def _absent(self, token) -> str:
        """Why a field token is out of place, when its field is absent from this record."""
        if token.kind != "field" or not self._partial:
            return ""
        field = self.protocol.field_by_name[token.name]
        if field.when is None or field.when not in self._partial or \
                field.present(self._partial):
            return ""
        return f" ({token.name} is absent from this record: {field.condition_text()} does not hold)"

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
            self._tokens += 1
            return None
        if token.kind not in ("field", "port") or token.slot != self._slot:
            what = "<eos> in the middle of a record" if token_id == protocol.eos_id else \
                f"{token.text} ({_kind_text(token)})"
            raise DecodeError(f"position {position}: expected {self.expected()}, got "
                              f"{what}{self._absent(token)}")
        if token.kind == "field":
            for name, bits in protocol.field_values(token):
                self._partial[name] = self._partial.get(name, 0) | bits
        self._slot = protocol.next_position(self._slot, self._partial)
        self.position += 1
        self._tokens += 1
        if self._slot:
            return None
        record = {field.name: self._partial.get(field.name, 0) for field in protocol.fields}
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
