"""Addresses past 2^32 bytes (docs/ptx.md "Memory"): an access through a 64-bit address at or
past 2^32 bytes, or below 0, traps as a GPU faults, unless the launch says
`"check_addresses": false` (then memory is addressed by the low word, and such an address
wraps).  The loader leaves a check out only where `qwengpu.ptx.ranges` proves it cannot fire,
so ordinary launches run the same code either way.

The kernel reads `in[i]` for a 32-bit `i` (nvcc's `mul.wide.s32` then `add.s64`) and stores
it to `out[0]`.  With i = 2^30 or -2^30 the byte offset is +-2^32: the address's low word is
`in`'s, so the unchecked launch reads in[0], and the default traps `address out of range`."""

from __future__ import annotations

import pytest

from ptx_harness import HEADER
from qwengpu.errors import LaunchError, UserError
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx
from qwengpu.runtime.launch import launch_for_program, launch_from_dict, run_launch_sim

KERNEL = HEADER + """.visible .entry k(.param .u64 k_in, .param .u64 k_out, .param .u32 k_i)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<7>;
    ld.param.u64 %rd1, [k_in];
    ld.param.u64 %rd2, [k_out];
    ld.param.u32 %r1, [k_i];
    cvta.to.global.u64 %rd3, %rd1;
    mul.wide.s32 %rd4, %r1, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.u32 %r2, [%rd5];
    cvta.to.global.u64 %rd6, %rd2;
    st.global.u32 [%rd6], %r2;
    ret;
}
"""
IN = [11, 22, 33, 44]


def run(tmp_path, index: int, check: bool | None, kernel: str = KERNEL, args=None):
    (tmp_path / "k.ptx").write_text(kernel)
    data = {"source": "k.ptx", "kernel": "k", "grid": 1, "block": 1,
            "buffers": {"in": IN, "out": [0]}, "args": args or ["in", "out", index]}
    if check is not None:
        data["check_addresses"] = check
    return run_launch_sim(launch_from_dict(data, base_dir=str(tmp_path)))


@pytest.mark.parametrize("index", [1 << 30, -(1 << 30), (1 << 30) + 2])
def test_an_address_past_four_gigabytes_traps_unless_the_launch_opts_out(tmp_path, index):
    trapped = run(tmp_path, index, None)
    assert trapped.trap is not None and "address out of range" in trapped.trap.message
    assert trapped.as_json()["buffers"]["out"] == [0]
    wrapped = run(tmp_path, index, False)
    assert wrapped.trap is None                   # the low word: in[index % 4]
    assert wrapped.as_json()["buffers"]["out"] == [IN[index % 4]]


@pytest.mark.parametrize("index", [0, 1, 3])
def test_a_launch_whose_index_is_known_runs_the_unchecked_code(tmp_path, index):
    checked, plain = run(tmp_path, index, True), run(tmp_path, index, False)
    assert checked.trap is None
    assert checked.as_json()["buffers"]["out"] == [IN[index]]
    assert [slot.instruction for slot in checked.launch.program.slots] == \
        [slot.instruction for slot in plain.launch.program.slots]


def test_code_compiled_for_any_index_checks_and_reads_the_same(tmp_path):
    module = parse_ptx(KERNEL, "k.ptx")
    general = compile_kernel(module, "k")
    plain = compile_kernel(module, "k", check_addresses=False)
    assert len(general.slots) > len(plain.slots)            # the check, and the high words
    for index in (0, 3):
        result = run_launch_sim(launch_for_program(general, 1, 1, {"in": IN, "out": [0]},
                                                   ["in", "out", index]))
        assert result.trap is None and result.as_json()["buffers"]["out"] == [IN[index]]
    result = run_launch_sim(launch_for_program(general, 1, 1, {"in": IN, "out": [0]},
                                               ["in", "out", 1 << 30]))
    assert result.trap is not None and "address out of range" in result.trap.message


def test_code_compiled_for_one_launch_refuses_a_launch_its_proof_does_not_cover(tmp_path):
    program = run(tmp_path, 1, None).launch.program
    with pytest.raises(LaunchError, match=r"parameter k_i = 1073741824 \(the code was compiled "
                                          r"for 1\.\.1 there\).*compile the kernel for this"):
        launch_for_program(program, 1, 1, {"in": IN, "out": [0]}, ["in", "out", 1 << 30])


def test_an_index_loaded_from_memory_is_checked(tmp_path):
    gather = KERNEL.replace("ld.param.u32 %r1, [k_i];", "ld.param.u32 %r1, [k_i];\n"
                            "    ld.global.u32 %r1, [%rd1];")
    (tmp_path / "k.ptx").write_text(gather)
    for first, trapped in ((2, False), (1 << 30, True)):
        data = {"source": "k.ptx", "kernel": "k", "grid": 1, "block": 1,
                "buffers": {"in": [first, 22, 33, 44], "out": [0]}, "args": ["in", "out", 0]}
        result = run_launch_sim(launch_from_dict(data, base_dir=str(tmp_path)))
        assert (result.trap is not None) == trapped
        if not trapped:
            assert result.as_json()["buffers"]["out"] == [33]


def test_a_pointer_argument_past_four_gigabytes_traps(tmp_path):
    result = run(tmp_path, 0, None, args=[(1 << 32) + 4, "out", 0])
    assert result.trap is not None and "address out of range" in result.trap.message
    wrapped = run(tmp_path, 0, False, args=[(1 << 32) + 4, "out", 0])
    assert wrapped.trap is None and wrapped.as_json()["buffers"]["out"] == [22]


def test_an_index_just_out_of_the_buffers_traps_both_ways(tmp_path):
    for check in (False, True):
        result = run(tmp_path, 200, check)
        assert result.trap is not None and "address out of range" in result.trap.message


def test_check_addresses_must_be_a_boolean(tmp_path):
    (tmp_path / "k.ptx").write_text(KERNEL)
    with pytest.raises(UserError, match="'check_addresses' must be true or false"):
        launch_from_dict({"source": "k.ptx", "kernel": "k", "grid": 1, "block": 1,
                          "buffers": {"in": IN, "out": [0]}, "args": ["in", "out", 0],
                          "check_addresses": "yes"}, base_dir=str(tmp_path))


def test_a_base_below_four_gigabytes_plus_an_offset_past_them_traps(tmp_path):
    """[base+8] with base = 2^32 - 4: the high word of base is 0, of base + 8 is 1."""
    kernel = KERNEL.replace("ld.global.u32 %r2, [%rd5];", "ld.global.u32 %r2, [%rd5+8];")
    result = run(tmp_path, 0, None, kernel, args=[(1 << 32) - 4, "out", 0])
    assert result.trap is not None and "address out of range" in result.trap.message
    wrapped = run(tmp_path, 0, False, kernel, args=[(1 << 32) - 4, "out", 0])
    assert wrapped.trap is None and wrapped.as_json()["buffers"]["out"] == [22]
    in_range = run(tmp_path, 1, None, kernel)               # in[1 + 2], proven: no check
    assert in_range.trap is None and in_range.as_json()["buffers"]["out"] == [44]
