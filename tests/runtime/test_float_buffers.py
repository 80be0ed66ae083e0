"""Launch files with binary32 buffers (`{"f32": [...]}`, qwengpu/runtime/float_words.py):
each number rounded once from its decimal text, what a bad one says, and how `hdlc run`
and its trace print float buffers and float loads.  Expected bits come from struct and
exact fractions here, not from the project's code."""

from __future__ import annotations

import json
import struct
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import pytest

from qwengpu.cli import main
from qwengpu.errors import LaunchError
from qwengpu.runtime.float_words import f32_bits, f32_text
from qwengpu.runtime.launch import load_launch, run_launch_sim

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "float_clamp"


def struct_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


@pytest.mark.parametrize("text", ["1.5", "-0.0", "0.1", "3.0e-39", "1e-45", "-2.5e10",
                                  "16777217", "0.333333343267"])
def test_numbers_round_as_struct_does(text):
    """For these a double's rounding to binary32 is the one rounding (no tie nearby)."""
    assert f32_bits(Decimal(text)) == struct_bits(float(text))


def test_a_decimal_just_above_a_tie_rounds_up_not_to_even():
    """1 + 2^-24 + 2^-80 lies above the tie between 1 and 1 + 2^-23: binary32 1 + 2^-23.
    Read as a double first it would be the tie itself, and round to even: 1.0."""
    with localcontext() as context:
        context.prec = 60
        text = str(Decimal(1) + Decimal(2) ** -24 + Decimal(2) ** -80)
    assert Fraction(Decimal(text)) > 1 + Fraction(1, 2 ** 24)
    assert f32_bits(Decimal(text)) == 0x3F80_0001
    assert struct_bits(float(text)) == 0x3F80_0000          # what double rounding gives


def test_names_limits_and_text():
    assert [f32_bits(name) for name in ("nan", "inf", "-inf")] == \
        [0x7FC0_0000, 0x7F80_0000, 0xFF80_0000]
    assert f32_bits(Decimal("3.4028235677973366e38")) == 0x7F7F_FFFF
    assert f32_bits(Decimal("3.4028236e38")) == 0x7F80_0000       # past max + half an ulp
    half_least_subnormal = Fraction(1, 2 ** 150)          # a tie: to even, which is zero
    assert f32_bits(half_least_subnormal) == 0
    assert f32_bits(half_least_subnormal * Fraction(1_000_001, 1_000_000)) == 1
    assert [f32_text(word) for word in (0x3FC0_0000, 0x8000_0000, 1, 0x7FC0_0001)] == \
        ["1.5", "-0.0", "1e-45", "nan"]


def launch_file(tmp_path: Path, buffers: dict) -> Path:
    data = json.loads((EXAMPLE / "launch.json").read_text())
    data["buffers"].update(buffers)
    (tmp_path / "kernel.ptx").write_text((EXAMPLE / "kernel.ptx").read_text())
    data["source"] = "kernel.ptx"
    path = tmp_path / "launch.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("buffer, message", [
    ({"f32": [1.0, "x"]}, "buffer 'bounds' holds \"x\", which is not a number, \"nan\", "
                          "\"inf\" or \"-inf\""),
    ({"f32": [1.0, True]}, "which is not a number"),
    ({"f64": [1.0, 2.0]}, "buffer 'bounds' must be a list of integers, or {\"f32\": [numbers]}"),
    ([1.5, 2.0], "buffer 'bounds' must be a list of integers"),
])
def test_bad_float_buffers_are_located_errors(tmp_path, capsys, buffer, message):
    path = launch_file(tmp_path, {"bounds": buffer})
    with pytest.raises(LaunchError) as caught:
        load_launch(str(path))
    assert message in caught.value.message
    assert main(["run", str(path)]) == 1
    assert message in capsys.readouterr().err


def test_float_buffers_print_as_floats_and_loads_show_them(tmp_path, capsys):
    path = launch_file(tmp_path, {"bounds": {"f32": [-0.25, 1e30]}})
    launch = load_launch(str(path))
    assert launch.memory[launch.buffers["bounds"].base_word:][:2] == \
        [struct_bits(-0.25), struct_bits(1e30)]
    assert run_launch_sim(launch).trap is None
    assert main(["run", str(path), "--trace"]) == 0
    out = capsys.readouterr().out
    assert "bounds = [-0.25, 1e+30]  (f32)" in out
    assert "flags = [1, 2, 3, 0, 4, 1, 0, 3, 1, 1, 0, 3, 1, 2, 3, 2]" in out
    assert "r1 = [-0.25 (0xbe800000)" in out                      # a float load
    assert "clamped[1] = -0.0 (0x80000000) (lane 1)" in out       # a store into a float buffer


def test_the_trace_shows_the_fpu_sum_as_a_float_beside_its_bits(capsys):
    """examples/float_vector_add with --trace: warp 0's `fadd.s2` writes each lane's sum as a
    float beside its bits (the bits numpy's float32 sum of the launch's values, the float
    text reading back to them), and its `fadd.s1` writes the unrounded sum word in hex alone."""
    import re

    import numpy as np

    folder = EXAMPLE.parent / "float_vector_add"
    launch = json.loads((folder / "launch.json").read_text())
    a, b = (np.array([str(x) for x in launch["buffers"][name]["f32"][:4]], dtype=np.float32)
            for name in ("a", "b"))
    sums = (a + b).view(np.uint32)
    assert main(["run", str(folder / "launch.json"), "--trace"]) == 0
    lines = capsys.readouterr().out.splitlines()
    step2 = next(i for i, line in enumerate(lines) if "warp 0" in line and "fadd.s2" in line)
    written = re.findall(r"([^\s\[,]+) \((0x[0-9a-f]{8})\)", lines[step2 + 1])
    assert [int(bits, 16) for _, bits in written] == [int(word) for word in sums]
    assert [struct_bits(float(text)) for text, _ in written] == [int(word) for word in sums]
    step1 = next(i for i, line in enumerate(lines) if "warp 0" in line and "fadd.s1" in line)
    assert re.fullmatch(r"\s+r\d+ = \[(0x[0-9a-f]{8}, ){3}0x[0-9a-f]{8}\]", lines[step1 + 1])
