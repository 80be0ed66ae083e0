"""Fixtures of the trace tests (helpers live in trace_helpers.py)."""

from __future__ import annotations

import pytest

from trace_helpers import qwengpu_protocol


@pytest.fixture(scope="session")
def protocol():
    """The trace protocol of specs/qwengpu.hdl, the default machine."""
    return qwengpu_protocol()
