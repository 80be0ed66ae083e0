"""The table of passes (`passes/registry.py`): every pass registered under its CLI name with
a summary, its module and its test file named alike (STYLE.md), no name registered twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwengpu.passes import PASSES, register

ROOT = Path(__file__).resolve().parents[2]


def test_every_pass_has_a_summary_a_module_and_a_test_file():
    assert {"fold-constants", "merge-common", "remove-dead", "lower-digits",
            "select-encodings"} <= set(PASSES)
    for name, entry in PASSES.items():
        stem = name.replace("-", "_")
        assert entry.summary and entry.function.__name__ == stem
        assert (ROOT / "qwengpu" / "passes" / f"{stem}.py").exists()
        assert (ROOT / "tests" / "passes" / f"test_{stem}.py").exists()


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        register("merge-common", "again")(lambda graph: 0)
