"""The HDL text a location covers: how a value the spec gives no name is named for people.

The parser gives every location a `span` (`errors.Location`): an operator's location is its
token (where an error's caret points) and its span the whole expression, so `source_text`
can say `count + 1` for the adder of `count <= count + 1;`.  The text is one line: comments
dropped, runs of white space made one space, a parenthesis the span leaves out (the grammar
keeps no node for `( ... )`) put back, and cut to `limit` characters with an ellipsis.
Files are read once each; a location whose file cannot be read, or that has no span, has no
text (None), and callers fall back to its `file:line:col`.
"""

from __future__ import annotations

import re
from functools import lru_cache

from qwengpu.errors import Location

ELLIPSIS = "\u2026"


@lru_cache(maxsize=64)
def _source_lines(path: str) -> tuple[str, ...] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return tuple(handle.read().splitlines())
    except (OSError, UnicodeDecodeError):
        return None


def source_text(loc: Location | None, limit: int = 60) -> str | None:
    """The source `loc` spans, as one line of at most `limit` characters (see the module
    doc); None without a span or a readable file."""
    if loc is None or loc.span is None:
        return None
    lines = _source_lines(loc.file)
    first_line, first_column, last_line, end_column = loc.span
    if lines is None or not 0 < first_line <= last_line <= len(lines):
        return None
    pieces = list(lines[first_line - 1:last_line])
    pieces[-1] = pieces[-1][:end_column - 1]
    pieces[0] = pieces[0][first_column - 1:]
    text = " ".join(_without_comment(piece) for piece in pieces)
    text = _balanced(re.sub(r"\s+", " ", text).strip())
    if not text:
        return None
    return text if len(text) <= limit else text[:limit - 1].rstrip() + ELLIPSIS


def _without_comment(line: str) -> str:
    return line.split("//", 1)[0]


def _balanced(text: str) -> str:
    """`text` with the parentheses a span cut off put back at its ends."""
    depth, lowest = 0, 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            lowest = min(lowest, depth)
    opened = -lowest
    return "(" * opened + text + ")" * (depth + opened)
