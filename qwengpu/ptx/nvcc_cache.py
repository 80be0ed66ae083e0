"""A cache of the PTX nvcc made, so that running the same kernel.cu again skips nvcc.

nvcc takes about 0.7 s a kernel on a CPU; `hdlc run`, `launch`, `decode` and the trace page
run it each time a launch names a `.cu` file.  The PTX of a source is kept under a key that
holds everything nvcc's output depends on here:

- nvcc itself: its resolved path, size and modification time (a new toolkit or wheel is a
  new key), and the `NVCC_PREPEND_FLAGS` / `NVCC_APPEND_FLAGS` nvcc reads;
- the flags (`NVCC_FLAGS`, always the same);
- the source's bytes and its absolute folder (nvcc names the source's path in the PTX's
  debug strings), and the bytes of every file it includes with `#include "..."`, followed
  through, found beside the file that includes it.

A source is compiled without the cache when it includes a file nvcc would look for
elsewhere, includes by a macro (`#include NAME`), or when `CPATH` or another include path
is set in the environment: there the key could not name every file the output depends on.
Only nvcc's successes are kept.

The folder is `QWENGPU_NVCC_CACHE` when set (`off` turns the cache off), else
`$XDG_CACHE_HOME/qwengpu/nvcc` (by default `~/.cache/qwengpu/nvcc`).  Each entry is one file
written whole and renamed into place, so runs in parallel share it; a folder that cannot be
written only means nvcc runs every time.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s*(.*?)\s*$', re.M)
INCLUDE_PATHS = ("CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH")
NVCC_ENVIRONMENT = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")


def cache_folder() -> Path | None:
    """Where the PTX is kept, or None when the cache is off."""
    given = os.environ.get("QWENGPU_NVCC_CACHE")
    if given:
        return None if given == "off" else Path(given)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = Path.home() / ".cache"
        except RuntimeError:                      # no home folder to be found: no cache
            return None
    return Path(base) / "qwengpu" / "nvcc"


def _sources(source: Path) -> list[Path] | None:
    """`source` and the files it includes with `#include "..."` (followed through), or None
    when an include cannot be followed (a macro, or a file not beside its includer)."""
    found, waiting = [], [source.resolve()]
    while waiting:
        path = waiting.pop()
        if path in found:
            continue
        found.append(path)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        for target in INCLUDE.findall(text):
            if target.startswith("<"):
                continue                          # the toolkit's own headers: nvcc's key
            if not (target.startswith('"') and target.count('"') == 2):
                return None                       # #include MACRO
            included = (path.parent / target.strip('"')).resolve()
            if not included.is_file():
                return None
            waiting.append(included)
    return found


def cache_key(nvcc: str, flags: tuple[str, ...], source: Path) -> str | None:
    """The key of `source`'s PTX, or None when it cannot be cached (see the module's text)."""
    if any(os.environ.get(name) for name in INCLUDE_PATHS):
        return None
    sources = _sources(source)
    if sources is None:
        return None
    try:
        binary = Path(nvcc).resolve()
        status = binary.stat()
        digest = hashlib.sha256()
        for part in (str(binary), str(status.st_size), str(status.st_mtime_ns), *flags,
                     *(os.environ.get(name, "") for name in NVCC_ENVIRONMENT)):
            digest.update(part.encode() + b"\0")
        for path in sources:              # each file's absolute path (so its folder) too
            digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.hexdigest()


def cached_ptx(key: str | None) -> str | None:
    """The PTX kept under `key`, if any."""
    folder = cache_folder()
    if key is None or folder is None:
        return None
    try:
        return (folder / f"{key}.ptx").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def keep_ptx(key: str | None, ptx: str) -> None:
    """Keep `ptx` under `key` (nothing when the cache is off or cannot be written)."""
    folder = cache_folder()
    if key is None or folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".partial")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(ptx)
        os.replace(partial, folder / f"{key}.ptx")
    except OSError:
        Path(partial).unlink(missing_ok=True)
