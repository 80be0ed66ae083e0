"""`check_addresses` (docs/ptx.md "Memory"): a 64-bit address past 2^32 bytes, or below 0,
traps as a GPU faults, where the default loader addresses memory by the low word and wraps.

The kernel reads `in[i]` for a 32-bit `i` (nvcc's `mul.wide.s32` then `add.s64`) and stores
it to `out[0]`.  With i = 2^30 or -2^30 the byte offset is +-2^32: the address's low word is
`in`'s, so the default reads in[0], and the checked launch traps `address out of range`.
Ordinary indices read the same word both ways, and the check's cost is measured here as the
records of one launch."""

from __future__ import annotations

import pytest

from ptx_harness import HEADER
from qwengpu.runtime.launch import launch_from_dict, run_launch_sim

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


def run(tmp_path, index: int, check: bool):
    (tmp_path / "k.ptx").write_text(KERNEL)
    launch = launch_from_dict({"source": "k.ptx", "kernel": "k", "grid": 1, "block": 1,
                               "buffers": {"in": IN, "out": [0]},
                               "args": ["in", "out", index], "check_addresses": check},
                              base_dir=str(tmp_path))
    return run_launch_sim(launch)


@pytest.mark.parametrize("index", [0, 1, 3])
def test_an_index_in_range_reads_the_same_word_both_ways(tmp_path, index):
    plain, checked = run(tmp_path, index, False), run(tmp_path, index, True)
    assert plain.trap is None and checked.trap is None
    assert plain.as_json()["buffers"]["out"] == checked.as_json()["buffers"]["out"] == [IN[index]]
    assert len(checked.records) > len(plain.records)       # what the check costs


@pytest.mark.parametrize("index", [1 << 30, -(1 << 30), (1 << 30) + 2])
def test_an_address_past_four_gigabytes_traps_when_checked(tmp_path, index):
    plain = run(tmp_path, index, False)
    assert plain.trap is None                  # the default: the low word, wrapped
    assert plain.as_json()["buffers"]["out"] == [IN[index % 4]]
    checked = run(tmp_path, index, True)
    assert checked.trap is not None and "address out of range" in checked.trap.message
    assert checked.as_json()["buffers"]["out"] == [0]


def test_an_index_just_out_of_the_buffers_traps_both_ways(tmp_path):
    for check in (False, True):
        result = run(tmp_path, 200, check)
        assert result.trap is not None and "address out of range" in result.trap.message


def test_check_addresses_must_be_a_boolean(tmp_path):
    from qwengpu.errors import UserError

    (tmp_path / "k.ptx").write_text(KERNEL)
    with pytest.raises(UserError, match="'check_addresses' must be true or false"):
        launch_from_dict({"source": "k.ptx", "kernel": "k", "grid": 1, "block": 1,
                          "buffers": {"in": IN, "out": [0]}, "args": ["in", "out", 0],
                          "check_addresses": "yes"}, base_dir=str(tmp_path))
