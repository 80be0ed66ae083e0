"""Keeping numba's on-disk cache of the engine's kernels true to their source.

numba keys a cached function on its own file only, but a function's compiled code holds the
code of the functions it calls (numba compiles callees into the caller): after kernels.py
changes, a cached `mixer_kernels.deltanet_columns` would still run the old `silu`, and a
cached `fused.run_layers` all the old kernels.  `drop_stale_cache` removes a module's cache
files when they are older than a file its functions call into; the package runs it on
import, before any kernel is compiled or loaded.  A read-only install keeps no cache beside
the sources, and nothing is dropped there.
"""

from __future__ import annotations

from pathlib import Path

# module: the engine files whose functions its cached functions compile into themselves
CALLS_INTO = {
    "mixer_kernels": ("kernels.py",),
    "fused": ("kernels.py", "mixer_kernels.py"),
}


def drop_stale_cache(folder: Path = Path(__file__).parent) -> list[Path]:
    """Remove the numba cache files (`__pycache__/MODULE.*.nbi|nbc`) of each module in
    CALLS_INTO that are older than a file it calls into; returns the files removed."""
    removed = []
    for module, sources in CALLS_INTO.items():
        times = [(folder / name).stat().st_mtime for name in sources
                 if (folder / name).exists()]
        if not times:
            continue
        for cached in (folder / "__pycache__").glob(f"{module}.*.nb[ic]"):
            try:
                if cached.stat().st_mtime < max(times):
                    cached.unlink()
                    removed.append(cached)
            except OSError:
                pass
    return removed
