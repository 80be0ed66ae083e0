"""A launch's shape: `grid` and `block` as CUDA's dim3, on a machine that numbers threads flat.

A launch file gives `"grid"` and `"block"` as a number (x) or a list of 1 to 3 numbers
`[x, y, z]` (docs/launch.md).  The machine runs `volume(grid)` blocks of `volume(block)`
threads; thread t of a block is the CUDA thread (t % bx, t / bx % by, t / (bx * by)), x
fastest, as CUDA numbers them, and block b likewise in the grid.  The loader computes those
indices from the flat ones (`qwengpu.ptx.geometry`); this module checks the keys and tells a
lane's CUDA coordinates for messages and traces.
"""

from __future__ import annotations

from qwengpu.ptx.geometry import Dims, Geometry, dims_of, launch_mismatch, shown, volume


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def shape_problem(value, key: str) -> str | None:
    """Why `value` is not a launch file's `grid`/`block`, or None."""
    if _is_count(value):
        return None
    if isinstance(value, (list, tuple)) and 1 <= len(value) <= 3 and \
            all(map(_is_count, value)):
        return None
    return (f"{key!r} must be a positive integer or a list of 1 to 3 positive integers "
            f"([x, y, z]), not {value!r}")


def count(value) -> int:
    """The blocks of a `grid` (threads of a `block`), all dimensions together."""
    return volume(dims_of(value))


def launch_geometry(data: dict) -> Geometry:
    """The shape of a launch file's grid and block, as the loader compiles for it."""
    return Geometry.of(dims_of(data["block"]), dims_of(data["grid"]))


def shape_refusal(program, data: dict) -> tuple[str, str] | None:
    """(message, the key it is about) when a compiled `qwengpu.ptx.Program` cannot run a
    launch of this shape: its special registers were computed for another."""
    mismatch = launch_mismatch(program.geometry, program.shape_reads, dims_of(data["grid"]),
                               dims_of(data["block"]))
    if mismatch is None:
        return None
    part, why = mismatch
    return f"{why}: compile the kernel for this launch (a launch file does)", part


def coordinates(index: int, dims: Dims) -> Dims:
    """The (x, y, z) of flat index `index` in a shape of `dims`, x fastest."""
    x, y, _ = dims
    return index % x, index // x % y, index // (x * y)


def launch_dims(launch) -> tuple[Dims, Dims]:
    """(grid, block) of a `qwengpu.runtime.launch.Launch` as (x, y, z) each."""
    return launch.grid_dims or (launch.grid, 1, 1), launch.block_dims or (launch.block, 1, 1)


def index_text(index: int, dims: Dims) -> str:
    """A flat index as CUDA names it: `5` in a 1-D shape, `(1, 1)` or `(1, 1, 0)` otherwise."""
    if dims[1:] == (1, 1):
        return str(index)
    used = 3 if dims[2] > 1 else 2
    return "(" + ", ".join(str(part) for part in coordinates(index, dims)[:used]) + ")"


def thread_name(launch, warp: int, lane: int) -> str:
    """`block 1, thread 5` for a lane of `launch`; `block (1, 0), thread (1, 1)` in a shape of
    more dimensions (the coordinates CUDA's blockIdx and threadIdx read)."""
    block, thread = launch.thread_of(warp, lane)
    grid_dims, block_dims = launch_dims(launch)
    return f"block {index_text(block, grid_dims)}, thread {index_text(thread, block_dims)}"


__all__ = ["Dims", "coordinates", "count", "dims_of", "index_text", "launch_dims",
           "launch_geometry", "shape_problem", "shape_refusal", "shown", "thread_name"]
