"""The CUDA line each PTX line came from, and errors told in CUDA terms (docs/ptx.md "Errors").

nvcc's `-lineinfo` (`qwengpu.ptx.nvcc`) writes `.loc FILE LINE COLUMN` before the instructions of
each CUDA line, and `.file FILE "path"` at the end of the module.  `CudaLines` reads them from
the PTX text by lines, not from the parse tree, because a message about text that does not
parse needs them too.  Rules (nvcc's conventions):

- a `.loc` holds until the next one; the lines of a function before its first `.loc` (the
  `.entry` line, its parameters and registers) belong to that first one, the function's line;
- `.loc F 0 C` (code no CUDA line wrote) keeps the location before it;
- code inlined from another file (a CUDA header's `__syncwarp`, `max`) is placed at its call
  site in the function's own file, `inlined_at F L C`;
- a relative `.file` path is relative to the folder of the PTX (of the `.cu` it was made
  from, for PTX that nvcc made in memory).

`put_in_cuda_terms(error, lines)` rewrites a `UserError` located in the PTX: for PTX made from
a `.cu` in memory the CUDA line becomes the location (with its text and a caret) and the PTX
line a note (`note: PTX line 48 of nvcc's output: ...`), so no message names a `.cu.ptx` file
that does not exist; for a `.ptx` file the PTX line stays the location and the CUDA line is
a note.  `readable` demangles C++ names for messages.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass

import cxxfilt

from qwengpu.errors import Location, Note, UserError

_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:.*?\binlined_at\s+(\d+)\s+(\d+)\s+(\d+))?")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"\n]*)"')
_NOUNROLL = re.compile(r'^\s*\.pragma\s+"nounroll"')
_FUNCTION = re.compile(r"^\s*(?:\.(?:visible|weak|extern)\s+)*\.(?:entry|func)\b")
_PARAM_SUFFIX = re.compile(r"^(_Z\w+?)(_param_\d+)$")


def readable(name: str) -> str:
    """A C++ name demangled (`_ZZ13shared_reducePiE1s` -> `shared_reduce(int*)::s`), a
    parameter's as `vector_add(int*)_param_0`; other names as they are."""
    match = _PARAM_SUFFIX.match(name)
    if match:
        return readable(match.group(1)) + match.group(2)
    if not name.startswith("_Z"):
        return name
    try:
        return cxxfilt.demangle(name)
    except cxxfilt.InvalidName:
        return name


@dataclass(frozen=True)
class _Mark:
    """One `.loc`: (file index, line, column), and its call site when it is inlined code."""

    file: int
    line: int
    column: int
    inlined_at: tuple[int, int, int] | None


class CudaLines:
    """PTX line -> CUDA `Location`, for PTX text at `ptx_path`; `compiled_from` is the `.cu`
    file when nvcc made the PTX in memory (then `ptx_path` names no file)."""

    def __init__(self, text: str, ptx_path: str, compiled_from: str | None = None):
        self.ptx_path, self.compiled_from = ptx_path, compiled_from
        self.ptx_lines = text.splitlines()
        self.files: dict[int, str] = {}
        self.nounroll_lines: set[int] = set()        # `.pragma "nounroll"`: a rolled loop
        self.marks: list[_Mark | None] = [None] * (len(self.ptx_lines) + 1)
        self.main_file: list[int | None] = [None] * (len(self.ptx_lines) + 1)
        self._texts: dict[str, list[str] | None] = {}
        self._read(self.ptx_lines)

    def _read(self, lines: list[str]):
        current, function_start, main = None, None, None
        for number, line in enumerate(lines, start=1):
            if _FUNCTION.match(line):
                current, function_start, main = None, number, None
            found = _LOC.match(line)
            if found and int(found.group(2)) > 0:
                at = found.group(4, 5, 6)
                current = _Mark(int(found.group(1)), int(found.group(2)), int(found.group(3)),
                                tuple(map(int, at)) if at[0] is not None else None)
                if main is None:
                    main = current.file
                    for earlier in range(function_start or number, number):
                        self.marks[earlier], self.main_file[earlier] = current, main
            if _NOUNROLL.match(line):
                self.nounroll_lines.add(number)
            file_match = _FILE.match(line)
            if file_match:
                self.files[int(file_match.group(1))] = file_match.group(2)
            self.marks[number], self.main_file[number] = current, main

    def path(self, file_index: int) -> str | None:
        name = self.files.get(file_index)
        if name is None:
            return None
        if os.path.isabs(name):
            return name
        return os.path.join(os.path.dirname(self.ptx_path), name)

    def at(self, ptx_line: int) -> Location | None:
        """Where PTX line `ptx_line` came from in CUDA, None if nothing says."""
        if not 0 < ptx_line < len(self.marks) or self.marks[ptx_line] is None:
            return None
        mark, main = self.marks[ptx_line], self.main_file[ptx_line]
        file, line, column = mark.file, mark.line, mark.column
        if mark.inlined_at is not None and mark.file != main:
            file, line, column = mark.inlined_at
        path = self.path(file)
        return Location(path, line, column) if path is not None else None

    def source_line(self, loc: Location | None) -> str | None:
        """The text of a CUDA line, if its file can be read."""
        if loc is None or not loc.line:
            return None
        if loc.file not in self._texts:
            try:
                with open(loc.file, encoding="utf-8") as handle:
                    self._texts[loc.file] = handle.read().splitlines()
            except (OSError, UnicodeDecodeError):
                self._texts[loc.file] = None
        lines = self._texts[loc.file]
        return lines[loc.line - 1] if lines is not None and loc.line <= len(lines) else None

    def source_text(self, loc: Location) -> str | None:
        self.source_line(loc)
        lines = self._texts.get(loc.file)
        return "\n".join(lines) if lines is not None else None

    def ptx_line(self, number: int) -> str:
        """The PTX text at line `number`, to the `;` that ends it (a `call` spans lines)."""
        text = []
        for line in self.ptx_lines[number - 1:number + 7] if number > 0 else []:
            text.append(line.split("//")[0])
            if ";" in line or line.lstrip().startswith("."):    # a directive: its line
                break
        return " ".join(" ".join(text).split())


def put_in_cuda_terms(error: UserError, lines: CudaLines) -> UserError:
    """`error` (changed in place) located at the CUDA line its PTX line came from; an error
    already told so is left as it is."""
    loc = error.loc
    if loc is None or loc.file != lines.ptx_path or getattr(error, "in_cuda_terms", False):
        return error
    error.in_cuda_terms = True
    cuda = getattr(error, "cuda_loc", None) or (lines.at(loc.line) if loc.line else None)
    if lines.compiled_from is None:
        if cuda is not None:
            error.notes.append(Note("from this CUDA line", cuda, lines.source_text(cuda)))
        return error
    if cuda is None:
        error.loc, error.source = Location(lines.compiled_from), None
    else:
        error.loc, error.source = cuda, lines.source_text(cuda)
    if loc.line:
        error.notes.append(Note(f"PTX line {loc.line} of nvcc's output: "
                                f"{lines.ptx_line(loc.line)}"))
    return error


@contextlib.contextmanager
def in_cuda_terms(lines_of):
    """Put every `UserError` raised inside in CUDA terms; `lines_of()` gives the `CudaLines`
    (called only when an error needs them)."""
    try:
        yield
    except UserError as error:
        lines = lines_of()
        if lines is not None:
            put_in_cuda_terms(error, lines)
        raise
