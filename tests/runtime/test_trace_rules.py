"""The rules every trace of a launch keeps (qwengpu.runtime.trace_rules) and `hdlc decode
--check`: a lone `<eos>`, another launch's trace, forged records and a truncated trace are
refused with the record and the rule; a trace that keeps every rule but holds a wrong value
decodes, and `--check` names its record and field.  Every example's own trace keeps the rules
(tests/runtime/test_decode.py decodes them all through the same check)."""

from __future__ import annotations

import json

import pytest

from runtime_helpers import EXAMPLES_DIR, VECTOR_ADD, launch_of, sim_result
from qwengpu.cli import main
from qwengpu.runtime.decode import decode_launch
from qwengpu.trace.decode import DecodeError

VECTOR_ADD_DIR = VECTOR_ADD.parent


def forged(change) -> list[dict[str, int]]:
    """vector_add's records with `change(records)` applied."""
    records = [dict(record) for record in sim_result(VECTOR_ADD_DIR).records]
    change(records)
    return records


def refused(protocol, records, message):
    with pytest.raises(DecodeError, match=message):
        decode_launch(launch_of(VECTOR_ADD_DIR), protocol.encode_records(records), protocol)


def test_a_lone_eos_is_no_trace(protocol):
    with pytest.raises(DecodeError, match="the trace has no records"):
        decode_launch(launch_of(VECTOR_ADD_DIR), [protocol.eos_id], protocol)


def test_another_launchs_trace_is_refused(protocol):
    """serial_mad's trace against vector_add's launch: its first record (the same opcode at
    pc 0) writes another register than vector_add's program does there."""
    other = sim_result(EXAMPLES_DIR / "serial_mad").records
    refused(protocol, other, r"record 0 \(warp 0, pc 0\) is not a step of this launch: rd is "
                             r"1, but the instruction writes r6")


def _set(index, **fields):
    def change(records):
        records[index].update(fields)
    return change


def test_forged_records_are_refused(protocol):
    records = sim_result(VECTOR_ADD_DIR).records
    op = records[0]["op"]
    refused(protocol, forged(_set(0, op=(op + 1) % 64)), "the program holds")
    refused(protocol, forged(_set(0, warp=7)), r"the launch starts warps 0\.\.3")
    refused(protocol, forged(_set(0, exec=records[0]["active"] | 0, active=0)),
            "is not within active")
    refused(protocol, forged(_set(0, rd=(records[0]["rd"] + 1) % 16)), "but the instruction "
                                                                     "writes r")
    writer = next(i for i, record in enumerate(records) if record["rwen"] and
                  record["exec"] != 15)
    refused(protocol, forged(_set(writer, rwen=15, **{f"rval{lane}": 0 for lane in range(4)})),
            "rwen 0, 1, 2, 3 is not within exec")


def test_a_lane_that_exited_runs_no_more(protocol):
    """A record of warp 0 after all its lanes exited: its active lanes are not running."""
    def change(records):
        last_of_warp_0 = max(i for i, record in enumerate(records) if record["warp"] == 0)
        records.insert(last_of_warp_0 + 1, dict(records[0]))
    refused(protocol, forged(change), r"active lanes 0, 1, 2, 3, but the warp's running lanes "
                                      r"are none")


def test_a_truncated_trace_is_refused(protocol):
    records = sim_result(VECTOR_ADD_DIR).records
    refused(protocol, records[:-1], rf"the trace ends after record {len(records) - 2}, but "
                                    r"lanes have not exited \(warp 3 lanes")


def run_cli(capsys, argv):
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_decode_check_replays_the_interpreter(protocol, tmp_path, capsys):
    """A wrong value keeps every rule (so `hdlc decode` prints buffers and exits 0); with
    `--check` the replay names its record and field and exits 1."""
    records = sim_result(VECTOR_ADD_DIR).records
    writer = next(i for i, record in enumerate(records) if record["rwen"] & 1)
    ids = protocol.encode_records(forged(_set(writer, rval0=records[writer]["rval0"] ^ 1)))
    path = tmp_path / "ids.json"
    path.write_text(json.dumps(ids))
    code, out, _ = run_cli(capsys, ["decode", str(VECTOR_ADD), "--tokens", str(path)])
    assert code == 0 and "c = " in out
    code, _, err = run_cli(capsys, ["decode", str(VECTOR_ADD), "--tokens", str(path),
                                    "--check"])
    assert code == 1 and (f"--check: record {writer} (warp {records[writer]['warp']}, pc "
                          f"{records[writer]['pc']}) differs from the interpreter's: rval0 is "
                          f"{records[writer]['rval0'] ^ 1}") in err
    path.write_text(json.dumps(protocol.encode_records(records)))
    code, out, _ = run_cli(capsys, ["decode", str(VECTOR_ADD), "--tokens", str(path),
                                    "--check"])
    assert code == 0 and "c = " in out
