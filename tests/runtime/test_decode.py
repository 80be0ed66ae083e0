"""Decoding traces: the interpreter's records, encoded with the protocol, decode back to the
same records and to the buffers of the examples' independent expectations; garbled and
truncated streams are located `DecodeError`s."""

from __future__ import annotations

import json

import pytest

from runtime_helpers import IDS, RUNNABLE, VECTOR_ADD, expected_of, launch_of, sim_result
from qwengpu.trace.protocol import TraceProtocol
from qwengpu.cli import main
from qwengpu.dsl.elaborate import load_design
from qwengpu.runtime.decode import decode_launch, read_token_file
from qwengpu.trace.decode import DecodeError, TraceDecoder, decode_trace
from qwengpu.runtime.prompt import build_prompt

VECTOR_ADD_DIR = VECTOR_ADD.parent


@pytest.mark.parametrize("example", RUNNABLE, ids=IDS)
def test_decode_of_encoded_records(example, protocol):
    launch, sim = launch_of(example), sim_result(example)
    ids = protocol.encode_records(sim.records)
    result = decode_launch(launch, ids, protocol)
    assert result.records == sim.records
    assert result.tokens == len(sim.records) * 54 + 1 == len(ids)   # 51 bytes, 3 port tokens
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


def test_decoder_streams_records(protocol):
    sim = sim_result(VECTOR_ADD_DIR)
    decoder = TraceDecoder(protocol)
    completed = [r for r in map(decoder.feed, protocol.encode_records(sim.records))
                 if r is not None]
    assert completed == sim.records and decoder.ended and decoder.finish() == sim.records


def test_no_records(protocol):
    assert decode_trace([protocol.eos_id], protocol) == []


def garble(protocol, edit):
    ids = protocol.encode_records(sim_result(VECTOR_ADD_DIR).records)
    edit(ids)
    with pytest.raises(DecodeError) as caught:
        decode_launch(launch_of(VECTOR_ADD_DIR), ids, protocol)
    return caught.value.message


def test_token_out_of_place(protocol):
    def swap(ids):
        ids[63], ids[64] = ids[64], ids[63]          # record 1, slots 9 and 10
    message = garble(protocol, swap)
    assert message.startswith("position 63: expected rval0.b2=.. (byte 2 of field rval0 of "
                              "record 1), got rval0.b3=")


def test_missing_byte(protocol):
    message = garble(protocol, lambda ids: ids.pop(54 * 3 + 20))
    assert message.startswith("position 182: expected rval3.b1=..")


def test_missing_eos_and_truncation(protocol):
    assert "has no <eos>" in garble(protocol, lambda ids: ids.pop())
    message = garble(protocol, lambda ids: ids.__delitem__(slice(-13, None)))
    assert "stops in the middle of a record" in message and "expected mval2.b3=.." in message
    message = garble(protocol, lambda ids: ids.__delitem__(slice(-3, None)))
    assert "stops in the middle of a record" in message and \
        "expected commit:port2 (write port 2 of record" in message


def test_eos_in_a_record_and_tokens_after_eos(protocol):
    def early_eos(ids):
        ids[100] = protocol.eos_id
    assert "position 100: expected" in garble(protocol, early_eos)
    assert "<eos> in the middle of a record" in garble(protocol, early_eos)
    message = garble(protocol, lambda ids: ids.append(protocol.field_token("warp", 0, 1)))
    assert "after <eos>" in message and "warp.b0=01" in message


def test_foreign_tokens(protocol):
    def prompt_token(ids):
        ids[51] = protocol.commit_token("mem", (3,))
    assert "got mem[3] (a prompt (state) token)" in garble(protocol, prompt_token)

    def out_of_vocab(ids):
        ids[2] = protocol.vocab_size + 5
    assert "position 2: token id" in garble(protocol, out_of_vocab)


def test_port_tokens_follow_every_record_in_order(protocol):
    """specs/qwengpu.hdl stores from 4 lanes into `mem`: 3 port tokens after the 51 bytes."""
    assert protocol.write_ports == 4
    port = [protocol.port_token(k) for k in (1, 2, 3)]
    ids = protocol.encode_records(sim_result(VECTOR_ADD_DIR).records)
    assert ids[51:54] == ids[105:108] == port
    message = garble(protocol, lambda ids: ids.pop(51))
    assert message.startswith("position 51: expected commit:port1 (write port 1 of record 0), "
                              "got commit:port2 (a record's port token)")

    def swap(ids):
        ids[52], ids[53] = ids[53], ids[52]
    assert garble(protocol, swap).startswith("position 52: expected commit:port2")

    def field_for_port(ids):
        ids[53] = protocol.field_token("warp", 0, 0)
    message = garble(protocol, field_for_port)
    assert message.startswith("position 53: expected commit:port3 (write port 3 of record 0), "
                              "got warp.b0=00 (a record token)")

    def port_for_field(ids):
        ids.insert(54, port[0])
    message = garble(protocol, port_for_field)
    assert message.startswith("position 54: expected warp.b0=.. (the start of record 1) or "
                              "<eos>, got commit:port1 (a record's port token)")

    def eos_for_port(ids):
        ids[51:] = [protocol.eos_id]
    assert "position 51: expected commit:port1" in garble(protocol, eos_for_port)
    assert "<eos> in the middle of a record" in garble(protocol, eos_for_port)


def test_one_port_machines_have_no_port_tokens():
    design = load_design("tests/backend_torch/specs/two_lanes.hdl")
    protocol = TraceProtocol.from_design(design)
    assert protocol.write_ports == 1
    assert protocol.tokens_per_record == len(protocol.record_slots) == 3
    assert not [token for token in protocol.tokens if token.kind == "port"]
    ids = protocol.encode_records([{"t": 1, "v0": 2, "v1": 3}])
    assert decode_trace(ids, protocol) == [{"t": 1, "v0": 2, "v1": 3}]


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
    expected = {**json.loads(out), "tokens": len(trace)}
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
    assert code == 1 and "error: position 4104: the trace has no <eos>" in err
    code, _, err = run_cli(capsys, ["decode", str(VECTOR_ADD), "--tokens",
                                    str(tmp_path / "none.json")])
    assert code == 1 and "token file not found" in err
