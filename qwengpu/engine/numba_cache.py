"""Keeping numba's on-disk cache of the engine's kernels true to their source.

numba keys a cached function on its own file only, but a function's compiled code holds the
code of the functions it calls (numba compiles callees into the caller, and an intrinsic's
LLVM IR is written into it): after kernels.py changes, a cached
`mixer_kernels.deltanet_columns` would still run the old `silu`, a cached `fused.run_layers`
all the old kernels, and after register_blocks.py changes a cached
`dense_kernels.dense_panels` the old blocks.  `drop_stale_cache` removes a module's cache
files when they are older than a file its functions call into, directly or through another
(`CALLS_INTO`); the package runs it on import, before any kernel is compiled or loaded.  A read-only install keeps no cache beside
the sources, and nothing is dropped there.
"""

from __future__ import annotations

from pathlib import Path

# module: the engine modules whose compiled functions its own call directly
# (tests/engine/test_numba_cache.py holds this to the modules' imports)
CALLS = {
    "dense_kernels": ("register_blocks",),
    "gate_families": ("dense_kernels",),
    "kernels": ("gate_families",),
    "mixer_kernels": ("kernels", "dense_kernels"),
    "fused": ("kernels", "mixer_kernels", "gate_families"),
    "thread_parts": ("dense_kernels", "fused", "mixer_kernels"),
}


def _calls_into(module: str) -> tuple[str, ...]:
    """The files whose code `module`'s cached functions hold: CALLS, followed through."""
    seen: list[str] = []
    waiting = list(CALLS.get(module, ()))
    while waiting:
        callee = waiting.pop()
        if callee not in seen:
            seen.append(callee)
            waiting += CALLS.get(callee, ())
    return tuple(sorted(f"{callee}.py" for callee in seen))


# module: the engine files whose functions its cached functions compile into themselves
CALLS_INTO = {module: _calls_into(module) for module in CALLS}


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
