"""nvcc's PTX cache (qwengpu.ptx.nvcc_cache): a source compiled again comes from the cache
with the same PTX; a changed source or included header, another folder, or the cache turned
off runs nvcc again; what the key cannot name (a macro include, an include path in the
environment) is never cached, nor is a failure; a cache that cannot be written is no error."""

from __future__ import annotations

import subprocess

import pytest

from qwengpu.ptx import nvcc
from qwengpu.ptx.nvcc_cache import cache_folder, cache_key

needs_nvcc = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc is not installed")

KERNEL = """#include "scale.cuh"
extern "C" __global__ void scale(int *data) { data[threadIdx.x] *= SCALE; }
"""


@pytest.fixture
def runs(monkeypatch, tmp_path):
    """The nvcc runs of the test (a list of commands), with the cache in its own folder."""
    monkeypatch.setenv("QWENGPU_NVCC_CACHE", str(tmp_path / "cache"))
    commands, real = [], subprocess.run

    def counting(command, *args, **kwargs):
        commands.append(command)
        return real(command, *args, **kwargs)
    monkeypatch.setattr(nvcc.subprocess, "run", counting)
    return commands


def kernel_folder(folder, scale: int = 3, kernel: str = KERNEL):
    folder.mkdir(parents=True)
    (folder / "scale.cuh").write_text(f"#define SCALE {scale}\n")
    (folder / "kernel.cu").write_text(kernel)
    return folder / "kernel.cu"


@needs_nvcc
def test_the_same_source_runs_nvcc_once(runs, tmp_path):
    source = kernel_folder(tmp_path / "k")
    first = nvcc.compile_cuda(str(source))
    assert nvcc.compile_cuda(str(source)) == first and len(runs) == 1
    assert "mul.lo.s32" in first or "mul.lo.u32" in first
    assert len(list((tmp_path / "cache").glob("*.ptx"))) == 1


@needs_nvcc
def test_a_changed_source_header_or_folder_runs_nvcc_again(runs, tmp_path):
    source = kernel_folder(tmp_path / "k")
    three = nvcc.compile_cuda(str(source))
    (source.parent / "scale.cuh").write_text("#define SCALE 5\n")
    five = nvcc.compile_cuda(str(source))
    assert len(runs) == 2 and five != three and "5;" in five
    source.write_text(KERNEL + "\n// a comment\n")
    nvcc.compile_cuda(str(source))
    nvcc.compile_cuda(str(kernel_folder(tmp_path / "elsewhere", 5)))
    assert len(runs) == 4


@needs_nvcc
def test_the_cache_turned_off_runs_nvcc_every_time(runs, tmp_path, monkeypatch):
    monkeypatch.setenv("QWENGPU_NVCC_CACHE", "off")
    assert cache_folder() is None
    source = kernel_folder(tmp_path / "k")
    assert nvcc.compile_cuda(str(source)) == nvcc.compile_cuda(str(source))
    assert len(runs) == 2


@needs_nvcc
def test_a_failure_is_not_kept(runs, tmp_path):
    source = kernel_folder(tmp_path / "k", kernel="__global__ void broken( {}\n")
    for _ in range(2):
        with pytest.raises(nvcc.NvccError):
            nvcc.compile_cuda(str(source))
    assert len(runs) == 2 and not list((tmp_path / "cache").glob("*"))


@needs_nvcc
def test_a_cache_that_cannot_be_written_is_no_error(runs, tmp_path, monkeypatch):
    (tmp_path / "a file").write_text("")
    monkeypatch.setenv("QWENGPU_NVCC_CACHE", str(tmp_path / "a file" / "cache"))
    source = kernel_folder(tmp_path / "k")
    assert nvcc.compile_cuda(str(source)) == nvcc.compile_cuda(str(source))
    assert len(runs) == 2


def test_the_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("QWENGPU_NVCC_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_folder() == tmp_path / "qwengpu" / "nvcc"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_folder() == tmp_path / "home" / ".cache" / "qwengpu" / "nvcc"


def test_what_the_key_cannot_name_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.delenv("CPATH", raising=False)
    binary = tmp_path / "nvcc"
    binary.write_text("")
    plain = kernel_folder(tmp_path / "plain")
    assert cache_key(str(binary), ("-ptx",), plain) is not None
    macro = kernel_folder(tmp_path / "macro", kernel="#define H \"scale.cuh\"\n#include H\n")
    assert cache_key(str(binary), ("-ptx",), macro) is None
    missing = kernel_folder(tmp_path / "missing", kernel="#include \"elsewhere.cuh\"\n")
    assert cache_key(str(binary), ("-ptx",), missing) is None
    monkeypatch.setenv("CPATH", str(tmp_path))
    assert cache_key(str(binary), ("-ptx",), plain) is None


def test_the_key_follows_nvcc_and_its_flags(tmp_path, monkeypatch):
    monkeypatch.delenv("NVCC_APPEND_FLAGS", raising=False)
    first, second = tmp_path / "one" / "nvcc", tmp_path / "two" / "nvcc"
    for binary in (first, second):
        binary.parent.mkdir()
        binary.write_text("")
    source = kernel_folder(tmp_path / "k")
    key = cache_key(str(first), ("-ptx",), source)
    assert key == cache_key(str(first), ("-ptx",), source)
    assert key != cache_key(str(second), ("-ptx",), source)
    assert key != cache_key(str(first), ("-ptx", "-O3"), source)
    monkeypatch.setenv("NVCC_APPEND_FLAGS", "-DSCALE=4")
    assert key != cache_key(str(first), ("-ptx",), source)
