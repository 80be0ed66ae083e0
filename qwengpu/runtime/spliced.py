"""Running a spliced checkpoint (`hdlc splice`): the model in the machine's own ids.

A spliced checkpoint's machine tokens sit at ids `offset .. offset + count - 1` of the base's
grown vocabulary (`splice.json`); the runtime, the prompt builder and the checker speak the
protocol's ids `0 .. count - 1`.  `SplicedModel` wraps the transformers model so that the
rest of the runtime does not change (`SplicedEngine` does the same for the sparse engine):
prompts go in shifted up by `offset`, and every id the
model picks comes back shifted down, so a base token the model would (wrongly) pick arrives as
a negative id, which the decoder and the lockstep checker reject as not a machine token.
Nothing the model picks is altered: the shift is a relabelling of the same argmax.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from qwengpu.errors import UserError

SPLICE_FILE = "splice.json"


@dataclass(frozen=True)
class Splice:
    offset: int
    count: int
    multimodal: bool


def read_splice(directory: str | Path) -> Splice | None:
    """The id placement of a spliced checkpoint, or None for a compiled one."""
    path = Path(directory) / SPLICE_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        return Splice(int(data["offset"]), int(data["count"]), bool(data.get("multimodal")))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserError(f"{path}: unreadable: {error}") from None


class SplicedModel:
    """A transformers model of a spliced checkpoint, taking and giving machine ids."""

    def __init__(self, model, splice: Splice):
        self.model, self.splice = model, splice

    @property
    def device(self):
        return self.model.device

    @property
    def generation_config(self):
        return self.model.generation_config

    def generate(self, input_ids, *, eos_token_id=None, pad_token_id=None, streamer=None,
                 **options):
        shift = self.splice.offset
        output = self.model.generate(
            input_ids + shift,
            eos_token_id=None if eos_token_id is None else eos_token_id + shift,
            pad_token_id=None if pad_token_id is None else pad_token_id + shift,
            streamer=None if streamer is None else _ShiftedStreamer(streamer, shift),
            **options)
        return output - shift


class SplicedEngine:
    """The sparse engine on a spliced checkpoint, taking and giving machine ids."""

    def __init__(self, engine, splice: Splice):
        self.engine, self.splice = engine, splice

    @property
    def device(self):
        return getattr(self.engine, "device", "cpu")

    def _shifted(self, prompts):
        return [[token_id + self.splice.offset for token_id in prompt] for prompt in prompts]

    def session(self, prompts, eos_id=None, **options):
        eos = None if eos_id is None else eos_id + self.splice.offset
        return _ShiftedSession(self.engine.session(self._shifted(prompts), eos_id=eos,
                                                   **options), self.splice.offset)

    def generate(self, prompts, max_new_tokens: int, eos_id: int | None = None, **options):
        shift = self.splice.offset
        eos = None if eos_id is None else eos_id + shift
        rows = self.engine.generate(self._shifted(prompts), max_new_tokens, eos, **options)
        return [[token_id - shift for token_id in row] for row in rows]


class _ShiftedSession:
    def __init__(self, session, shift: int):
        self.session, self.shift = session, shift

    def __iter__(self):
        for step in self.session:
            yield [(index, token_id - self.shift) for index, token_id in step]

    def end(self, row: int) -> None:
        self.session.end(row)

    @property
    def steps(self) -> int:
        return self.session.steps

    @property
    def prefill_seconds(self) -> float | None:
        return self.session.prefill_seconds


class _ShiftedStreamer:
    def __init__(self, streamer, shift: int):
        self.streamer, self.shift = streamer, shift

    def put(self, value) -> None:
        self.streamer.put(value - self.shift)

    def end(self) -> None:
        self.streamer.end()
