"""Decoding launches: the interpreter's records, encoded with the protocol, decode back to the
same records and to the buffers of the examples' independent expectations; traps, stores
outside memory, a wrong prompt and bad token files are `DecodeError`s; `hdlc decode`.  The
token-level decoder (garbled and truncated streams) is tested in
tests/trace/test_trace_decode.py."""

from __future__ import annotations

import json

import pytest

from tiers import SPREAD, spread_by_default
from runtime_helpers import IDS, RUNNABLE, VECTOR_ADD, expected_of, launch_of, sim_result
from qwengpu.cli import main
from qwengpu.runtime.decode import decode_launch, read_token_file
from qwengpu.trace.decode import DecodeError
from qwengpu.runtime.prompt import build_prompt

VECTOR_ADD_DIR = VECTOR_ADD.parent


@pytest.mark.parametrize("example", spread_by_default(RUNNABLE, SPREAD, IDS))
def test_decode_of_encoded_records(example, protocol):
    """Every third example by default, the rest in the extra tier (tests/tiers.py): every
    launch on the model decodes its ids the same way."""
    launch, sim = launch_of(example), sim_result(example)
    ids = protocol.encode_records(sim.records)
    result = decode_launch(launch, ids, protocol)
    assert result.records == sim.records
    # a record is 11 ids (its always-present bytes) to 54 (with every optional field and port)
    assert result.tokens == len(ids)
    assert len(sim.records) * 11 + 1 <= len(ids) <= len(sim.records) * 54 + 1
    expected = expected_of(example)
    if "buffers" in expected:
        assert result.buffers == expected["buffers"]
        assert result.trap is None
    else:
        assert expected == {"trap": "address"}
        assert result.trap is not None and result.trap.kind == "address out of range"
        assert result.trap.as_json() == sim.trap.as_json()
    with_prompt = decode_launch(launch, build_prompt(launch, protocol) + ids, protocol)
    assert with_prompt.records == sim.records and with_prompt.tokens == len(ids)


def test_trap_must_end_the_trace(protocol):
    records = [dict(record) for record in sim_result(VECTOR_ADD_DIR).records]
    records[3]["trap"] = 2
    with pytest.raises(DecodeError, match="record 3 is a trap"):
        decode_launch(launch_of(VECTOR_ADD_DIR), protocol.encode_records(records), protocol)


def test_store_outside_memory(protocol):
    records = [dict(record) for record in sim_result(VECTOR_ADD_DIR).records]
    store = next(i for i, record in enumerate(records) if record["mwen"])
    lane = next(lane for lane in range(4) if records[store]["mwen"] >> lane & 1)
    records[store][f"maddr{lane}"] = 127
    with pytest.raises(DecodeError, match=f"record {store}: lane {lane} stores to word 127"):
        decode_launch(launch_of(VECTOR_ADD_DIR), protocol.encode_records(records), protocol)


def test_prompt_checks(protocol):
    launch = launch_of(VECTOR_ADD_DIR)
    prompt = build_prompt(launch, protocol)
    trace = protocol.encode_records(sim_result(VECTOR_ADD_DIR).records)
    wrong = list(prompt)
    wrong[200] = protocol.stage_token(0, 0x55) if wrong[200] != protocol.stage_token(0, 0x55) \
        else protocol.stage_token(0, 0x56)
    with pytest.raises(DecodeError, match="position 200: the stream's prompt is not the prompt"):
        decode_launch(launch, wrong + trace, protocol)
    with pytest.raises(DecodeError, match="has no <trace> token"):
        decode_launch(launch, prompt[:-1], protocol)
    other = build_prompt(launch_of(RUNNABLE[0]), protocol)
    with pytest.raises(DecodeError, match="not the prompt of this launch"):
        decode_launch(launch, other + trace, protocol)


def test_read_token_file(tmp_path):
    path = tmp_path / "ids.json"
    for data in ([1, 2], {"ids": [1, 2]}, {"input_ids": [1, 2]}, [[1, 2]]):
        path.write_text(json.dumps(data))
        assert read_token_file(str(path)) == [1, 2]
    for data, message in (({"x": 1}, "got keys"), ([1, "a"], "position 1"),
                          ([True], "position 0"), (3, "list of token ids")):
        path.write_text(json.dumps(data))
        with pytest.raises(DecodeError, match=message):
            read_token_file(str(path))
    path.write_text("[1,")
    with pytest.raises(DecodeError, match="cannot read"):
        read_token_file(str(path))
    with pytest.raises(DecodeError, match="not found"):
        read_token_file(str(tmp_path / "none.json"))


def run_cli(capsys, argv):
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_hdlc_decode_matches_hdlc_run(protocol, tmp_path, capsys):
    launch = launch_of(VECTOR_ADD_DIR)
    trace = protocol.encode_records(sim_result(VECTOR_ADD_DIR).records)
    code, out, _ = run_cli(capsys, ["run", str(VECTOR_ADD), "--json"])
    assert code == 0
    expected = json.loads(out)
    # the interpreter's run says what the trace and prompt cost a model, before any runs
    assert expected.pop("prompt_tokens") == len(build_prompt(launch, protocol)) == 319
    assert expected["tokens"] == len(trace) == 1661        # 76 records
    for ids in (trace, build_prompt(launch, protocol) + trace):
        path = tmp_path / "ids.json"
        path.write_text(json.dumps({"ids": ids}))
        code, out, _ = run_cli(capsys, ["decode", str(VECTOR_ADD), "--tokens", str(path),
                                        "--json"])
        assert code == 0 and json.loads(out) == expected
        assert list(json.loads(out)) == ["buffers", "records", "tokens", "trap"]
    code, out, _ = run_cli(capsys, ["decode", str(VECTOR_ADD), "--tokens", str(path),
                                    "--trace"])
    assert code == 0 and "c = [0, 3, -3, 0," in out and "76 records" in out


def test_hdlc_decode_trap_and_errors(protocol, tmp_path, capsys):
    bounds = RUNNABLE[[p.name for p in RUNNABLE].index("out_of_bounds")]
    path = tmp_path / "ids.json"
    path.write_text(json.dumps(protocol.encode_records(sim_result(bounds).records)))
    code, out, err = run_cli(capsys, ["decode", str(bounds / "launch.json"), "--tokens",
                                      str(path), "--json"])
    assert code == 1 and json.loads(out)["trap"]["kind"] == "address out of range"
    assert "trap: address out of range" in err
    path.write_text(json.dumps(protocol.encode_records(sim_result(VECTOR_ADD_DIR).records)[:-1]))
    code, _, err = run_cli(capsys, ["decode", str(VECTOR_ADD), "--tokens", str(path)])
    assert code == 1 and "error: position 1660: the trace has no <eos>" in err
    code, _, err = run_cli(capsys, ["decode", str(VECTOR_ADD), "--tokens",
                                    str(tmp_path / "none.json")])
    assert code == 1 and "token file not found" in err
