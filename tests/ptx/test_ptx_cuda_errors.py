"""Errors in CUDA terms (docs/ptx.md "Errors"): tests/ptx/data/cuda_errors.cu holds a kernel
for each thing the loader refuses in words, and its checked-in PTX (nvcc -lineinfo).

The CUDA line each message must name is found here by searching the .cu text for the
statement (never from the PTX's `.loc`s, which the loader reads).  For the checked-in `.ptx`
the PTX line stays the location and the CUDA line is a note; for the `.cu` itself (when nvcc
is there) the CUDA line is the location and no message names the `.cu.ptx` that nvcc made in
memory.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from qwengpu.cli import main
from qwengpu.errors import Location, UserError
from qwengpu.ptx import nvcc
from qwengpu.ptx.compile import compile_kernel, find_kernel, kernel_list, read_module
from qwengpu.ptx.cuda_lines import CudaLines, readable
from qwengpu.ptx.parser import parse_ptx, parse_ptx_file

from ptx_harness import M32, run_ptx

DATA = Path(__file__).parent / "data"
CU = DATA / "cuda_errors.cu"
PTX = DATA / "cuda_errors.ptx"
needs_nvcc = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc is not installed")


def cuda_line(after: str, text: str) -> int:
    """The number of the first line of cuda_errors.cu holding `text` after the line holding
    `after` (a kernel's signature)."""
    lines = CU.read_text().splitlines()
    start = next(number for number, line in enumerate(lines) if after in line)
    return next(number for number, line in enumerate(lines[start:], start + 1) if text in line)


# kernel, what the message says, the CUDA statement it is about (after the kernel's name)
REFUSED = [
    ("function_pointer", "indirect calls (function pointers, virtual functions) are not "
                         "supported by QwenGPU", "pick(x[threadIdx.x])"),
    ("unrolled_scale", "kernel unrolled_scale needs 34 registers at once here, but QwenGPU has "
                       "15, and its spills need 19 words of local memory a thread, but a "
                       "thread has 16 (LOCAL_WORDS; 3 too many); nvcc unrolled the loop at "
                       "cuda_errors.cu:{loop} (for (int k = 0; k < 32; k++)) completely, which "
                       "keeps several iterations' values in registers at once: put `#pragma "
                       "unroll 1` before the loop", "s += x[k];"),
]


def _expected(kernel: str, message: str, statement: str) -> tuple[str, int]:
    signature = f" {kernel}("
    line = cuda_line(signature, statement)
    loop = cuda_line(signature, "for (")
    return message.format(line=line, loop=loop), line


@pytest.mark.parametrize("kernel,message,statement", REFUSED, ids=[row[0] for row in REFUSED])
def test_checked_in_ptx_names_the_cuda_line_in_a_note(kernel, message, statement):
    message, line = _expected(kernel, message, statement)
    module = parse_ptx_file(str(PTX))
    with pytest.raises(UserError) as caught:
        compile_kernel(module, kernel)
    error = caught.value
    assert message in error.message
    assert error.loc.file == str(PTX)                        # the PTX file is the location
    assert [(note.loc, note.message) for note in error.notes] == [
        (Location(str(CU), line, _column(line)), "from this CUDA line")]
    rendered = error.render()
    assert f"{CU}:{line}:{_column(line)}: note: from this CUDA line\n" in rendered
    assert CU.read_text().splitlines()[line - 1] + "\n" in rendered


def _column(line: int) -> int:
    """nvcc's column of a statement: its first character."""
    text = CU.read_text().splitlines()[line - 1]
    return len(text) - len(text.lstrip()) + 1


@needs_nvcc
@pytest.mark.parametrize("kernel,message,statement", REFUSED, ids=[row[0] for row in REFUSED])
def test_a_cu_source_is_told_at_its_cuda_line(kernel, message, statement, tmp_path):
    message, line = _expected(kernel, message, statement)
    shutil.copy(CU, tmp_path / CU.name)
    source = str(tmp_path / CU.name)
    with pytest.raises(UserError) as caught:
        compile_kernel(read_module(source), kernel)
    error = caught.value
    rendered = error.render()
    assert error.loc == Location(source, line, _column(line)) and message in error.message
    assert ".cu.ptx" not in rendered
    cuda_text = CU.read_text().splitlines()[line - 1]
    ptx_line = int(re.search(r"note: PTX line (\d+) of nvcc's output: ", rendered).group(1))
    ptx_text = " ".join(PTX.read_text().expandtabs(8).splitlines()[ptx_line - 1].split())
    assert rendered.startswith(f"{source}:{line}:{_column(line)}: error: ")
    assert f"\n{cuda_text}\n{' ' * (_column(line) - 1)}^\nnote: PTX line {ptx_line} of nvcc's " \
           f"output: {ptx_text}" in rendered


def test_the_suggested_pragma_makes_the_kernel_fit_and_it_runs():
    """`#pragma unroll 1` is what the message suggests: the same loops kept rolled fit, and
    compute what the CUDA says (a plain-Python model)."""
    text = PTX.read_text()
    a, b, c, d, n = [3, -1, 7, 2, 5], [2, 2, -3, 4, 1], [1, 0, 5, 5, -2], [9, 8, 7, 6, 5], 5
    run = run_ptx(text, {"a": a, "b": b, "c": c, "d": d, "out": [0] * 4},
                  ["a", "b", "c", "d", "out", n], block=4, kernel="rolled_dot")
    total = sum(a[k] * b[k] + c[k] * d[k] for k in range(n))
    assert run.result.trap is None and run.words["out"] == [total & M32] * 4
    x = list(range(-16, 16))
    run = run_ptx(text, {"x": x, "out": [0] * 32}, ["x", "out"], block=1, kernel="rolled_scale")
    assert run.words["out"] == [(value * sum(x)) & M32 for value in x]


def test_an_unrolled_loop_that_spills_runs():
    """unrolled_dot needs 17 registers: the allocator spills to local memory (it was refused
    before there was spilling), and it computes what the CUDA says."""
    text = PTX.read_text()
    program = compile_kernel(parse_ptx_file(str(PTX)), "unrolled_dot")
    assert program.local_bytes > 0 and any(slot.note for slot in program.slots)
    a, b, c, d, n = [3, -1, 7, 2, 5, 6], [2, 2, -3, 4, 1, 0], [1, 0, 5, 5, -2, 9], \
        [9, 8, 7, 6, 5, -4], 6
    run = run_ptx(text, {"a": a, "b": b, "c": c, "d": d, "out": [0] * 4},
                  ["a", "b", "c", "d", "out", n], block=4, kernel="unrolled_dot")
    total = sum(a[k] * b[k] + c[k] * d[k] for k in range(n))
    assert run.result.trap is None and run.words["out"] == [total & M32] * 4


def test_byte_dot_products_run():
    """`__dp4a` and the char4 dot product nvcc writes as dp4a (refused before dp4a was
    lowered) compute what the CUDA says: signed bytes."""
    text = PTX.read_text()
    a = [0x01020304, 0x80FF7F01, -1, 0x10203040]
    b = [0x05060708, 0x7F80FF02, 0x01010101, -0x0F0F0F10]

    def signed_bytes(word):
        return [((word >> (8 * k)) & 0xFF) - (256 if (word >> (8 * k)) & 0x80 else 0)
                for k in range(4)]

    expected = [sum(x * y for x, y in zip(signed_bytes(p), signed_bytes(q))) & M32
                for p, q in zip(a, b)]
    for kernel in ("byte_dot", "char_dot"):
        run = run_ptx(text, {"a": a, "b": b, "out": [0] * 4}, ["a", "b", "out"], block=4,
                      kernel=kernel)
        assert run.words["out"] == expected, kernel


def test_a_kernel_without_a_loop_gets_no_unrolling_hint():
    source = Path(__file__).parents[2] / "examples" / "too_big" / "kernel.ptx"
    with pytest.raises(UserError) as caught:
        compile_kernel(parse_ptx_file(str(source)), "too_big")
    assert "needs 42 registers" in caught.value.message
    assert "unroll" not in caught.value.message


def test_cpp_names_are_demangled_and_choose_kernels():
    module = parse_ptx_file(str(PTX))
    assert readable("_ZZ13shared_reduceE1s") == "shared_reduce::s"
    assert readable("_Z13shared_reducePi_param_0") == "shared_reduce(int*)_param_0"
    assert readable("vector_add") == "vector_add" and readable("_Zbogus") == "_Zbogus"
    mangled = module.kernels["_Z13shared_reducePi"]
    assert find_kernel(module.kernels, "shared_reduce") is mangled
    assert find_kernel(module.kernels, "shared_reduce(int*)") is mangled
    assert find_kernel(module.kernels, "_Z13shared_reducePi") is mangled
    assert find_kernel(module.kernels, "shared") is None
    assert "shared_reduce(int*)" in kernel_list(module) and "_Z13" not in kernel_list(module)
    with pytest.raises(UserError, match=r"no kernel named 'nope'; this file has: byte_dot, "
                                        r"char_dot, .*shared_reduce\(int\*\)"):
        compile_kernel(module, "nope")


def test_a_launch_names_a_cpp_kernel_by_its_cpp_name(tmp_path, capsys):
    shutil.copy(PTX, tmp_path / PTX.name)
    launch = tmp_path / "launch.json"
    launch.write_text(json.dumps({"source": PTX.name, "kernel": "shared_reduce", "grid": 1,
                                  "block": 4, "buffers": {"x": [1, 2, 3, 4]}, "args": ["x"]}))
    assert main(["run", str(launch)]) == 0
    assert capsys.readouterr().out == "x = [10, 10, 10, 10]\n"
    (tmp_path / "fill.ptx").write_text(FILL)
    for name, code in (("fill", 0), ("fill(int*, int)", 0), ("_Z4fillPii", 0), ("fil", 1)):
        launch.write_text(json.dumps({"source": "fill.ptx", "kernel": name, "grid": 1,
                                      "block": 4, "buffers": {"x": [0] * 4}, "args": ["x", 7]}))
        assert main(["run", str(launch)]) == code
        out, err = capsys.readouterr()
        assert code == 1 or out == "x = [7, 7, 7, 7]\n"
    assert "fill.ptx has no kernel named 'fil'; it has: fill(int*, int)" in err
    launch.write_text(json.dumps({"source": "fill.ptx", "kernel": "fill", "grid": 1,
                                  "block": 4, "buffers": {"x": [0] * 4}, "args": ["x"]}))
    assert main(["run", str(launch)]) == 1
    assert "kernel fill(int*, int) takes 2 arguments, the launch gives 1; its parameters: " \
           "fill(int*, int)_param_0 (.u64), fill(int*, int)_param_1 (.u32)" in \
           capsys.readouterr().err


# `__global__ void fill(int *x, int v) { x[threadIdx.x] = v; }` as nvcc names it in PTX
FILL = """.version 9.0
.target sm_80
.address_size 64
.visible .entry _Z4fillPii(.param .u64 _Z4fillPii_param_0, .param .u32 _Z4fillPii_param_1)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [_Z4fillPii_param_0];
    ld.param.u32 %r1, [_Z4fillPii_param_1];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r1;
    ret;
}
"""


def test_cuda_lines_follow_nvccs_conventions():
    """Lines before a function's first .loc are its line; line 0 keeps the last one; code
    inlined from a header is put at its call site in the function's file."""
    text = """.version 9.0
.target sm_80
.address_size 64
.visible .entry k(
    .param .u64 k_p
)
{
    .reg .b32 %r<3>;
    .loc 1 4 0
    mov.u32 %r1, 1;
    .loc 1 0 5
    mov.u32 %r2, 2;
    .loc 2 110 3, function_name $L__info_string0, inlined_at 1 6 5
    bar.warp.sync -1;
    .loc 3 9 1
    ret;
}
.file 1 "kernel.cu"
.file 2 "/usr/local/cuda/include/sm_30_intrinsics.hpp"
"""
    lines = CudaLines(text, "dir/kernel.ptx")
    assert lines.at(4) == lines.at(8) == lines.at(10) == Location("dir/kernel.cu", 4, 0)
    assert lines.at(12) == Location("dir/kernel.cu", 4, 0)          # .loc 1 0 5
    assert lines.at(14) == Location("dir/kernel.cu", 6, 5)          # inlined_at
    assert lines.at(16) is None                                     # no .file 3
    assert lines.at(2) is None                                      # outside every function
    module = parse_ptx(text, "dir/kernel.ptx")
    assert [ins.cuda_loc for ins in module.kernels["k"].body] == [
        Location("dir/kernel.cu", 4, 0), Location("dir/kernel.cu", 4, 0),
        Location("dir/kernel.cu", 6, 5), None]


def test_nvcc_output_names_its_source_relative_to_its_folder():
    ptx = '\t.file\t1 "/work/k/kernel.cu"\n\t.file\t2 "/usr/include/x.h", 1, 2\n'
    assert nvcc.relative_file_paths(ptx, Path("/work/k")) == \
        '\t.file\t1 "kernel.cu"\n\t.file\t2 "/usr/include/x.h", 1, 2\n'
    assert "-lineinfo" in nvcc.NVCC_FLAGS
    assert '.file\t1 "cuda_errors.cu"' in PTX.read_text()


@needs_nvcc
def test_a_trap_of_a_cu_launch_is_told_at_its_cuda_line(tmp_path, capsys):
    example = Path(__file__).parents[2] / "examples" / "out_of_bounds"
    for name in ("kernel.cu", "launch.json"):
        shutil.copy(example / name, tmp_path / name)
    store = next(number for number, line in enumerate(
        (example / "kernel.cu").read_text().splitlines(), 1) if "p[idx + t] = 7;" in line)
    assert main(["run", str(tmp_path / "launch.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{tmp_path / 'kernel.cu'}:{store}:5: trap: address out of range: "
                          "byte address 4000 is word 1000")
    assert "    p[idx + t] = 7;\n    ^\nnote: PTX line " in err and ".cu.ptx" not in err
    assert main(["run", str(tmp_path / "launch.json"), "--json"]) == 1
    trap = json.loads(capsys.readouterr().out)["trap"]
    assert (trap["cuda_file"], trap["cuda_line"], trap["ptx_file"]) == (
        str(tmp_path / "kernel.cu"), store, None)
    assert trap["ptx"] == "st.global.u32 [%rd6], %r3;" and trap["ptx_line"] > 0


def test_the_kernels_once_refused_for_barriers_and_shared_memory_now_run():
    """`__syncwarp` and `__syncthreads` with shared memory (refused before the machine had
    them) compute what plain Python says they do."""
    from qwengpu.ptx import load_program
    from qwengpu.runtime.launch import launch_for_program, run_launch_sim

    x = [3, -1, 7, 10]
    warp = launch_for_program(load_program(str(PTX), "sync_warp"), 1, 4, {"x": list(x)}, ["x"])
    assert run_launch_sim(warp).buffers["x"] == [v + 1 for v in x]
    program = load_program(str(PTX), next(name for name in _kernels() if "shared_reduce" in name))
    block = launch_for_program(program, 1, 4, {"x": list(x)}, ["x"])
    assert run_launch_sim(block).buffers["x"] == [sum(x)] * 4


def _kernels() -> list[str]:
    from qwengpu.ptx import parse_ptx
    return list(parse_ptx(PTX.read_text(), str(PTX)).kernels)
