"""qwengpu/engine/numba_cache.py: a cache older than the kernels it holds is dropped.

numba would otherwise keep running a cached `fused.run_layers` or `deltanet_columns` built
from kernels.py as it was before an edit."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from qwengpu.engine import numba_cache
from qwengpu.engine.numba_cache import drop_stale_cache


def test_a_cache_older_than_what_it_calls_is_dropped(tmp_path):
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    names = {"old fused": "fused.run_layers-150.py311.nbi",
             "new fused": "fused.run_layers-150.py311.1.nbc",
             "old mixer": "mixer_kernels.deltanet_columns-20.py311.nbi",
             "old kernel": "kernels.mlp_add-239.py311.nbi",
             "old bytecode": "fused.cpython-311.pyc"}
    paths = {what: cache / name for what, name in names.items()}
    for path in paths.values():
        path.write_bytes(b"")
    (tmp_path / "kernels.py").write_text("")
    # times set, not left to the clock: files written a moment apart may or may not share
    # a timestamp
    os.utime(tmp_path / "kernels.py", (2_000, 2_000))
    os.utime(paths["new fused"], (3_000, 3_000))
    for what in ("old fused", "old mixer", "old kernel", "old bytecode"):
        os.utime(paths[what], (1_000, 1_000))
    removed = drop_stale_cache(tmp_path)
    assert sorted(removed) == sorted([paths["old fused"], paths["old mixer"]])
    assert all(path.exists() for what, path in paths.items()
               if what not in ("old fused", "old mixer"))


def test_a_folder_without_a_cache_is_left_alone(tmp_path):
    (tmp_path / "kernels.py").write_text("")
    assert drop_stale_cache(tmp_path) == []


def test_the_call_graph_is_the_modules_imports():
    """`CALLS` names, for each engine module with compiled functions, the engine modules
    with compiled functions that it imports: a new import left out of it would let a stale
    cache run old code."""
    folder = Path(numba_cache.__file__).parent

    def compiled(module: str) -> bool:
        source = (folder / f"{module}.py").read_text()
        return "@njit" in source or "@intrinsic" in source

    modules = sorted(path.stem for path in folder.glob("*.py") if compiled(path.stem))
    imports = {}
    for module in modules:
        tree = ast.parse((folder / f"{module}.py").read_text())
        imports[module] = sorted(
            {node.module.rsplit(".", 1)[1] for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and node.module
             and node.module.startswith("qwengpu.engine.")} & set(modules))
    assert imports == {module: sorted(numba_cache.CALLS.get(module, ())) for module in modules}
    assert numba_cache.CALLS_INTO["fused"] == (
        "dense_kernels.py", "gate_families.py", "kernels.py", "mixer_kernels.py",
        "register_blocks.py")
