"""Fixtures of the runtime tests (helpers live in runtime_helpers.py)."""

from __future__ import annotations

import pytest

from runtime_helpers import default_protocol


@pytest.fixture(scope="session")
def protocol():
    return default_protocol()
