"""Fixtures of the trace tests (helpers live in trace_helpers.py)."""

from __future__ import annotations

import pytest

from qwengpu.trace.protocol import FieldSpec, TraceProtocol
from trace_helpers import qwengpu_protocol


@pytest.fixture(scope="session")
def protocol():
    """The trace protocol of specs/qwengpu.hdl, the default machine."""
    return qwengpu_protocol()


@pytest.fixture(scope="session")
def fixed_protocol(protocol):
    """The same fields and state with every field and port token in every record (55 tokens
    a record): the format of the tests that count positions."""
    return TraceProtocol(protocol.design_name, [FieldSpec(f.name, f.width)
                                                for f in protocol.fields],
                         protocol.state, protocol.write_ports)
