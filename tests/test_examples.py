"""The example corpus (examples/**): layout, independent expectations, and runs on the sim.

Every example folder holds kernel.cu, kernel.ptx (nvcc -ptx -arch=sm_80 -O3 -lineinfo), launch.json,
model.py (a plain-Python per-thread reading of kernel.cu) and expected.json (written by
examples/make_expected.py from the model, never from the machine).

- test_layout / test_kernel_source_rules: the launch fits the machine (126 words, 8 warps,
  8 parameter words) and the kernel stays in the integer subset.
- test_expected_up_to_date: re-runs each model and compares with expected.json.
- test_run_from_ptx / test_run_from_cu: `hdlc run LAUNCH --backend sim --json` in-process,
  buffers compared word for word with expected.json; error examples must exit 1 with the
  expected substring in stderr.  The .cu variant needs nvcc on PATH.
- test_reduced_machine_*: the examples whose model.py sets MACHINE (the -P parameters of a
  reduced machine, e.g. one lane and one warp, or of one with more instruction slots) fit it
  and run on it exactly as well; one that sets DEFAULT_MACHINE_ERROR too must be refused on
  the default machine with that error.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qwengpu.ptx.nvcc import NVCC_FLAGS, relative_file_paths
from tiers import SPREAD, spread_by_default

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = ROOT / "examples"
if str(EXAMPLES_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLES_DIR))

import _int32  # noqa: E402  (examples/_int32.py)
import make_expected  # noqa: E402  (examples/make_expected.py)

MEM_WORDS = 126
WARPS = 8
LANES = 4
PARAM_WORDS = 8

EXAMPLES = make_expected.example_dirs(EXAMPLES_DIR)
IDS = [str(p.relative_to(EXAMPLES_DIR)) for p in EXAMPLES]
REDUCED = {example: params for example in EXAMPLES
           if (params := make_expected.machine_params(example))}
REDUCED_IDS = [str(p.relative_to(EXAMPLES_DIR)) for p in REDUCED]
MACHINE_PARAMETERS = {"LANES", "WARPS", "REGS", "PREDS", "MEM_WORDS", "PARAM_WORDS",
                      "PROG_WORDS"}
NVCC = shutil.which("nvcc")


def _load(example: Path, name: str) -> dict:
    return json.loads((example / name).read_text())


def test_corpus_size():
    seen = [p for p in EXAMPLES if p.parent == EXAMPLES_DIR]
    unseen = [p for p in EXAMPLES if p.parent.name == "unseen"]
    assert len(seen) >= 20          # 18+ kernels plus too_big and out_of_bounds
    assert len(unseen) >= 4
    assert (EXAMPLES_DIR / "too_big") in EXAMPLES
    assert (EXAMPLES_DIR / "out_of_bounds") in EXAMPLES


# --- layout -------------------------------------------------------------------------------

@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_layout(example: Path):
    for name in ("kernel.cu", "kernel.ptx", "launch.json", "expected.json", "model.py"):
        assert (example / name).is_file(), f"{example.name}: missing {name}"
    launch = _load(example, "launch.json")
    required = {"source", "kernel", "grid", "block", "buffers", "args"}
    assert required <= set(launch) <= required | {"shared_bytes"}
    assert launch["source"] == "kernel.cu"
    grid, block = _threads(launch["grid"]), _threads(launch["block"])
    assert grid * -(-block // LANES) <= WARPS, "more warps than the machine has"
    words = 0
    for name, values in launch["buffers"].items():
        assert re.fullmatch(r"[A-Za-z_]\w*", name)
        if isinstance(values, dict):                  # binary32 values (docs/launch.md)
            assert example.name.startswith("float_") and list(values) == ["f32"]
            values = values["f32"]
            assert values and all(isinstance(v, (int, float)) or v in ("nan", "inf", "-inf")
                                  for v in values)
        else:
            assert values and all(isinstance(v, int) and -(2**31) <= v < 2**32
                                  for v in values)
        words += len(values)
    assert words <= MEM_WORDS, f"buffers take {words} words"
    # A pointer is one 32-bit byte address on QwenGPU (docs/isa.md), a scalar one word.
    assert len(launch["args"]) <= PARAM_WORDS
    for arg in launch["args"]:
        if isinstance(arg, str):
            assert arg in launch["buffers"], f"argument {arg!r} names no buffer"
        else:
            assert isinstance(arg, int) and -(2**31) <= arg < 2**32
    # The PTX entry and the kernel's parameter count agree with the launch.
    ptx = (example / "kernel.ptx").read_text()
    entry = re.search(r"\.entry\s+(\w+)\s*\((.*?)\)", ptx, re.S)
    assert entry and entry.group(1) == launch["kernel"]
    assert len(re.findall(r"\.param\s", entry.group(2))) == len(launch["args"])

    expected = _load(example, "expected.json")
    assert len(expected) == 1 and next(iter(expected)) in {"buffers", "error", "trap"}
    if "buffers" in expected:
        assert list(expected["buffers"]) == list(launch["buffers"])
        for name, values in expected["buffers"].items():
            given = launch["buffers"][name]
            assert len(values) == len(given["f32"] if isinstance(given, dict) else given)
            assert all(isinstance(v, int) and -(2**31) <= v < 2**31 for v in values)


def _threads(shape) -> int:
    """A launch's grid or block (a number, or a list of 1 to 3: dim3) as a count."""
    numbers = [shape] if isinstance(shape, int) else shape
    assert isinstance(numbers, list) and 1 <= len(numbers) <= 3
    assert all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in numbers)
    count = 1
    for number in numbers:
        count *= number
    return count


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_kernel_source_rules(example: Path):
    source = (example / "kernel.cu").read_text()
    code = re.sub(r"//[^\n]*", "", source)
    launch = _load(example, "launch.json")
    assert re.search(r'extern\s+"C"\s+__global__\s+void\s+' + launch["kernel"] + r"\s*\(", code)
    # floats only in the float_ examples, whose .f32 instructions need no FPU (docs/fpu.md)
    floats = example.name.startswith("float_")
    for banned in ("double", "printf", "malloc") + (() if floats else ("float",)):
        assert banned not in code, f"{example.name}: uses {banned}"
    ptx = (example / "kernel.ptx").read_text()
    for banned in (".f64", "vprintf") + (() if floats else (".f32",)):
        assert banned not in ptx, f"{example.name}: PTX contains {banned}"
    # a division is a 330-record loop unless it is by a constant: only by the warp's size,
    # except in the example that is about division
    if example.name == "divide64":
        return
    warp_size = set(re.findall(r"mov\.u32\s+(%r\d+),\s*WARP_SZ;", ptx))
    for divisor in re.findall(r"\b(?:div|rem)\.[su]32\s+%r\d+,\s*%r\d+,\s*(%r\d+);", ptx):
        assert divisor in warp_size, f"{example.name}: divides by a variable ({divisor})"
    assert not re.search(r"\b(?:div|rem)\.[su](?:8|16|64)\b", ptx), example.name


def test_regen_script_uses_the_project_flags():
    script = (EXAMPLES_DIR / "regen_ptx.sh").read_text()
    assert "-ptx -arch=sm_80 -O3 -lineinfo kernel.cu -o kernel.ptx" in script
    assert " ".join(NVCC_FLAGS) == "-ptx -arch=sm_80 -O3 -lineinfo"   # the loader's driver


# --- the independent models ---------------------------------------------------------------

@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_expected_up_to_date(example: Path):
    assert make_expected.compute_expected(example) == _load(example, "expected.json"), (
        "expected.json is stale: run python examples/make_expected.py")


def test_int32_helpers():
    i = _int32
    assert i.to_signed(0xFFFF_FFFF) == -1 and i.to_unsigned(-1) == 0xFFFF_FFFF
    assert i.to_signed(0x8000_0000) == i.INT_MIN
    assert i.shr_s(-1, 31) == -1 and i.shr_u(-1, 31) == 1
    assert i.shr_s(i.INT_MIN, 3) == -(2**28) and i.shr_u(i.INT_MIN, 3) == 2**28
    assert i.shl(1, 31) == 0x8000_0000 and i.shl(3, 31) == 0x8000_0000
    assert i.rotl(0x8000_0001, 1) == 3 and i.rotl(0x1234_5678, 0) == 0x1234_5678
    assert i.rotr(1, 1) == 0x8000_0000
    assert i.mulhi_s(i.INT_MIN, i.INT_MIN) == 2**30
    assert i.mulhi_s(-1, 1) == -1 and i.mulhi_u(-1, 1) == 0
    assert i.mulhi_u(0xFFFF_FFFF, 0xFFFF_FFFF) == 0xFFFF_FFFE
    assert i.sdiv(-7, 2) == -3 and i.srem(-7, 2) == -1 and i.srem(7, -2) == 1
    assert i.sdiv(i.INT_MIN, 8) == -(2**28)
    assert i.udiv(-1, 10) == 429496729 and i.urem(-1, 10) == 5
    assert i.hi32(i.mul_wide_s(-1, 1)) == 0xFFFF_FFFF and i.hi32(i.mul_wide_u(-1, 1)) == 0
    assert i.uadd(i.INT_MAX, 1) == 0x8000_0000 and i.usub(0, 1) == 0xFFFF_FFFF
    with pytest.raises(i.SignedOverflow):
        i.sadd(i.INT_MAX, 1)
    with pytest.raises(i.SignedOverflow):
        i.sneg(i.INT_MIN)
    with pytest.raises(i.SignedOverflow):
        i.smul(65536, 32768)
    with pytest.raises(i.UndefinedShift):
        i.shl(1, 32)
    buf = i.Buffer("b", [0, 0xFFFF_FFFF])
    assert buf[1] == -1
    buf[0] = 0x1_0000_0005
    assert buf[0] == 5
    with pytest.raises(i.AddressFault):
        buf[2] = 1
    with pytest.raises(i.AddressFault):
        buf[-1]


def test_run_grid_detects_races():
    launch = {"grid": 1, "block": 4, "buffers": {"o": [0]}, "args": ["o"]}

    def racy(th, o):
        o[0] = th.threadIdx          # last writer wins: depends on thread order

    with pytest.raises(AssertionError, match="race"):
        _int32.run_grid(launch, racy)

    def fine(th, o):
        if th.threadIdx == 2:
            o[0] = 7

    assert _int32.run_grid(launch, fine) == {"buffers": {"o": [7]}}


# --- running on the machine (hdlc run --backend sim) ---------------------------------------

def _run_cli(capsys, launch_path: Path, flags: tuple[str, ...] = ()) -> tuple[int, str, str]:
    from qwengpu.cli import main

    capsys.readouterr()
    try:
        code = main(["run", str(launch_path), "--backend", "sim", "--json", *flags])
    except SystemExit as stop:           # argparse errors
        code = stop.code if isinstance(stop.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _check_result(example: Path, code: int, out: str, err: str,
                  on_default_machine: bool = True) -> None:
    expected = _load(example, "expected.json")
    refused = make_expected.default_machine_error(example) if on_default_machine else None
    if refused:             # written for a machine with more room (its MACHINE)
        expected = {"error": refused}
    if "buffers" not in expected:
        want = expected.get("error") or expected.get("trap")
        assert code == 1, f"expected exit 1 ({want}), got {code}\nstdout: {out}\nstderr: {err}"
        assert want.lower() in err.lower(), f"stderr does not mention {want!r}:\n{err}"
        return
    assert code == 0, f"hdlc run exited {code}\nstderr: {err}"
    result = json.loads(out)
    assert isinstance(result.get("records"), int) and result["records"] > 0
    got = result["buffers"]
    assert set(got) == set(expected["buffers"]), f"buffers {sorted(got)}"
    for name, want in expected["buffers"].items():
        words = got[name]
        assert all(isinstance(v, int) for v in words), f"{name}: non-integer words"
        # Words are compared as 32-bit patterns: the CLI may print them signed or unsigned.
        assert [_int32.to_signed(v) for v in words] == want, f"buffer {name!r} differs"


def _stage(example: Path, tmp_path: Path, source: str) -> Path:
    shutil.copy(example / source, tmp_path / source)
    launch = _load(example, "launch.json")
    launch["source"] = source
    path = tmp_path / "launch.json"
    path.write_text(json.dumps(launch))
    return path


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_run_from_ptx(example: Path, tmp_path: Path, capsys):
    launch_path = _stage(example, tmp_path, "kernel.ptx")
    _check_result(example, *_run_cli(capsys, launch_path))


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("example", spread_by_default(EXAMPLES, 8, IDS))
def test_run_from_cu(example: Path, tmp_path: Path, capsys):
    launch_path = _stage(example, tmp_path, "kernel.cu")
    _check_result(example, *_run_cli(capsys, launch_path))


def _machine_flags(params: dict[str, int]) -> tuple[str, ...]:
    return tuple(flag for name, value in params.items() for flag in ("-P", f"{name}={value}"))


def test_some_examples_target_a_one_lane_machine():
    assert len(REDUCED) >= 2
    assert any(params["LANES"] == 1 and params["WARPS"] == 1 for params in REDUCED.values())


@pytest.mark.parametrize("example", REDUCED, ids=REDUCED_IDS)
def test_reduced_machine_layout(example: Path):
    params = REDUCED[example]
    assert set(params) == MACHINE_PARAMETERS
    launch = _load(example, "launch.json")
    assert launch["grid"] * -(-launch["block"] // params["LANES"]) <= params["WARPS"]
    assert sum(len(values) for values in launch["buffers"].values()) <= params["MEM_WORDS"]
    assert len(launch["args"]) <= params["PARAM_WORDS"]
    assert "buffers" in _load(example, "expected.json")


@pytest.mark.parametrize("example", REDUCED, ids=REDUCED_IDS)
def test_reduced_machine_run_from_ptx(example: Path, tmp_path: Path, capsys):
    launch_path = _stage(example, tmp_path, "kernel.ptx")
    flags = _machine_flags(REDUCED[example])
    _check_result(example, *_run_cli(capsys, launch_path, flags), on_default_machine=False)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("example", REDUCED, ids=REDUCED_IDS)
def test_reduced_machine_run_from_cu(example: Path, tmp_path: Path, capsys):
    launch_path = _stage(example, tmp_path, "kernel.cu")
    flags = _machine_flags(REDUCED[example])
    _check_result(example, *_run_cli(capsys, launch_path, flags), on_default_machine=False)


def _nvcc_release(text: str) -> str | None:
    match = re.search(r"Cuda compilation tools, release [^\n]*", text)
    return match.group(0) if match else None


def without_debug_strings(ptx: str) -> str:
    """PTX without its `.section .debug_str` (-lineinfo's names of inlined functions, which
    nvcc makes unique with a hash of the source's absolute path: they differ by folder)."""
    return re.sub(r"\.section\s+\.debug_str\s*\{.*?\n\s*\}", ".section .debug_str", ptx,
                  flags=re.S)


@functools.lru_cache(maxsize=1)
def _nvcc_version() -> str:
    return subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("example", spread_by_default(EXAMPLES, SPREAD, IDS))
def test_checked_in_ptx_matches_source(example: Path, tmp_path: Path):
    """kernel.ptx is what regen_ptx.sh makes of kernel.cu (same nvcc release only), made here
    in another folder: every third example by default (nvcc takes about 0.7 s an example),
    the rest in the extra tier (tests/tiers.py)."""
    checked_in = (example / "kernel.ptx").read_text()
    version = _nvcc_version()
    if _nvcc_release(version) is None or _nvcc_release(version) not in checked_in:
        pytest.skip("the checked-in PTX was made by another nvcc release")
    shutil.copy(example / "kernel.cu", tmp_path / "kernel.cu")
    subprocess.run([NVCC, *NVCC_FLAGS, "kernel.cu", "-o", "kernel.ptx"],
                   cwd=tmp_path, check=True, capture_output=True)
    fresh = relative_file_paths((tmp_path / "kernel.ptx").read_text(), tmp_path.resolve())
    assert without_debug_strings(fresh) == without_debug_strings(checked_in), (
        "kernel.ptx is stale: run examples/regen_ptx.sh")
