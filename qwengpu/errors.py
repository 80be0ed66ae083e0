"""User-facing errors: a mistake in a spec, a kernel or a launch, with where it happened.

A `UserError` is printed by the CLI as `file:line:col: error: message`, then the source line
and a caret, and the CLI exits 1.  Anything else that escapes is a compiler bug: the CLI
prints the traceback and exits 70.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Location:
    """A place in a source file; line and column count from 1."""

    file: str
    line: int = 0
    column: int = 0
    # The whole construct, where it is wider than the point above (an operator's location is
    # its token, its span the whole expression): (first line, first column, last line, the
    # column after the last character).  Not part of equality: two nodes made at one place
    # are at one location whatever their extent.
    span: tuple[int, int, int, int] | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        if self.line and self.column:
            return f"{self.file}:{self.line}:{self.column}"
        if self.line:
            return f"{self.file}:{self.line}"
        return self.file


@dataclass(frozen=True)
class Note:
    """More about an error: printed after it as `loc: note: message` (or `note: message`),
    with the line `loc` points at and a caret when `source` (or the file) has it."""

    message: str
    loc: Location | None = None
    source: str | None = None


class UserError(Exception):
    """A mistake in the user's input.  `loc` may be None when there is no source to point at;
    `notes` say more (where else it shows, what to do)."""

    kind = "error"

    def __init__(self, message: str, loc: Location | None = None, source: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.source = source
        self.notes: list[Note] = []

    def render(self) -> str:
        head = f"{self.loc}: {self.kind}: {self.message}" if self.loc else f"{self.kind}: {self.message}"
        parts = [head, *_excerpt(self.loc, self.source)]
        for note in self.notes:
            parts.append(f"{note.loc}: note: {note.message}" if note.loc else
                         f"note: {note.message}")
            parts.extend(_excerpt(note.loc, note.source))
        return "\n".join(parts)


def _excerpt(loc: Location | None, text: str | None) -> list[str]:
    """The line `loc` points at and a caret under its column (none for column 0), from `text`
    or else the file; nothing when neither has the line."""
    if not (loc and loc.line):
        return []
    if text is None:
        try:
            with open(loc.file, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            return []
    lines = text.splitlines()
    if not 0 < loc.line <= len(lines):
        return []
    line = lines[loc.line - 1]
    if not loc.column:
        return [line]
    # Keep the line's tabs in the caret line so the caret lines up in any terminal.
    prefix = line[: loc.column - 1]
    return [line, "".join("\t" if char == "\t" else " " for char in prefix) + "^"]


def check_output_location(path, what: str = "output") -> None:
    """Refuse an output path whose missing folders could not be created (as `save_pretrained`
    and compilers do, missing parent folders are made when the output is written): the
    nearest folder above it that exists must be a writable directory.  Nothing is created
    here, so a refused or failed command leaves nothing behind."""
    import os
    from pathlib import Path

    path = Path(path)
    ancestor = path.absolute().parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UserError(f"{path}: cannot write the {what}: {ancestor} is a file, not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UserError(f"{path}: cannot write the {what}: the folder {ancestor} is not "
                        "writable")


def make_parent_folders(path, what: str = "output") -> None:
    """Create the folders above an output path; a path they cannot be made for is a
    `UserError` with the reason."""
    from pathlib import Path

    check_output_location(path, what)
    try:
        Path(path).absolute().parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"{path}: cannot write the {what}: {error.strerror}") from None


def write_output(path, text: str, what: str = "output") -> None:
    """Write a text file the user named, creating missing folders above it; a path that
    cannot be written is a `UserError`."""
    make_parent_folders(path, what)
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        raise UserError(f"{path}: cannot write the {what}: {error.strerror}") from None


def not_text(error: UnicodeDecodeError) -> str:
    """Why a file is not UTF-8 text, in a user's terms."""
    return (f"not UTF-8 text (byte {error.object[error.start:error.start + 1].hex()} at "
            f"byte {error.start})")


class HdlError(UserError):
    """A mistake in an HDL spec."""


class PtxError(UserError):
    """PTX that is malformed or uses something the machine does not support.  `cuda_loc`,
    when set, is the CUDA line the mistake is about where it is not the one its PTX line came
    from (nvcc files a `dp4a` under the line of the loads before it)."""

    cuda_loc: Location | None = None


class LaunchError(UserError):
    """A launch file that is malformed, or a kernel that does not fit the machine."""


class CapacityError(UserError):
    """Something does not fit: registers, memory, instructions, layers, dims, units."""
