"""Compile CUDA to PTX with nvcc, always with the same flags.

The one command is `nvcc -ptx -arch=sm_80 -O3 -lineinfo kernel.cu -o kernel.ptx`, run in the
kernel's directory, the same command that `examples/regen_ptx.sh` uses for the checked-in PTX.
sm_80 is an arch every current nvcc accepts (CUDA 11 to 13) and its integer code is what the
loader was written against.  `-lineinfo` adds `.loc`/`.file` directives (and changes no
instruction), so that every message can name the CUDA line an instruction came from
(`qwengpu.ptx.cuda_lines`).  nvcc names the source in `.file` by its absolute path; a path in
the kernel's own directory is rewritten relative to it (`kernel.cu`), so that the PTX does not
depend on where it was made, and a checked-in `kernel.ptx` finds the `kernel.cu` next to it.

nvcc is found, in order: the `NVCC` environment variable; `nvcc` on PATH; the `nvidia-cuda-nvcc`
wheel from PyPI (`pip install nvidia-cuda-nvcc`, or the `nvcc` extra of this package), whose
binary lies at `site-packages/nvidia/cu13/bin/nvcc` (CUDA 13 wheels) or
`site-packages/nvidia/cuda_nvcc/bin/nvcc` (CUDA 12 wheels).

The PTX of a source nvcc has already compiled, unchanged with everything it includes, comes
from a cache instead of a second run (`qwengpu.ptx.nvcc_cache`; `QWENGPU_NVCC_CACHE=off`
turns it off).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from qwengpu.errors import LaunchError, Location, UserError
from qwengpu.ptx.nvcc_cache import cache_key, cached_ptx, keep_ptx

NVCC_FLAGS = ("-ptx", "-arch=sm_80", "-O3", "-lineinfo")
NVCC_TIMEOUT_SECONDS = 300
_WHEEL_LAYOUTS = ("cu13/bin", "cu12/bin", "cuda_nvcc/bin")


class NvccError(UserError):
    """nvcc rejected the CUDA source; the message is nvcc's own."""


def find_nvcc() -> str | None:
    """The nvcc to use, or None when there is none."""
    override = os.environ.get("NVCC")
    if override:
        return shutil.which(override) or (override if os.path.isfile(override) else None)
    on_path = shutil.which("nvcc")
    if on_path:
        return on_path
    return _nvcc_from_wheel()


def _nvcc_from_wheel() -> str | None:
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        for layout in _WHEEL_LAYOUTS:
            candidate = Path(root) / layout / "nvcc"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def nvcc_missing_error(source: str) -> LaunchError:
    return LaunchError(
        "nvcc was not found, so this CUDA file cannot be compiled. Install it with "
        "`pip install nvidia-cuda-nvcc` (or `pip install 'qwengpu[nvcc]'`), put a CUDA "
        "toolkit's nvcc on PATH, set NVCC=/path/to/nvcc, or give the launch a .ptx file",
        Location(source))


def compile_cuda(path: str) -> str:
    """The PTX nvcc makes of `path`.  Raises `NvccError` with nvcc's message when it fails."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise nvcc_missing_error(path)
    source = Path(path)
    if not source.is_file():
        raise LaunchError("CUDA source file not found", Location(path))
    key = cache_key(nvcc, NVCC_FLAGS, source)
    kept = cached_ptx(key)
    if kept is not None:
        return kept
    with tempfile.TemporaryDirectory(prefix="qwengpu-nvcc-") as scratch:
        output = Path(scratch) / (source.stem + ".ptx")
        command = [nvcc, *NVCC_FLAGS, source.name, "-o", str(output)]
        try:
            finished = subprocess.run(command, cwd=source.parent.resolve(), capture_output=True,
                                      text=True, timeout=NVCC_TIMEOUT_SECONDS, check=False)
        except OSError as error:
            raise LaunchError(f"could not run nvcc ({nvcc}): {error}", Location(path)) from None
        except subprocess.TimeoutExpired:
            raise LaunchError(f"nvcc took longer than {NVCC_TIMEOUT_SECONDS} s",
                              Location(path)) from None
        if finished.returncode != 0 or not output.is_file():
            message = (finished.stderr or finished.stdout).strip() or "no message"
            raise NvccError(f"nvcc failed (exit {finished.returncode}):\n{message}",
                            Location(path))
        ptx = relative_file_paths(output.read_text(encoding="utf-8"), source.parent.resolve())
    keep_ptx(key, ptx)
    return ptx


def relative_file_paths(ptx: str, folder: Path) -> str:
    """`.file 1 "/abs/folder/kernel.cu"` as `.file 1 "kernel.cu"` for files in `folder` (and
    below it); files elsewhere (CUDA's headers) keep their absolute paths."""
    prefix = str(folder).rstrip("/") + "/"

    def relative(match: re.Match) -> str:
        path = match.group(2)
        return match.group(1) + (path[len(prefix):] if path.startswith(prefix) else path) + '"'

    return re.sub(r'^(\s*\.file\s+\d+\s+")([^"\n]*)"', relative, ptx, flags=re.M)


def ptx_for_source(path: str) -> tuple[str, str]:
    """(name for locations, PTX text) of a `.ptx` file, or of a `.cu` file compiled by nvcc.
    PTX made from `kernel.cu` is named `kernel.cu.ptx` inside the loader; it is not written to
    disk, and messages name the CUDA lines instead (`qwengpu.ptx.cuda_lines`)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".ptx":
        try:
            return path, Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise LaunchError("PTX file not found", Location(path)) from None
        except (OSError, UnicodeDecodeError) as error:
            raise LaunchError(f"cannot read PTX file: {error}", Location(path)) from None
    if suffix == ".cu":
        return path + ".ptx", compile_cuda(path)
    kind = suffix or "a name without an extension"
    raise LaunchError(f"the kernel source must be a .cu or .ptx file, not {kind}", Location(path))
