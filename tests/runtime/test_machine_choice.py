"""Choosing the machine a launch runs on: a checkpoint's machine.json, or --spec and -P.

- `hdlc compile` records the spec (name, whole text) and its -P parameters in machine.json;
  read back, it elaborates to the same machine, with no spec file needed.
- `hdlc run/launch/decode --model DIR` use the checkpoint's machine for the kernel's limits,
  the prompt, the decoding and `--check`; without a model, `--spec` and `-P` choose it.
- Expectations: examples/serial_* expected.json (independent models), the -P values
  themselves, and the capacity messages docs/launch.md lists.
"""

from __future__ import annotations

import json
import shutil

import pytest

from runtime_helpers import EXAMPLES_DIR, ROOT, VECTOR_ADD, expected_of
from qwengpu.trace.protocol import TraceProtocol
from qwengpu.cli import main
from qwengpu.errors import HdlError
from qwengpu.runtime.launch import load_launch, machine_limits, run_launch_sim
from qwengpu.runtime.machine_file import (checkpoint_machine, read_machine_file,
                                          write_machine_file)
from qwengpu.runtime.machine_state import load_machine

SPEC = ROOT / "specs" / "qwengpu.hdl"
ONE_LANE = {"LANES": 1, "WARPS": 1, "REGS": 15, "PREDS": 7, "MEM_WORDS": 32,
            "PROG_WORDS": 64, "PARAM_WORDS": 4}
ONE_LANE_FLAGS = [flag for name, value in ONE_LANE.items() for flag in ("-P", f"{name}={value}")]
SERIAL_SUM = EXAMPLES_DIR / "serial_sum"


def run_cli(capsys, argv):
    capsys.readouterr()
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def one_lane_checkpoint(tmp_path):
    """A checkpoint directory holding the one-lane machine's machine.json and protocol (the
    weights are not needed to lay out, prompt or decode a launch); its spec is a copy that
    is deleted afterwards, so the directory must stand on its own."""
    copy = tmp_path / "qwengpu.hdl"
    shutil.copy(SPEC, copy)
    directory = tmp_path / "ckpt"
    directory.mkdir()
    write_machine_file(directory, copy, ONE_LANE)
    copy.unlink()
    TraceProtocol.from_design(load_machine(SPEC, ONE_LANE).design).save(directory)
    return directory


# --- machine.json --------------------------------------------------------------------------

def test_compile_records_the_machine(tmp_path, capsys):
    directory = tmp_path / "counter"
    code, _, err = run_cli(capsys, ["compile", "specs/counter.hdl", "--target", "min",
                                    "-P", "LIMIT=5", "-o", directory])
    assert code == 0, err
    record = read_machine_file(directory)
    assert record.spec == "counter.hdl" and record.params == {"LIMIT": 5}
    assert record.source == (ROOT / "specs" / "counter.hdl").read_text()
    # counter is not a QwenGPU: running a launch on its checkpoint is a located refusal.
    code, _, err = run_cli(capsys, ["run", VECTOR_ADD, "--model", directory])
    assert code == 1 and "machine.json (counter.hdl): error: counter is not a QwenGPU" in err


def test_machine_file_round_trip(one_lane_checkpoint):
    record = read_machine_file(one_lane_checkpoint)
    assert record.spec == "qwengpu.hdl" and record.params == ONE_LANE
    assert record.source == SPEC.read_text()
    machine = checkpoint_machine(one_lane_checkpoint)
    assert machine.shape == load_machine(SPEC, ONE_LANE).shape
    assert (machine.shape.lanes, machine.shape.warps, machine.shape.mem_words) == (1, 1, 32)
    assert TraceProtocol.from_design(machine.design) == TraceProtocol.load(one_lane_checkpoint)


# --- the checkpoint's machine in run, launch, decode ---------------------------------------

def test_run_uses_the_checkpoints_machine(one_lane_checkpoint, capsys):
    code, out, err = run_cli(capsys, ["run", SERIAL_SUM / "launch.json", "--model",
                                      one_lane_checkpoint, "--json"])
    assert code == 0, err
    assert json.loads(out)["buffers"] == expected_of(SERIAL_SUM)["buffers"]
    code, _, err = run_cli(capsys, ["run", VECTOR_ADD, "--model", one_lane_checkpoint])
    assert code == 1 and "launch.json:4:3: error: the launch needs 16 warps" in err, err
    assert "but QwenGPU has 1" in err


def test_model_and_machine_flags_exclude_each_other(one_lane_checkpoint, capsys):
    for flags in (["-P", "LANES=1"], ["--spec", SPEC]):
        for command in ("run", "launch"):
            code, _, err = run_cli(capsys, [command, VECTOR_ADD, "--model",
                                            one_lane_checkpoint, *flags])
            assert code == 1 and "choose the machine only without --model" in err, err


def test_launch_prompt_of_the_checkpoints_machine(one_lane_checkpoint, tmp_path, capsys):
    launch = SERIAL_SUM / "launch.json"
    code, from_flags, err = run_cli(capsys, ["launch", launch, *ONE_LANE_FLAGS])
    assert code == 0, err
    code, from_model, err = run_cli(capsys, ["launch", launch, "--model", one_lane_checkpoint])
    assert code == 0, err
    assert from_model == from_flags
    code, default, _ = run_cli(capsys, ["launch", launch])
    assert code == 0 and len(json.loads(default)["input_ids"]) > \
        len(json.loads(from_model)["input_ids"])          # 126 words and 8 warps to fill


def test_decode_on_the_checkpoints_machine(one_lane_checkpoint, tmp_path, capsys):
    machine = checkpoint_machine(one_lane_checkpoint)
    protocol = TraceProtocol.load(one_lane_checkpoint)
    launch_path = SERIAL_SUM / "launch.json"
    launch = load_launch(str(launch_path), machine_limits(machine))
    records = run_launch_sim(launch, machine=machine).records
    code, prompt, _ = run_cli(capsys, ["launch", launch_path, "--model", one_lane_checkpoint])
    ids = json.loads(prompt)["input_ids"] + protocol.encode_records(records)
    tokens = tmp_path / "ids.json"
    tokens.write_text(json.dumps(ids))
    code, out, err = run_cli(capsys, ["decode", launch_path, "--tokens", tokens, "--model",
                                      one_lane_checkpoint, "--json"])
    assert code == 0, err
    result = json.loads(out)
    assert result["buffers"] == expected_of(SERIAL_SUM)["buffers"]
    assert result["records"] == len(records)
    code, out, err = run_cli(capsys, ["decode", launch_path, "--tokens", tokens,
                                      *ONE_LANE_FLAGS, "--json"])
    assert code == 0 and json.loads(out)["buffers"] == result["buffers"], err
    code, _, err = run_cli(capsys, ["decode", launch_path, "--tokens", tokens])
    assert code == 1 and "error:" in err and "Traceback" not in err


@pytest.fixture
def random_one_lane_checkpoint(one_lane_checkpoint):
    """The one-lane checkpoint with a tiny random Qwen3.5 in it (not a QwenGPU)."""
    from random_checkpoints import save_random_qwen

    save_random_qwen(one_lane_checkpoint, TraceProtocol.load(one_lane_checkpoint))
    return one_lane_checkpoint


def test_model_backend_prompts_and_checks_on_the_checkpoints_machine(
        random_one_lane_checkpoint, capsys):
    """The prompt is the one-lane machine's (a default-machine prompt would be refused by the
    protocol check) and --check steps the one-lane interpreter: record 0 is compared."""
    code, _, err = run_cli(capsys, ["run", SERIAL_SUM / "launch.json", "--backend", "model",
                                    "--model", random_one_lane_checkpoint, "--check"])
    assert code == 1 and "--check: record 0 (warp 0, pc 0) differs" in err, err


# --- the sim backend on --spec and -P ------------------------------------------------------

@pytest.mark.parametrize("name", ["serial_sum", "serial_horner", "serial_sort"])
def test_sim_on_the_one_lane_machine(name, capsys):
    example = EXAMPLES_DIR / name
    for flags in (ONE_LANE_FLAGS, ["--spec", SPEC, *ONE_LANE_FLAGS], []):
        code, out, err = run_cli(capsys, ["run", example / "launch.json", "--json", *flags])
        assert code == 0, err
        assert json.loads(out)["buffers"] == expected_of(example)["buffers"]


def test_spec_file_is_used(tmp_path, capsys):
    """A copy of the spec with fewer registers refuses a kernel the default machine takes
    (two registers: fewer than one of its instructions reads and writes, spills or not)."""
    spec = tmp_path / "small.hdl"
    spec.write_text(SPEC.read_text().replace("param REGS = 15;", "param REGS = 2;"))
    assert "param REGS = 2;" in spec.read_text()
    code, _, err = run_cli(capsys, ["run", VECTOR_ADD, "--spec", spec])
    assert code == 1 and "error: kernel vector_add needs 3 registers at once here, but " \
        "QwenGPU has 2" in err, err


def test_a_machine_with_three_registers_runs_vector_add_by_spilling(capsys):
    """vector_add needs 7 registers at once; with 3 the allocator recomputes its parameter
    and special-register reads where they are used (docs/ptx.md, "Spilling")."""
    code, out, err = run_cli(capsys, ["run", VECTOR_ADD, "--json", "-P", "REGS=3"])
    assert code == 0, err
    assert json.loads(out)["buffers"] == expected_of(VECTOR_ADD.parent)["buffers"]


@pytest.mark.parametrize("param, message", [
    ("REGS=2", "vector_add/kernel.cu:4:5: error: kernel vector_add needs 3 registers at once "
               "here"),
    ("PROG_WORDS=10", "error: kernel vector_add needs 19 instruction slots, but QwenGPU has 10"),
    ("MEM_WORDS=40", "launch.json:6:3: error: the buffers need 48 words (a: 16, b: 16, c: 16), "
                     "but QwenGPU has 40 words of memory (8 too many)"),
    ("PARAM_WORDS=2", "error: kernel vector_add reads 4 parameter words"),
    ("LANES=2", "launch.json:4:3: error: the launch needs 8 warps (grid 2 x ceil(8 / 2) "
                "threads per warp), but QwenGPU has 4"),
])
def test_a_kernel_that_does_not_fit_the_chosen_machine(param, message, capsys):
    flags = ["-P", param] if param != "LANES=2" else ["-P", param, "-P", "WARPS=4"]
    code, _, err = run_cli(capsys, ["run", VECTOR_ADD, *flags])
    assert code == 1 and message in err and "Traceback" not in err, err


def test_traps_name_the_chosen_memory(capsys):
    bounds = EXAMPLES_DIR / "out_of_bounds" / "launch.json"
    code, _, err = run_cli(capsys, ["run", bounds, "-P", "MEM_WORDS=32"])
    assert code == 1 and "past the 32 words of memory" in err, err


@pytest.mark.parametrize("flags, message", [
    (["-P", "NOPE=1"], "the spec has no parameter NOPE"),
    (["--spec", "specs/counter.hdl"], "counter is not a QwenGPU machine"),
    (["--spec", "no/such.hdl"], "cannot read spec"),
])
def test_bad_machine_choices(flags, message, capsys):
    for command in ("run", "launch"):
        code, _, err = run_cli(capsys, [command, VECTOR_ADD, *flags])
        assert code == 1 and message in err and "Traceback" not in err, (command, err)


def test_bad_parameter_syntax_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", str(VECTOR_ADD), "-P", "LANES"])
    assert stop.value.code == 2
    assert "-P expects NAME=INTEGER" in capsys.readouterr().err


def test_default_machine_unchanged():
    assert load_machine().shape == load_machine(SPEC, {}).shape
    with pytest.raises(HdlError):
        load_machine(SPEC, {"NOPE": 1})
