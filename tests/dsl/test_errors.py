"""Every bad spec under tests/errors/ fails with its expected message at its expected line.

Each file marks the offending line with a comment `// error: MESSAGE` (the message must
appear in the error); a `// params: NAME=VALUE ...` line applies parameter overrides first.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qwengpu.dsl.elaborate import load_design
from qwengpu.errors import HdlError

ERRORS_DIR = Path(__file__).resolve().parents[1] / "errors"
BAD_SPECS = sorted(ERRORS_DIR.glob("*.hdl"))
EXPECTATION = re.compile(r"//\s*error:\s*(.+?)\s*$")
OVERRIDES = re.compile(r"//\s*params:\s*(.+?)\s*$")


def _expectation(path: Path) -> tuple[int, str, dict[str, int]]:
    expected, overrides = None, {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if match := EXPECTATION.search(line):
            assert expected is None, f"{path.name}: two expected errors"
            expected = (number, match.group(1))
        if match := OVERRIDES.search(line):
            for item in match.group(1).split():
                name, value = item.split("=")
                overrides[name] = int(value)
    assert expected is not None, f"{path.name} has no `// error:` comment"
    return expected[0], expected[1], overrides


def test_there_are_bad_specs():
    assert len(BAD_SPECS) >= 30


@pytest.mark.parametrize("path", BAD_SPECS, ids=lambda p: p.stem)
def test_bad_spec_reports_message_at_line(path: Path):
    line, message, overrides = _expectation(path)
    with pytest.raises(HdlError) as caught:
        load_design(path, overrides)
    error = caught.value
    assert message in error.message
    assert error.loc is not None and error.loc.file == str(path)
    assert error.loc.line == line, f"reported at line {error.loc.line}: {error.message}"
    assert error.loc.column >= 1
    rendered = error.render()
    assert rendered.startswith(f"{path}:{line}:{error.loc.column}: error: ")
    assert rendered.splitlines()[-1].strip() == "^"
