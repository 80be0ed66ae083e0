"""Shared pieces of the trace tests: spec paths, the default machine's protocol, and seeded
random records (the decoder reads any values that fit the fields; their meaning is the
runtime's business)."""

from __future__ import annotations

import random
from pathlib import Path

from qwengpu.dsl.elaborate import load_design
from qwengpu.trace.protocol import TraceProtocol

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
TEST_SPECS = ROOT / "tests" / "backend_torch" / "specs"


def qwengpu_protocol() -> TraceProtocol:
    return TraceProtocol.from_design(load_design(SPECS / "qwengpu.hdl"))


def random_records(protocol: TraceProtocol, count: int, seed: int = 0) -> list[dict[str, int]]:
    """`count` records whose fields hold seeded random values of their widths (0 where an
    optional field is absent, as a record has it)."""
    rng = random.Random(seed)
    records = []
    for _ in range(count):
        record: dict[str, int] = {}
        for field in protocol.fields:
            value = rng.getrandbits(field.width)
            record[field.name] = value if field.present(record) else 0
        records.append(record)
    return records
