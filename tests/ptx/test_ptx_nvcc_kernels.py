"""Real nvcc output, run end to end: tests/ptx/data/*.cu and the PTX nvcc made of them.

Each case runs one kernel of the checked-in PTX on the interpreter (and the ISA model, which
must agree) and compares every buffer with a plain-Python model of the CUDA source, one
thread at a time.  The unsupported kernels must fail with a located error.  When nvcc is on
PATH, the checked-in PTX must still be what the loader's nvcc driver makes of the .cu.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from qwengpu.isa import MASK32

from qwengpu.errors import CapacityError, PtxError
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx_file

from ptx_harness import M32, M64, run_ptx, s32, s64, sext

DATA = Path(__file__).parent / "data"


def ptx(name: str) -> str:
    return (DATA / f"{name}.ptx").read_text()


def c_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def c_rem(a: int, b: int) -> int:
    return a - b * c_div(a, b)


def words_64(values):
    return [word for value in values for word in ((value & M64) & M32, (value & M64) >> 32)]


@dataclass
class Case:
    source: str
    kernel: str
    grid: int
    block: int
    buffers: dict
    args: list
    model: Callable[[dict], dict]     # initial buffers (unsigned words) -> expected buffers

    @property
    def id(self) -> str:
        return f"{self.source}.{self.kernel}"


def model_vadd(b):
    n = 13
    c = list(b["c"])
    for i in range(16):
        if i < n:
            c[i] = (b["a"][i] + b["b"][i]) & M32
    return {**b, "c": c}


def model_mix(b):
    x, y = list(b["x"]), list(b["y"])
    for i in range(8):
        v, u = s32(b["x"][i]), b["y"][i]
        x[i] = (min(v, 7) + max(v, -3) + ((v * 12345) >> 32) + (v >> 3) + c_div(v, 8)
                + c_rem(v, 3)) & M32
        y[i] = (((u * 777) >> 32) + (u >> 5) + u // 7 + u % 10 + min(u, 9)
                + ((v & 0xFF) >> 2)) & M32
    return {"x": x, "y": y}


def model_shifts(s):
    def run(b):
        x = list(b["x"])
        for i in range(8):
            v = b["x"][i]
            k = s & 31
            rotate = ((v << k) & M32) | (v >> ((32 - s) & 31))
            x[i] = ((v << k) & M32) ^ (v >> k) ^ ((s32(v) >> k) & M32) ^ rotate
            x[i + 8] = ((v << 7) | (v >> 25)) & M32
            x[i + 16] = ((v >> 16) | (v << 16)) & M32
        return {"x": x}
    return run


def model_logic(lo, hi):
    def run(b):
        x = list(b["x"])
        for i in range(8):
            v = s32(b["x"][i])
            u = v & M32
            inside, three = lo <= v <= hi, v == 3
            a = int(v > 3) + int(v == 0) + int((v < 10) != (v > -10))
            c = 1 if inside and not three else (2 if three else 3)
            mixed = s32((~u & M32) + int(u == 0) - int(u != 7))
            x[i] = (a * 16 + c + mixed * 256) & M32
            x[i + 8] = (v - lo if v > lo else lo - v) & M32
            x[i + 16] = (max(min(u, 100), 5) + max(min(v, 100), -5) * 1000) & M32
        return {"x": x}
    return run


def model_bytes(b):
    x = list(b["x"])
    for i in range(8):
        v = b["x"][i]
        b0, b1 = v & 0xFF, (v >> 8) & 0xFF
        x[i] = ((v >> 3) & 0x1F) | (((v >> 11) & 7) << 20)
        x[i + 8] = (s32((v << 5) & M32) >> 27) & M32
        x[i + 16] = (v & 0xFF) | ((v >> 16 & 0xFF) << 8) | ((v >> 8 & 0xFF) << 16) | \
            ((v >> 24) << 24)
        x[i + 24] = ((b0 + b1) & 0xFF) | (((b0 * b1) & 0xFF) << 8)
    return {"x": x}


def model_divide(d, e):
    def run(b):
        x, y = list(b["x"]), list(b["y"])
        for i in range(8):
            v, u = s32(b["x"][i]), b["y"][i]
            x[i] = c_div(v, d) & M32
            x[i + 8] = c_rem(v, d) & M32
            y[i] = (u // e + (u % e) * 1000) & M32
        return {"x": x, "y": y}
    return run


def model_bit_count(b):
    x = list(b["x"])
    for i in range(8):
        v = b["x"][i]
        x[i + 8] = bin(v).count("1")
        x[i + 16] = 32 - v.bit_length()
        x[i + 24] = int(f"{v:032b}"[::-1], 2)
        x[i + 32] = (v & -v).bit_length()
    return {"x": x}


def model_weighted_prefix(b):
    x = list(b["x"])
    for i in range(16):
        x[i + 16] = sum(k * s32(b["x"][k]) for k in range(i)) & M32
    return {"x": x}


def model_branches(b):
    x = list(b["x"])
    for i in range(8):
        v = s32(b["x"][i])
        x[i] = (v * 3 if 0 < v < 100 else -v if v == -5 or v > 1000 else abs(v)) & M32
    return {"x": x}


def model_collatz(n):
    def run(b):
        x = list(b["x"])
        for i in range(min(n, 8)):
            v = s32(x[i])
            while v > 1:
                v = 3 * v + 1 if v & 1 else v >> 1
                x[i + 8] = (x[i + 8] + 1) & M32
            x[i] = v & M32
        return {"x": x}
    return run


def model_grid_stride(b):
    return {"x": [(s32(v) * 2 + 1) & M32 for v in b["x"]]}


def model_plus(amount, count):
    def run(b):
        x = list(b["x"])
        for i in range(count):
            x[i] = (x[i] + amount) & M32
        return {**b, "x": x}
    return run


def read_64(words):
    return [words[2 * i] | words[2 * i + 1] << 32 for i in range(len(words) // 2)]


def model_times_three(b):
    return {"x": words_64([s64(v) * 3 for v in read_64(b["x"])])}


def model_mix64(b):
    xs, ys = read_64(b["x"]), read_64(b["y"])
    x = [s64(a) + s64(c) * 5 - (s64(a) >> 3) + abs(s64(a)) for a, c in zip(xs, ys)]
    y = [((c << 13) ^ (c >> 7) ^ i) for i, c in enumerate(ys)]
    return {"x": words_64(x), "y": words_64(y)}


def model_affine64(a, c):
    return lambda b: {"x": words_64([a * i + c for i in range(4)])}


def byte_at(words, index):
    return (words[index // 4] >> (8 * (index % 4))) & 0xFF


def model_chars(b):
    out = [(byte_at(b["inp"], i) + sext(byte_at(b["inp"], i + 1), 8) * 3) & M32
           for i in range(8)]
    return {**b, "out": out}


def model_tables(b):
    x = [(table + ctable * 10 + s32(v) * 100) & M32
         for table, ctable, v in zip((1, 2, 3, 4), (5, 6, 7, 8), b["x"])]
    return {"x": x}


def model_swap_pairs(b):
    p = list(b["p"])
    for i in range(4):
        first, second = b["p"][2 * i], b["p"][2 * i + 1]
        p[2 * i], p[2 * i + 1] = second, (first + second) & M32
    return {"p": p}


def model_reverse4(b):
    return {"p": [word for i in range(4) for word in reversed(b["p"][4 * i:4 * i + 4])]}


def half_at(words, index):
    return (words[index // 2] >> (16 * (index % 2))) & 0xFFFF


def model_shorts(b):
    out = []
    for i in range(4):
        a, c = sext(half_at(b["s"], i), 16), half_at(b["u"], i)
        value = sext(a * c + 3, 16)
        out.append((value >> 1 if value > 5 else c >> 2) & M32)
    return {**b, "out": out}


X8 = [5, -9, 0, 1, 7, 8, 100000, -123456]
CASES = [
    Case("arith", "vadd", 2, 8, {"a": list(range(-8, 8)), "b": [3 * k for k in range(16)],
                                 "c": [-1] * 16}, ["a", "b", "c", 13], model_vadd),
    Case("arith", "mix", 1, 8, {"x": X8, "y": [0, 1, 9, 10, 0xFFFF_FFFF, 0x8000_0000, 77, 12345]},
         ["x", "y"], model_mix),
    Case("arith", "shifts", 1, 8, {"x": [1, 0x8000_0001, 0xDEAD_BEEF, 0, 0xFFFF_FFFF, 12, 7,
                                         0x1234_5678] + [0] * 16}, ["x", 5], model_shifts(5)),
    Case("arith", "shifts", 1, 8, {"x": [0x8000_0001, 0xDEAD_BEEF] * 4 + [0] * 16}, ["x", 37],
         model_shifts(37)),
    Case("arith", "shifts", 1, 8, {"x": [0x8000_0001, 0xDEAD_BEEF] * 4 + [0] * 16}, ["x", 0],
         model_shifts(0)),
    Case("arith", "logic", 1, 8, {"x": [3, -5, 0, 10, 4, 101, -100, 7] + [0] * 16},
         ["x", -5, 7], model_logic(-5, 7)),
    Case("arith", "bytes", 1, 8, {"x": [0xDEAD_BEEF, 0x8000_0001, 0xFF, 0x0102_0304, 0,
                                        0xFFFF_FFFF, 0x7F80_7F80, 0x1234_5678] + [0] * 24},
         ["x"], model_bytes),
    Case("arith", "divide", 1, 8, {"x": [100, -100, 7, -7, 0, 2147483647, -2147483648, 99] + [0] * 8,
                                   "y": [100, 0xFFFF_FFFF, 7, 6, 0, 0x8000_0000, 12345, 1]},
         ["x", "y", -7, 13], model_divide(-7, 13)),
    Case("arith", "divide", 1, 8, {"x": [100, -100, 7, -7, 0, 2147483647, -2147483648, 99] + [0] * 8,
                                   "y": [100, 0xFFFF_FFFF, 7, 6, 0, 0x8000_0000, 12345, 1]},
         ["x", "y", 3, 0xFFFF_FFFF], model_divide(3, 0xFFFF_FFFF)),
    Case("arith", "bit_count", 1, 8, {"x": [0, 1, 0x8000_0000, 0xFFFF_FFFF, 0x0F0F_0F0F,
                                            0x1234_5678, 6, 0x0001_0000] + [0] * 32}, ["x"],
         model_bit_count),
    Case("control", "weighted_prefix", 1, 16, {"x": [k * 7 - 20 for k in range(16)] + [0] * 16},
         ["x"], model_weighted_prefix),
    Case("control", "branches", 1, 8, {"x": [50, -5, 2000, -7, 0, 99, 100, 1001]}, ["x"],
         model_branches),
    Case("control", "collatz_steps", 1, 8, {"x": [27, 1, 6, 7, 9, 0, 12, 3] + [0] * 8},
         ["x", 6], model_collatz(6)),
    Case("control", "grid_stride", 2, 4, {"x": list(range(-10, 10))}, ["x", 20],
         model_grid_stride),
    Case("control", "size_t_loop", 1, 4, {"x": list(range(12))}, ["x", 10], model_plus(1, 10)),
    Case("control", "pointer_loop", 1, 4, {"x": list(range(10)), "end": [99]}, ["x", "end"],
         model_plus(10, 10)),
    Case("wide", "times_three", 1, 4, {"x": words_64([1, -1, 1 << 40, -(1 << 62) + 5])},
         ["x"], model_times_three),
    Case("wide", "mix64", 1, 4, {"x": words_64([1, -1, (1 << 40) + 3, -(1 << 50) - 7]),
                                 "y": words_64([3, M64, 1 << 35, 0x1234_5678_9ABC_DEF0])},
         ["x", "y"], model_mix64),
    Case("wide", "affine64", 1, 4, {"x": [0] * 8}, ["x", -70000, 2147483647],
         model_affine64(-70000, 2147483647)),
    Case("memory", "chars", 1, 8, {"inp": [0x80FF_017F, 0x0203_FE10, 0x0000_0081],
                                   "out": [0] * 8}, ["inp", "out"], model_chars),
    Case("memory", "struct_arg", 1, 4, {"x": [0] * 4}, ["x", [7, -3]],
         lambda b: {"x": [(7 * t - 3) & M32 for t in range(4)]}),
    Case("memory", "tables", 1, 4, {"x": [1, -2, 3, 40]}, ["x"], model_tables),
    Case("memory", "swap_pairs", 1, 4, {"p": list(range(1, 9))}, ["p"], model_swap_pairs),
    Case("memory", "reverse4", 1, 4, {"p": list(range(16))}, ["p"], model_reverse4),
    Case("memory", "shorts", 1, 4, {"s": [0xFFFF_0002, 0x7FFF_8000], "u": [0x0003_0005,
                                                                           0xFFFF_0002],
                                    "out": [0] * 4}, ["s", "u", "out"], model_shorts),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_its_model(case: Case):
    run = run_ptx(ptx(case.source), case.buffers, case.args, case.grid, case.block, case.kernel)
    assert run.result.trap is None, run.result.trap.message
    initial = {name: [value & M32 for value in values] for name, values in case.buffers.items()}
    assert run.words == case.model(initial)


def test_global_variables_are_laid_out_after_the_buffers():
    case = next(case for case in CASES if case.kernel == "tables")
    run = run_ptx(ptx("memory"), case.buffers, case.args, 1, 4, "tables")
    launch = run.result.launch
    assert [(r.name, r.base_word, r.words, r.kind) for r in launch.regions] == [
        ("x", 0, 4, "buffer"), ("table", 4, 4, "variable"), ("ctable", 8, 4, "variable"),
        ("scratch", 12, 4, "variable")]
    assert run.result.variables == {"table": [1, 2, 3, 4], "ctable": [5, 6, 7, 8],
                                    "scratch": [1, -2, 3, 40]}


def test_kernels_once_refused_for_shared_memory_and_short_stores_now_run():
    """unsupported.cu's shared_memory and store_short, refused before the machine had shared
    memory, barriers and sub-word stores, give what the CUDA source says."""
    from qwengpu.runtime.launch import launch_for_program, run_launch_sim

    module = parse_ptx_file(str(DATA / "unsupported.ptx"))
    x = [5, -6, 7, 100]
    shared = launch_for_program(compile_kernel(module, "shared_memory"), 1, 4, {"x": x}, ["x"])
    assert run_launch_sim(shared).buffers["x"] == x[::-1]
    halves = [3, -2, 30000, -1]             # four shorts in two words, low half first
    words = [(halves[0] & 0xFFFF) | (halves[1] & 0xFFFF) << 16,
             (halves[2] & 0xFFFF) | (halves[3] & 0xFFFF) << 16]
    short = launch_for_program(compile_kernel(module, "store_short"), 1, 4, {"s": words}, ["s"])
    got = [w & MASK32 for w in run_launch_sim(short).buffers["s"]]
    seven = [((h * 7) + 0x8000) % 0x10000 - 0x8000 for h in halves]
    assert got == [(seven[0] & 0xFFFF) | (seven[1] & 0xFFFF) << 16,
                   (seven[2] & 0xFFFF) | (seven[3] & 0xFFFF) << 16]


def test_a_kernel_that_needs_all_fifteen_registers_fits():
    program = compile_kernel(parse_ptx_file(str(DATA / "wide.ptx")), "mix64")
    assert program.registers_used == 15


NVCC = shutil.which("nvcc")


def _release(text: str) -> str | None:
    match = re.search(r"Cuda compilation tools, release [^\n]*", text)
    return match.group(0) if match else None


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("name", ["arith", "control", "wide", "memory", "unsupported", "bounds",
                                  "cuda_errors", "traps", "local", "spill", "float_bits",
                                  "float_convert"])
def test_checked_in_ptx_is_what_nvcc_makes(name):
    """The same text from the same nvcc release (apart from the debug strings, which hash the
    source's path); from another release, the same text apart from the header comments that
    name the compiler, or a skip if the code changed."""
    from qwengpu.ptx.nvcc import compile_cuda

    checked_in = ptx(name)
    fresh = compile_cuda(str(DATA / f"{name}.cu"))
    version = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout
    same_release = _release(version) is not None and _release(version) in checked_in
    if same_release:
        assert _without_debug_strings(fresh) == _without_debug_strings(checked_in), (
            f"tests/ptx/data/{name}.ptx is stale: run python tests/ptx/data/regen_ptx.py")
        return
    if _without_comments(_without_debug_strings(fresh)) != \
            _without_comments(_without_debug_strings(checked_in)):
        pytest.skip(f"nvcc {_release(version)} makes different code than the checked-in PTX")


def _without_debug_strings(ptx: str) -> str:
    """PTX without its `.section .debug_str` (-lineinfo's names of inlined functions, which
    nvcc makes unique with a hash of the source's absolute path: they differ by clone)."""
    return re.sub(r"\.section\s+\.debug_str\s*\{.*?\n\s*\}", ".section .debug_str", ptx,
                  flags=re.S)


def _without_comments(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.lstrip().startswith("//")]


def test_register_pressure_error_of_a_real_kernel(tmp_path):
    source = Path(__file__).parents[2] / "examples" / "too_big" / "kernel.ptx"
    if not source.exists():
        pytest.skip("the example corpus is not there")
    with pytest.raises(CapacityError, match=r"needs (\d+) registers at once here, but QwenGPU "
                                            r"has 15, and its spills need (\d+) words of local "
                                            r"memory a thread, but a thread has 16 \(LOCAL_WORDS; "
                                            r"(\d+) too many\)"):
        compile_kernel(parse_ptx_file(str(source)), "too_big")
