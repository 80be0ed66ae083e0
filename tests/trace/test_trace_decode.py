"""Decoding traces (qwengpu/trace/decode.py): encoded records decode back to the same
records, one token at a time or whole; garbled and truncated streams are `DecodeError`s
naming the position and what was expected there; `split_prompt` separates a prompt from its
trace.  What the records mean for a launch is tested in tests/runtime/test_decode.py.  (The
file is not called test_decode.py: that name is tests/runtime's, and pytest imports test
files by base name.)  The tests that count positions read the qwengpu fields with every
field and port token present (`fixed_protocol`: 55 tokens a record, so positions are easy to
count); records that leave fields out are decoded in tests/trace/test_optional.py."""

from __future__ import annotations

import pytest

from qwengpu.dsl.elaborate import load_design
from qwengpu.trace.decode import DecodeError, TraceDecoder, decode_trace, split_prompt
from qwengpu.trace.protocol import TraceProtocol

from trace_helpers import TEST_SPECS, random_records


@pytest.mark.parametrize("which", ["protocol", "fixed_protocol"])
def test_decoder_streams_records(which, request):
    protocol = request.getfixturevalue(which)
    records = random_records(protocol, 5)
    decoder = TraceDecoder(protocol)
    ids = protocol.encode_records(records)
    completed = [r for r in map(decoder.feed, ids) if r is not None]
    assert completed == records and decoder.ended and decoder.finish() == records
    assert decoder.tokens == len(ids) <= 5 * 55 + 1


def test_no_records(protocol):
    assert decode_trace([protocol.eos_id], protocol) == []


def garble(protocol, edit):
    ids = protocol.encode_records(random_records(protocol, 4))
    edit(ids)
    with pytest.raises(DecodeError) as caught:
        decode_trace(ids, protocol)
    return caught.value.message


def test_token_out_of_place(fixed_protocol):
    protocol = fixed_protocol
    def swap(ids):
        ids[64], ids[65] = ids[65], ids[64]          # record 1, slots 9 and 10
    message = garble(protocol, swap)
    assert message.startswith("position 64: expected rval0.b1=.. (byte 1 of field rval0 of "
                              "record 1), got rval0.b2=")


def test_missing_byte(fixed_protocol):
    protocol = fixed_protocol
    message = garble(protocol, lambda ids: ids.pop(55 * 3 + 20))
    assert message.startswith("position 185: expected rval3.b0=..")


def test_missing_eos_and_truncation(fixed_protocol):
    protocol = fixed_protocol
    assert "has no <eos>" in garble(protocol, lambda ids: ids.pop())
    message = garble(protocol, lambda ids: ids.__delitem__(slice(-13, None)))
    assert "stops in the middle of a record" in message and "expected mval3.b0=.." in message
    message = garble(protocol, lambda ids: ids.__delitem__(slice(-3, None)))
    assert "stops in the middle of a record" in message and \
        "expected commit:port2 (write port 2 of record" in message


def test_eos_in_a_record_and_tokens_after_eos(fixed_protocol):
    protocol = fixed_protocol
    def early_eos(ids):
        ids[100] = protocol.eos_id
    assert "position 100: expected" in garble(protocol, early_eos)
    assert "<eos> in the middle of a record" in garble(protocol, early_eos)
    message = garble(protocol, lambda ids: ids.append(protocol.field_token("warp", 0, 1)))
    assert "after <eos>" in message and "warp.b0=01" in message


def test_foreign_tokens(fixed_protocol):
    protocol = fixed_protocol
    def prompt_token(ids):
        ids[51] = protocol.commit_token("mem", (3,))
    assert "got mem[3] (a prompt (state) token)" in garble(protocol, prompt_token)

    def out_of_vocab(ids):
        ids[2] = protocol.vocab_size + 5
    assert "position 2: token id" in garble(protocol, out_of_vocab)


def test_port_tokens_follow_every_record_in_order(fixed_protocol):
    protocol = fixed_protocol
    """specs/qwengpu.hdl stores from 4 lanes into `mem`: 3 port tokens after the 52 bytes."""
    assert protocol.write_ports == 4
    port = [protocol.port_token(k) for k in (1, 2, 3)]
    ids = protocol.encode_records(random_records(protocol, 4))
    assert ids[52:55] == ids[107:110] == port
    message = garble(protocol, lambda ids: ids.pop(52))
    assert message.startswith("position 52: expected commit:port1 (write port 1 of record 0), "
                              "got commit:port2 (a record's port token)")

    def swap(ids):
        ids[53], ids[54] = ids[54], ids[53]
    assert garble(protocol, swap).startswith("position 53: expected commit:port2")

    def field_for_port(ids):
        ids[54] = protocol.field_token("warp", 0, 0)
    message = garble(protocol, field_for_port)
    assert message.startswith("position 54: expected commit:port3 (write port 3 of record 0), "
                              "got warp.b0=00 (a record token)")

    def port_for_field(ids):
        ids.insert(55, port[0])
    message = garble(protocol, port_for_field)
    assert message.startswith("position 55: expected warp.b0=.. (the start of record 1) or "
                              "<eos>, got commit:port1 (a record's port token)")

    def eos_for_port(ids):
        ids[52:] = [protocol.eos_id]
    assert "position 52: expected commit:port1" in garble(protocol, eos_for_port)
    assert "<eos> in the middle of a record" in garble(protocol, eos_for_port)


def test_one_port_machines_have_no_port_tokens():
    design = load_design(TEST_SPECS / "two_lanes.hdl")
    protocol = TraceProtocol.from_design(design)
    assert protocol.write_ports == 1
    assert protocol.tokens_per_record == len(protocol.record_slots) == 3
    assert not [token for token in protocol.tokens if token.kind == "port"]
    ids = protocol.encode_records([{"t": 1, "v0": 2, "v1": 3}])
    assert decode_trace(ids, protocol) == [{"t": 1, "v0": 2, "v1": 3}]


def test_errors_count_positions_from_the_offset(fixed_protocol):
    protocol = fixed_protocol
    ids = protocol.encode_records(random_records(protocol, 1))
    with pytest.raises(DecodeError, match="position 1055: the trace has no <eos>"):
        decode_trace(ids[:-1], protocol, offset=1000)          # 55 tokens fed from 1000
    ids[10] = protocol.eos_id
    with pytest.raises(DecodeError, match="position 1010: expected"):
        decode_trace(ids, protocol, offset=1000)


def test_what_the_decoder_expects_next(fixed_protocol):
    protocol = fixed_protocol
    decoder = TraceDecoder(protocol)
    assert decoder.expected() == "warp.b0=.. (the start of record 0) or <eos>"
    for token_id in protocol.encode_record(random_records(protocol, 1)[0])[:53]:
        decoder.feed(token_id)
    assert decoder.expected() == "commit:port2 (write port 2 of record 0)"
    assert decoder.tokens == 53 and decoder.records == []


def test_split_prompt(protocol):
    prompt = [protocol.bos_id, protocol.init_token("warp", 0), protocol.trace_id]
    trace = protocol.encode_records(random_records(protocol, 1))
    assert split_prompt(prompt + trace, protocol) == (prompt, trace)
    assert split_prompt(trace, protocol) == ([], trace)
    assert split_prompt([], protocol) == ([], [])
    for start in (protocol.bos_id, protocol.stage_token(0, 1)):
        with pytest.raises(DecodeError, match="position 0: .* has no <trace> token"):
            split_prompt([start, *trace], protocol)
