"""Launches of 2 and 3 dimensions (qwengpu/ptx/geometry.py, qwengpu/runtime/launch_shape.py).

tests/ptx/data/geometry.cu's kernels run on odd shapes (3x1x1, 2x3x2, 5 threads, grids of
2 and 3 dimensions) from the checked-in PTX, on the interpreter and the independent ISA
model (`ptx_isa_model.py`, which must agree), and every special register is compared with
a plain-Python model of CUDA's numbering (threads x fastest, enumerated here by nested
loops over z, y, x).  Also: the reciprocal division is exact, a program compiled for one
shape refuses another, 2-D indexing keeps its address proofs, and launch files take
`[x, y, z]` with their mistakes located.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from qwengpu.cli import main
from qwengpu.errors import CapacityError, LaunchError
from qwengpu.ptx import nvcc
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.geometry import reciprocal
from qwengpu.ptx.parser import parse_ptx_file
from qwengpu.ptx.ranges import default_facts
from qwengpu.runtime.launch import (launch_for_program, launch_from_dict, load_launch,
                                    machine_limits, run_launch_sim)

from ptx_harness import M32
from ptx_isa_model import run_model

DATA = Path(__file__).parent / "data"
PTX = DATA / "geometry.ptx"


def dim3(value) -> tuple[int, int, int]:
    numbers = [value] if isinstance(value, int) else list(value)
    return tuple(numbers + [1] * (3 - len(numbers)))


def cuda_threads(grid, block):
    """Every (blockIdx, threadIdx) of a launch, in CUDA's order (z, then y, then x)."""
    (gx, gy, gz), (bx, by, bz) = dim3(grid), dim3(block)
    return [((cx, cy, cz), (tx, ty, tz))
            for cz in range(gz) for cy in range(gy) for cx in range(gx)
            for tz in range(bz) for ty in range(by) for tx in range(bx)]


def run(kernel: str, grid, block, buffers: dict, args: list, source: Path = PTX):
    """The kernel compiled for this launch and run on the interpreter and the ISA model."""
    data = {"source": source.name, "kernel": kernel, "grid": grid, "block": block,
            "buffers": buffers, "args": args}
    launch = launch_from_dict(data, str(source.parent))
    result = run_launch_sim(launch)
    assert result.trap is None, result.trap.message
    model = run_model(launch.instructions, launch.memory, launch.params, launch.grid,
                      launch.block)
    assert model.memory == result.memory and model.trap is None
    return launch, result


SHAPES = [(1, 5), (1, [3, 1, 1]), (1, [2, 3, 2]), ([2, 2], [3, 1]), ([1, 2, 3], 1),
          ([2, 1, 2], [3, 1, 2]), (3, [1, 2, 1]), ([2, 3], 1), (2, [5, 1, 1])]


@pytest.mark.parametrize("grid,block", SHAPES, ids=[f"{g}-{b}" for g, b in SHAPES])
def test_every_special_register_on_odd_shapes(grid, block):
    threads = cuda_threads(grid, block)
    _, result = run("specials", grid, block, {"out": [0] * (4 * len(threads))}, ["out"])
    expected = [0] * (4 * len(threads))
    (gx, gy, gz), (bx, by, bz) = dim3(grid), dim3(block)
    for i, ((cx, cy, cz), (tx, ty, tz)) in enumerate(threads):
        expected[4 * i:4 * i + 4] = [tx + 10 * ty + 100 * tz, cx + 10 * cy + 100 * cz,
                                     bx + 10 * by + 100 * bz, gx + 10 * gy + 100 * gz]
    assert result.buffers["out"] == expected


@pytest.mark.parametrize("grid,block", [(1, 5), ([2, 1], [3, 2]), (1, [2, 3, 2]),
                                        ([1, 2], [4, 2])])
def test_lane_warp_and_warp_count_registers(grid, block):
    """%laneid and %warpid follow the flat thread index (threads are laid out x fastest, 4
    lanes a warp); %nwarpid is the number of warps of a block."""
    threads = cuda_threads(grid, block)
    _, result = run("warp_registers", grid, block, {"out": [-1] * len(threads)}, ["out"])
    bx, by, bz = dim3(block)
    per_block = bx * by * bz
    expected = []
    for _, (tx, ty, tz) in threads:
        flat = (tz * by + ty) * bx + tx
        expected.append(flat % 4 + 10 * (flat // 4) + 100 * -(-per_block // 4))
    assert result.buffers["out"] == expected


def test_a_one_dimensional_launch_reads_the_machines_registers():
    """Without .y/.z the code is what it was: s2r for every .x register, any block size."""
    program = compile_kernel(parse_ptx_file(str(PTX)), "specials")
    assert program.geometry.block is None and program.geometry.grid is None
    text = program.listing()
    assert "mulhi" not in text and text.count("s2r") == 4
    for block in (1, 5, 12):
        launch = launch_for_program(program, 2, block, {"out": [0] * (8 * block)}, ["out"])
        out = run_launch_sim(launch).buffers["out"]
        expected = [word for (cx, _, _), (tx, _, _) in cuda_threads(2, block)
                    for word in (tx, cx, block + 110, 112)]
        assert out == expected


def test_division_by_a_launch_constant_is_a_shift_or_a_multiply_high():
    launch, _ = run("specials", 1, [3, 2, 2], {"out": [0] * 48}, ["out"])
    text = launch.program.listing()
    assert text.count("mulhi.u") == 3 and "mad" in text    # / 3 twice and / 6; % 2 a mask
    assert len(launch.program) < 40                    # no division loop
    power_of_two, _ = run("specials", 1, [4, 2], {"out": [0] * 32}, ["out"])
    assert "mulhi" not in power_of_two.program.listing()


def test_the_reciprocals_are_exact():
    """floor(n * ceil(2^32 / d) / 2^32) == n // d for every n a launch can have (and far
    beyond), every divisor up to 64; a bound past exactness is refused."""
    for divisor in range(3, 65):
        if divisor & (divisor - 1) == 0:
            continue
        multiplier = reciprocal(divisor, 1 << 16)
        assert all((n * multiplier) >> 32 == n // divisor for n in range(1 << 16))
    with pytest.raises(ValueError):
        reciprocal(3, 1 << 31)


def test_two_dimensional_indexing_keeps_its_address_proofs():
    """The range analysis knows threadIdx.y < blockDim.y: the 2-D kernel needs no address
    check (its code is the same as with the checks turned off), and it computes its model."""
    width, height = 7, 4
    data = {"source": PTX.name, "kernel": "scale_rows", "grid": [2, 2], "block": [4, 2],
            "buffers": {"in": list(range(-14, 18)), "out": [-1] * 32},
            "args": ["in", "out", width, height]}
    checked = launch_from_dict(data, str(DATA))
    unchecked = launch_from_dict({**data, "check_addresses": False}, str(DATA))
    assert checked.instructions == unchecked.instructions
    out = run_launch_sim(checked).buffers["out"]
    expected = [-1] * 32
    for row in range(height):
        for col in range(width):
            expected[row * width + col] = (row * width + col - 14) * 2 + row
    assert out == expected


def test_a_program_refuses_a_launch_of_another_shape():
    source = {"source": PTX.name, "kernel": "tile", "grid": 1, "block": [4, 2],
              "buffers": {"out": [0] * 8}, "args": ["out"]}
    program = launch_from_dict(source, str(DATA)).program
    assert program.geometry.block == (4, 2, 1) and program.shape_reads == {"block"}
    assert run_launch_sim(launch_for_program(program, 1, (4, 2), {"out": [0] * 8}, ["out"])
                          ).buffers["out"] == [0, 10, 20, 30, 1, 11, 21, 31]
    with pytest.raises(LaunchError, match=r"this launch has block 2x4, and the kernel was "
                                          r"compiled for block 4x2 .*: compile the kernel for "
                                          r"this launch \(a launch file does\)"):
        launch_for_program(program, 1, [2, 4], {"out": [0] * 8}, ["out"])
    one_d = compile_kernel(parse_ptx_file(str(PTX)), "tile")
    with pytest.raises(LaunchError, match=r"this launch has block 4x2, and the kernel was "
                                          r"compiled for a 1-D block \(of any size\)"):
        launch_for_program(one_d, 1, [4, 2], {"out": [0] * 8}, ["out"])
    grid_2d = launch_from_dict({**source, "kernel": "specials", "grid": [2, 2], "block": 2,
                                "buffers": {"out": [0] * 32}}, str(DATA)).program
    with pytest.raises(LaunchError, match="this launch has grid 4, and the kernel was "
                                          "compiled for grid 2x2"):
        launch_for_program(grid_2d, 4, 2, {"out": [0] * 32}, ["out"])


def test_a_kernel_without_special_registers_runs_any_shape():
    program = compile_kernel(parse_ptx_file(str(PTX)), "no_specials")
    assert program.shape_reads == frozenset()
    launch = launch_for_program(program, [2, 2], [3, 2, 1], {"out": [0]}, ["out", 9])
    assert launch.warps == 8 and run_launch_sim(launch).buffers["out"] == [9]


def test_the_analysis_knows_each_index_range():
    from qwengpu.ptx.geometry import Geometry, special_range
    from dataclasses import replace
    kernel = parse_ptx_file(str(PTX)).kernels["specials"]
    facts = replace(default_facts(kernel, machine_limits(), 8),
                    geometry=Geometry((3, 2, 2), (2, 1, 2)))
    assert [special_range(f"%tid.{axis}", facts) for axis in "xyz"] == [(0, 2), (0, 1), (0, 1)]
    assert [special_range(f"%ntid.{axis}", facts) for axis in "xyz"] == [(3, 3), (2, 2), (2, 2)]
    assert [special_range(f"%ctaid.{axis}", facts) for axis in "xyz"] == [(0, 1), (0, 0), (0, 1)]
    assert special_range("%nwarpid", facts) == (3, 3)
    assert special_range("%clock", facts) is None


# ---- launch files ------------------------------------------------------------------------------


def write_launch(folder: Path, **changes) -> Path:
    shutil.copy(PTX, folder / PTX.name)
    data = {"source": PTX.name, "kernel": "specials", "grid": [2, 1], "block": [2, 3, 1],
            "buffers": {"out": [0] * 48}, "args": ["out"], **changes}
    path = folder / "launch.json"
    path.write_text(json.dumps(data, indent=1))
    return path


@pytest.mark.parametrize("key,value", [("block", [4, 0]), ("block", [1, 2, 3, 4]),
                                       ("grid", []), ("grid", [2, "2"]), ("block", [2.0]),
                                       ("grid", [True])])
def test_bad_shapes_are_located(tmp_path, key, value):
    path = write_launch(tmp_path, **{key: value})
    with pytest.raises(LaunchError) as caught:
        load_launch(str(path))
    assert caught.value.message == (f"{key!r} must be a positive integer or a list of 1 to 3 "
                                    f"positive integers ([x, y, z]), not {value!r}")
    text = path.read_text()
    assert caught.value.loc.line == text[:text.index(f'"{key}"')].count("\n") + 1


def test_a_shape_with_too_many_warps_says_so(tmp_path):
    path = write_launch(tmp_path, grid=[3, 1, 1], block=[2, 3, 2])
    with pytest.raises(CapacityError, match=r"the launch needs 9 warps \(grid 3 x ceil\(2x3x2 / 4\) "
                                        r"threads per warp\), but QwenGPU has 8"):
        load_launch(str(path))


def test_hdlc_run_prints_a_3d_launch_and_its_trace(tmp_path, capsys):
    path = write_launch(tmp_path, grid=[1, 2])
    assert main(["run", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["buffers"]["out"]
    assert [word & M32 for word in out[:8]] == [0, 0, 132, 121, 1, 0, 132, 121]
    assert [word & M32 for word in out[24:28]] == [0, 10, 132, 121]     # thread 0, block (0, 1)
    assert main(["run", str(path), "--trace"]) == 0
    trace = capsys.readouterr().out
    assert "warp 3 (block (0, 1))" in trace and "warp 1 (block (0, 0))" in trace


def test_a_trap_names_the_thread_by_its_coordinates(tmp_path, capsys):
    """32 threads write 4 words each from word 0: the last one's third word is word 126,
    past the memory; it is thread (3, 1) of block (1, 1)."""
    path = write_launch(tmp_path, grid=[2, 2], block=[4, 2], buffers={"out": [0] * 120})
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert "trap: address out of range" in err
    assert "in warp 7, lane 3 (block (1, 1), thread (3, 1))" in err


# ---- nvcc --------------------------------------------------------------------------------------


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc is not installed")
def test_the_cu_source_runs_the_same(tmp_path):
    shutil.copy(DATA / "geometry.cu", tmp_path)
    threads = cuda_threads([2, 2], [3, 1])
    _, from_cu = run("specials", [2, 2], [3, 1], {"out": [0] * (4 * len(threads))}, ["out"],
                     tmp_path / "geometry.cu")
    _, from_ptx = run("specials", [2, 2], [3, 1], {"out": [0] * (4 * len(threads))}, ["out"])
    assert from_cu.buffers == from_ptx.buffers
    fresh = nvcc.compile_cuda(str(DATA / "geometry.cu"))
    code = [line for line in fresh.splitlines() if not line.startswith("//")]
    checked_in = [line for line in PTX.read_text().splitlines() if not line.startswith("//")]
    assert code == checked_in, "tests/ptx/data/geometry.ptx is stale: run regen_ptx.py"
