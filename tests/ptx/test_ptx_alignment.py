"""Natural alignment of 8- and 16-byte accesses (`qwengpu.ptx.alignment`, docs/ptx.md
"Memory") and traps told with the address the kernel formed (`qwengpu.runtime.trap_address`).

PTX requires an access to be aligned to its size and a GPU faults on one that is not; the
expected outcome of each launch here is computed from that rule in the test (address % size),
not from the machine.  The analysis that leaves the check out must cost the corpus nothing:
every example and every nvcc kernel of tests/ptx/data compiles to the code it would have if
no access needed a check.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiers import SPREAD, first_by_default
from ptx_harness import HEADER, M32, run_ptx
from qwengpu.errors import LaunchError
from qwengpu.isa import Trap
from qwengpu.ptx import compile as compile_module
from qwengpu.ptx import ir
from qwengpu.ptx.alignment import access_bytes, needs_alignment_check
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx, parse_ptx_file
from qwengpu.runtime.decode import launch_outcome
from qwengpu.runtime.launch import launch_for_program, launch_from_dict, run_launch_sim

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def kernel(body: str) -> str:
    """`in`, `out` and a 64-bit offset `off`; %rd2 = in + off is the address to test."""
    return HEADER + f""".visible .entry k(.param .u64 k_in, .param .u64 k_out, .param .u64 k_off)
{{
    .reg .b32 %r<8>;
    .reg .b16 %h<4>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd0, [k_in];
    ld.param.u64 %rd1, [k_out];
    ld.param.u64 %rd5, [k_off];
    add.s64 %rd2, %rd0, %rd5;
{body}
    ret;
}}
"""


def launch(tmp_path, body: str, off: int, words: list[int]):
    (tmp_path / "k.ptx").write_text(kernel(body))
    return launch_from_dict({"source": "k.ptx", "kernel": "k", "grid": 1, "block": 1,
                             "buffers": {"in": words, "out": [0] * 4},
                             "args": ["in", "out", off]}, base_dir=str(tmp_path))


WORDS = [0x0403_0201, 0x0807_0605, 0x0C0B_0A09, 0x100F_0E0D, 5, 6, 7, 8]
# access, its size in bytes, and what `out` holds after an aligned one at byte offset `off`
ACCESSES = [
    ("ld.global.u64 %rd3, [%rd2];\n    st.global.u64 [%rd1], %rd3;", 8,
     lambda off: [WORDS[off // 4], WORDS[off // 4 + 1], 0, 0]),
    ("ld.global.u32 %r0, [%rd0];\n    st.global.u64 [%rd2], %rd0;", 8, None),
    ("ld.global.v2.u32 {%r0, %r1}, [%rd2];\n    st.global.u32 [%rd1], %r1;", 8,
     lambda off: [WORDS[off // 4 + 1], 0, 0, 0]),
    ("ld.global.v4.u32 {%r0, %r1, %r2, %r3}, [%rd2];\n    st.global.u32 [%rd1], %r3;", 16,
     lambda off: [WORDS[off // 4 + 3], 0, 0, 0]),
    ("st.global.v2.u32 [%rd2], {%r0, %r0};", 8, None),
    ("ld.global.v2.u16 {%h0, %h1}, [%rd2];\n    cvt.u32.u16 %r1, %h1;\n"
     "    st.global.u32 [%rd1], %r1;", 4, lambda off: [WORDS[off // 4] >> 16, 0, 0, 0]),
    ("ld.global.v4.u8 {%h0, %h1, %h2, %h3}, [%rd2];\n    cvt.u32.u16 %r1, %h3;\n"
     "    st.global.u32 [%rd1], %r1;", 4, lambda off: [WORDS[off // 4] >> 24, 0, 0, 0]),
    ("ld.global.v2.u8 {%h0, %h1}, [%rd2];\n    cvt.u32.u16 %r1, %h1;\n"
     "    st.global.u32 [%rd1], %r1;", 2, lambda off: [WORDS[off // 4] >> 8 * (off % 4 + 1)
                                                       & 0xFF, 0, 0, 0]),
    ("ld.global.u16 %h0, [%rd2];\n    cvt.u32.u16 %r1, %h0;\n    st.global.u32 [%rd1], %r1;",
     2, lambda off: [WORDS[off // 4] >> 8 * (off % 4) & 0xFFFF, 0, 0, 0]),
]


@pytest.mark.parametrize("body,size,model", ACCESSES, ids=[row[0].split()[0] + str(i)
                                                          for i, row in enumerate(ACCESSES)])
def test_an_access_traps_exactly_when_it_is_not_aligned_to_its_size(tmp_path, body, size,
                                                                     model):
    for off in range(0, 16):
        result = run_launch_sim(launch(tmp_path, body, off, list(WORDS)))
        if off % size:
            assert result.trap is not None and result.trap.code == Trap.MISALIGNED, off
            article = "an" if size == 8 else "a"
            assert f"misaligned address: byte address {off} is not a multiple of {size} " \
                   f"({article} {size}-byte access)" in result.trap.message
            assert result.buffers["in"] == [word - (1 << 32) if word >> 31 else word
                                            for word in WORDS]   # nothing was written
        else:
            assert result.trap is None, (off, result.trap and result.trap.message)
            if model is not None:
                assert [word & M32 for word in result.buffers["out"]] == model(off)


@pytest.mark.parametrize("off,message", [
    ((1 << 32) + 8, "address out of range: byte address 4294967304 (1 x 2^32 + 8) is past 2^32"),
    ((5 << 32) + 8, "address out of range: byte address 21474836488 (5 x 2^32 + 8) is past 2^32"),
    (-8 - (1 << 32), "address out of range: byte address -4294967304 is below 0"),
    ((1 << 32) + 4, "misaligned address: byte address 4294967300 is not a multiple of 8"),
])
def test_a_wrapped_address_is_told_as_the_kernel_formed_it(tmp_path, off, message):
    """The range check ORs ones into the low word (the machine sees 4294967292); the report
    replays the trace to the instructions that read the kernel's address."""
    body = "ld.global.u64 %rd3, [%rd2];\n    st.global.u64 [%rd1], %rd3;"
    words = list(WORDS)
    result = run_launch_sim(launch(tmp_path, body, off & ((1 << 64) - 1), words))
    assert message in result.trap.message, result.trap.message
    assert result.trap.address == off                   # `in` is at byte 0
    decoded = launch_outcome(result.launch, result.records, tokens=0)   # from a trace alone
    assert decoded.trap.message == result.trap.message


def test_a_32_bit_access_through_a_wrapped_address_keeps_its_own_report(tmp_path):
    body = "ld.global.u32 %r3, [%rd2+4];\n    st.global.u32 [%rd1], %r3;"
    result = run_launch_sim(launch(tmp_path, body, 3 << 32, list(WORDS)))
    assert "byte address 12884901892 (3 x 2^32 + 4) is past 2^32" in result.trap.message
    result = run_launch_sim(launch(tmp_path, body, 4000, list(WORDS)))
    assert "byte address 4004 is word 1001, past the 126 words of memory" in \
        result.trap.message


def test_buffers_and_variables_are_laid_out_at_their_alignment(tmp_path):
    words = [1, 2, 3]                       # 3 words: `out` would start at byte 12
    result = launch(tmp_path, ACCESSES[3][0], 0, words)
    assert [(region.name, region.base_word) for region in result.regions] == [
        ("in", 0), ("out", 4)]
    result = launch(tmp_path, "ld.global.u32 %r0, [%rd2];\n    st.global.u32 [%rd1], %r0;",
                    0, words)
    assert [region.base_word for region in result.regions] == [0, 3]   # words: as before
    text = HEADER + """.global .align 8 .b8 pair[8];
.visible .entry v(.param .u64 v_x)
{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [v_x];
    ld.global.u64 %rd2, [pair];
    st.global.u64 [%rd1], %rd2;
    ret;
}
"""
    program = compile_kernel(parse_ptx(text), "v")
    placed = launch_for_program(program, 1, 1, {"x": [7, 8, 9]}, ["x"])
    assert [(region.name, region.base_word) for region in placed.regions] == [
        ("x", 0), ("pair", 4)]
    assert run_launch_sim(placed).trap is None


def test_a_launch_outside_the_alignment_the_code_assumes_is_refused():
    text = kernel("ld.global.u64 %rd3, [%rd0];\n    st.global.u64 [%rd1], %rd3;")
    program = compile_kernel(parse_ptx(text), "k")        # any launch: buffers are aligned
    assert program.aligned_params == {"k_in": 8, "k_out": 8}
    launch_for_program(program, 1, 1, {"in": [1, 2], "out": [0, 0]}, ["in", "out", 0])
    with pytest.raises(LaunchError, match="parameter k_in = 4, not a multiple of 8"):
        launch_for_program(program, 1, 1, {"in": [1, 2], "out": [0, 0]}, [4, "out", 0])


def _every_access_aligned(monkeypatch):
    """Compile as if the analysis proved every access aligned: the code without checks."""
    monkeypatch.setattr(compile_module, "aligned_accesses",
                        lambda kernel, params, variables, *constants: {
                            id(ins) for ins in kernel.body
                            if isinstance(ins, ir.Instruction) and needs_alignment_check(ins)})


def _codes(sources):
    """(file, kernel) -> its machine code, for every kernel of `sources` that compiles."""
    codes = {}
    for path in sources:
        module = parse_ptx_file(str(path))
        for name in module.kernels:
            try:
                program = compile_kernel(parse_ptx_file(str(path)), name)
            except Exception:
                continue
            codes[str(path), name] = [slot.instruction for slot in program.slots]
    return codes


PARTS = SPREAD


@pytest.mark.parametrize("part", first_by_default(range(PARTS)))
def test_the_analysis_proves_every_access_of_nvccs_kernels_aligned(monkeypatch, part):
    """All but traps.ptx's misaligned_pair, which is misaligned (and keeps its check).  Every
    kernel compiles twice (40 s for them all): every third file from the `part`-th, the first
    third by default and the rest in the extra tier (tests/tiers.py)."""
    data = [path for path in sorted(DATA.glob("*.ptx")) if path.name != "traps.ptx"]
    sources = (data + sorted(EXAMPLES.glob("*/kernel.ptx")))[part::PARTS]
    misaligned = compile_kernel(parse_ptx_file(str(DATA / "traps.ptx")), "misaligned_pair")
    assert any(slot.formed is not None for slot in misaligned.slots)
    wide = [path.name for path in data if any(
        needs_alignment_check(ins) for kernel in parse_ptx_file(str(path)).kernels.values()
        for ins in kernel.body if hasattr(ins, "opcode"))]
    assert {"memory.ptx", "wide.ptx"} <= set(wide)            # the analysis has work to do
    checked = _codes(sources)
    _every_access_aligned(monkeypatch)
    assert _codes(sources) == checked
    assert len(checked) >= 20


def test_access_sizes():
    module = parse_ptx(kernel("ld.global.v4.u16 {%h0, %h1, %h2, %h3}, [%rd2];\n"
                              "    st.global.u32 [%rd1], %r0;\n    ld.global.v2.u8 {%h0, %h1}, "
                              "[%rd2];\n    ld.global.u8 %h0, [%rd2];"))
    body = [ins for ins in module.kernels["k"].body if access_bytes(ins) is not None]
    assert [access_bytes(ins) for ins in body] == [(8, 2), (4, 4), (2, 1), (1, 1)]
    assert [needs_alignment_check(ins) for ins in body] == [True, False, True, False]


def test_launch_files_keep_the_layout_of_word_kernels():
    """The examples that read no more than a word at once keep the layouts they had; those
    that read 8 bytes (the long longs of dot64, divide64, spmv) have their buffers at multiples of 8."""
    for path in sorted(EXAMPLES.rglob("launch.json")):
        data = json.loads(path.read_text())
        if data.get("source", "").endswith(".cu"):
            data["source"] = "kernel.ptx"
        try:
            placed = launch_from_dict(data, base_dir=str(path.parent))
        except Exception:
            continue
        words, step = 0, placed.program.buffer_alignment // 4
        for region in placed.buffers.values():
            words = -(-words // step) * step
            assert region.base_word == words
            words += region.words


TRAPS = DATA / "traps.cu"


def _cuda_line(text: str) -> int:
    return next(number for number, line in enumerate(TRAPS.read_text().splitlines(), 1)
                if text in line)


def _trap_launch(folder: Path, source: str, kernel: str) -> dict:
    args = {"misaligned_pair": ["p", "out"], "far_index": ["p", "out", 1 << 30]}[kernel]
    return {"source": source, "kernel": kernel, "grid": 1, "block": 2,
            "buffers": {"p": list(range(8)), "out": [0] * 4}, "args": args}


@pytest.mark.parametrize("kernel,message,statement", [
    ("misaligned_pair", "misaligned address: byte address 4 is not a multiple of 8 (an 8-byte "
                        "access); in warp 0, lane 0", "out[threadIdx.x] = *(const long long"),
    ("far_index", "address out of range: byte address 4294967296 (1 x 2^32 + 0) is past 2^32",
     "out[threadIdx.x] = p[i + threadIdx.x];"),
])
def test_nvccs_kernels_trap_in_their_own_terms(tmp_path, capsys, kernel, message, statement):
    """The checked-in PTX: the trap at its PTX line, the CUDA line as a note; the .cu (with
    nvcc): at the CUDA line.  `p` is at byte 0, so the address is the kernel's offset."""
    from qwengpu.cli import main
    from qwengpu.ptx import nvcc

    line = _cuda_line(statement)
    for source in ("traps.ptx", "traps.cu"):
        if source.endswith(".cu") and nvcc.find_nvcc() is None:
            continue
        for name in ("traps.ptx", "traps.cu"):
            (tmp_path / name).write_text((DATA / name).read_text())
        path = tmp_path / "launch.json"
        path.write_text(json.dumps(_trap_launch(tmp_path, source, kernel)))
        assert main(["run", str(path)]) == 1
        err = capsys.readouterr().err
        assert message in err, err
        cuda = f"{tmp_path / 'traps.cu'}:{line}:5"
        if source.endswith(".ptx"):
            assert err.startswith(f"{tmp_path / 'traps.ptx'}:") and \
                f"\n{cuda}: note: from this CUDA line\n" in err
        else:
            assert err.startswith(f"{cuda}: trap: ") and ".cu.ptx" not in err
