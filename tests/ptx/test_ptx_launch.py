"""Launch files, `hdlc run`, and the nvcc driver: every mistake in a launch is a located
LaunchError (exit 1, no traceback), and the three output forms say what the launch did."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from qwengpu.cli import main
from qwengpu.errors import CapacityError, LaunchError
from qwengpu.ptx import nvcc
from qwengpu.runtime.launch import load_launch, run_launch_sim

DATA = Path(__file__).parent / "data"
GOOD = {"source": "arith.ptx", "kernel": "vadd", "grid": 1, "block": 4,
        "buffers": {"a": [1, 2, 3, -4], "b": [10, 20, 30, 40], "c": [0, 0, 0, 0]},
        "args": ["a", "b", "c", 3]}


def write_launch(tmp_path: Path, data, name: str = "launch.json") -> Path:
    for ptx in DATA.glob("*.ptx"):
        shutil.copy(ptx, tmp_path / ptx.name)
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def test_load_and_run(tmp_path):
    launch = load_launch(str(write_launch(tmp_path, GOOD)))
    assert [(r.name, r.base_word, r.words) for r in launch.regions] == [
        ("a", 0, 4), ("b", 4, 4), ("c", 8, 4)]
    assert launch.params[:4] == [0, 16, 32, 3] and len(launch.params) == 8
    assert launch.memory[:12] == [1, 2, 3, 0xFFFF_FFFC, 10, 20, 30, 40, 0, 0, 0, 0]
    assert len(launch.memory) == 126
    assert launch.ptx_locations[0].line > 0
    result = run_launch_sim(launch)
    assert result.buffers == {"a": [1, 2, 3, -4], "b": [10, 20, 30, 40], "c": [11, 22, 33, 0]}
    assert result.trap is None and len(result.records) > 0


def variant(**changes):
    data = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    return data


BAD_LAUNCHES = [
    (variant(grid=0), "'grid' must be a positive integer or a list of 1 to 3 positive integers "
                      "([x, y, z]), not 0", "grid"),
    (variant(block=True), "'block' must be a positive integer or a list of 1 to 3 positive "
                          "integers ([x, y, z]), not True", "block"),
    (variant(kernel=None), "missing 'kernel'", None),
    (dict(variant(), extra=1), "unknown key 'extra'", "extra"),
    (variant(buffers=[1, 2]), "'buffers' must be an object", "buffers"),
    (variant(buffers={"a": [1, "2"]}), "buffer 'a' must be a list of integers", "a"),
    (variant(buffers={"a": [1 << 32]}), "not a 32-bit integer", "a"),
    (variant(args="a"), "'args' must be a list", "args"),
    (variant(args=["a", "b", "c"]), "kernel vadd takes 4 arguments, the launch gives 3", "args"),
    (variant(args=["a", "b", "nope", 3]), "argument 'nope' names no buffer (buffers: a, b, c)",
     "nope"),
    (variant(kernel="vmul"), "arith.ptx has no kernel named 'vmul'; it has: bit_count, bytes, "
                             "divide, logic, mix, shifts, vadd", "kernel"),
    (variant(args=["a", "b", "c", [1, 2]]), "takes a buffer name or an integer, not a list",
     "args"),
    (variant(args=["a", "b", "c", 1 << 32]), "does not fit parameter vadd_param_3", "args"),
    (variant(args=["a", "b", "c", "a"]), "parameter vadd_param_3 (.u32) cannot hold a pointer "
                                         "(a pointer is 8 bytes in this PTX", "args"),
    (variant(source="missing.ptx"), "PTX file not found", None),
    (variant(source="kernel.cpp"), "must be a .cu or .ptx file", None),
]


@pytest.mark.parametrize("data,message,key", BAD_LAUNCHES,
                         ids=[row[1][:40] for row in BAD_LAUNCHES])
def test_launch_mistakes_are_located(tmp_path, data, message, key):
    path = write_launch(tmp_path, data)
    with pytest.raises(LaunchError) as caught:
        load_launch(str(path))
    error = caught.value
    assert message in error.message
    if key is not None:
        line = path.read_text().splitlines()[error.loc.line - 1]
        assert line[error.loc.column - 1:].startswith(f'"{key}"')


def test_invalid_json_points_at_the_problem(tmp_path):
    path = write_launch(tmp_path, '{\n  "source": "arith.ptx",\n  "grid": 1,,\n}')
    with pytest.raises(LaunchError) as caught:
        load_launch(str(path))
    assert caught.value.loc.line == 3 and "not valid JSON" in caught.value.message


def test_memory_and_warp_limits(tmp_path):
    big = variant(buffers={"a": [0] * 60, "b": [0] * 60, "c": [0] * 10})
    with pytest.raises(CapacityError, match=r"the buffers need 130 words \(a: 60, b: 60, c: 10\), "
                                            r"but QwenGPU has 126 words of memory \(4 too many\)"):
        load_launch(str(write_launch(tmp_path, big)))
    with pytest.raises(CapacityError, match=r"the launch needs 9 warps .* QwenGPU has 8"):
        load_launch(str(write_launch(tmp_path, variant(grid=3, block=12))))


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["run", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_prints_buffers_json_and_trace(tmp_path, capsys):
    path = write_launch(tmp_path, GOOD)
    code, out, err = run_cli(capsys, path)
    assert code == 0 and err == ""
    assert out == "a = [1, 2, 3, -4]\nb = [10, 20, 30, 40]\nc = [11, 22, 33, 0]\n"
    code, out, err = run_cli(capsys, path, "--json", "--backend", "sim")
    result = json.loads(out)
    assert code == 0 and set(result) == {"buffers", "records", "tokens", "prompt_tokens",
                                               "trap"}
    assert result["buffers"]["c"] == [11, 22, 33, 0] and result["trap"] is None
    assert out.count("\n") == 1
    code, out, err = run_cli(capsys, path, "--trace")
    assert code == 0
    assert "ld.param.u64 %rd1, [vadd_param_0];" in out
    assert "branch to" in out and "exit: lanes 0 1 2 3 finish" in out
    assert "store c[0] = 11 (lane 0), c[1] = 22 (lane 1), c[2] = 33 (lane 2)" in out
    assert f"{result['records']} records" in out.splitlines() and out.endswith("c = [11, 22, 33, 0]\n")
    code, out, err = run_cli(capsys, path, "--trace", "--json")
    assert json.loads(out)["records"] == result["records"] and "branch to" in err


def test_cli_trap_exits_1_with_the_ptx_line(tmp_path, capsys):
    path = write_launch(tmp_path, {"source": "control.ptx", "kernel": "grid_stride", "grid": 1,
                                   "block": 4, "buffers": {"x": [0] * 8}, "args": ["x", 1000]})
    code, out, err = run_cli(capsys, path, "--json")
    assert code == 1
    trap = json.loads(out)["trap"]
    assert trap["kind"] == "address out of range" and trap["warp"] == 0
    assert err.startswith(f"{tmp_path / 'control.ptx'}:{trap['ptx_line']}:")
    assert "trap: address out of range" in err and "lane" in err


def test_cli_user_errors_exit_1_without_a_traceback(tmp_path, capsys):
    code, out, err = run_cli(capsys, tmp_path / "nothing.json")
    assert code == 1 and "launch file not found" in err and "Traceback" not in err
    path = write_launch(tmp_path, GOOD)
    code, out, err = run_cli(capsys, path, "--backend", "model")
    assert code == 1 and "needs --model DIR" in err
    code, out, err = run_cli(capsys, path, "--max-records", "3")
    assert code == 1 and "did not finish within 3 records" in err
    code, out, err = run_cli(capsys, path, "--max-records", "3", "--json")   # one launch
    assert code == 1 and "did not finish within 3 records" in json.loads(out)["error"]
    assert json.loads(out)["launch"] == str(path) and "Traceback" not in err


def test_nvcc_missing_names_the_pip_package(tmp_path, monkeypatch):
    monkeypatch.setattr(nvcc, "find_nvcc", lambda: None)
    (tmp_path / "k.cu").write_text("extern \"C\" __global__ void k() {}\n")
    with pytest.raises(LaunchError, match="pip install nvidia-cuda-nvcc"):
        nvcc.compile_cuda(str(tmp_path / "k.cu"))


def test_nvcc_is_found_in_the_pypi_wheel_layout(tmp_path, monkeypatch):
    binary = tmp_path / "nvidia" / "cu13" / "bin" / "nvcc"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.delenv("NVCC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    importlib.invalidate_caches()
    assert nvcc.find_nvcc() == str(binary)


needs_nvcc = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc is not installed")


@needs_nvcc
def test_cu_source_runs_and_nvcc_errors_are_nvccs_own(tmp_path, capsys):
    shutil.copy(DATA / "arith.cu", tmp_path / "arith.cu")
    path = write_launch(tmp_path, variant(source="arith.cu"))
    code, out, err = run_cli(capsys, path)
    assert code == 0 and "c = [11, 22, 33, 0]" in out
    (tmp_path / "broken.cu").write_text("extern \"C\" __global__ void k(int *x) { x[0] = y; }\n")
    code, out, err = run_cli(capsys, write_launch(tmp_path, variant(source="broken.cu",
                                                                    kernel="k", args=["a"])))
    assert code == 1 and "nvcc failed" in err and "identifier \"y\" is undefined" in err
    assert os.listdir(tmp_path).count("broken.ptx") == 0


def test_trace_names_the_cuda_line_when_the_ptx_has_line_info(tmp_path, capsys):
    (tmp_path / "lines.ptx").write_text(""".version 9.0
.target sm_80
.address_size 64
.visible .entry lines(.param .u64 lines_out)
{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    .loc 1 7 3
    ld.param.u64 %rd1, [lines_out];
    mov.u32 %r1, %tid.x;
    st.global.u32 [%rd1], %r1;
    ret;
}
.file 1 "/somewhere/kernel.cu"
""")
    path = tmp_path / "lines.json"
    path.write_text(json.dumps({"source": "lines.ptx", "kernel": "lines", "grid": 1, "block": 1,
                                "buffers": {"out": [5]}, "args": ["out"]}))
    code, out, err = run_cli(capsys, path, "--trace")
    assert code == 0 and "; line 9: ld.param.u64 %rd1, [lines_out];  (kernel.cu:7)" in out
    assert out.endswith("out = [0]\n")
