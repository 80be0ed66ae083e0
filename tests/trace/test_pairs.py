"""Two record fields in one token (`emit (a, b)`, docs/hdl.md "Two fields in one token"),
short of a model: the pair's vocabulary and texts, encoding and decoding of records whose
small fields share tokens (a mask in a pair's high digit too), protocol.json, the decoder's
messages, and the HDL errors for what cannot be paired.  Expected token texts and lengths are
worked out by hand from the spec below."""

from __future__ import annotations

import pytest

from qwengpu.dsl.elaborate import elaborate_source
from qwengpu.dsl.interp import Simulator
from qwengpu.errors import HdlError
from qwengpu.trace.decode import DecodeError, decode_trace
from qwengpu.trace.protocol import TraceProtocol

# `(lo, wen)` opens a record (wen, 2 bits, the mask of `val`), `(flag, done)` closes it.
SPEC = """
machine pairs;
register r : u8;
stage s {{
    let lo : u4 = r[3:0];
    let wen : u2 = r[5:4];
    for lane in 0..2 {{ let val[lane] : u8 = wen[lane] ? r + lane : 0; }}
    emit {emits};
    r <= r + 1;
}}
"""
EMITS = "(lo, wen), val when wen, (flag = r[6], done = r[7])"


def design(emits: str = EMITS):
    return elaborate_source(SPEC.format(emits=emits), "pairs.hdl")


def test_a_pair_is_one_slot_with_a_token_per_pair_of_values():
    protocol = TraceProtocol.from_design(design())
    assert [f.name for f in protocol.fields] == ["lo", "wen", "val0", "val1", "flag", "done"]
    assert [f.packed for f in protocol.fields] == [False, True, False, False, False, True]
    assert protocol.record_slots == (("lo", 0), ("val0", 0), ("val1", 0), ("flag", 0))
    assert protocol.slot_pair == {0: "wen", 3: "done"}
    assert protocol.tokens_per_record == 4
    texts = [t.text for t in protocol.tokens if t.kind == "field" and t.slot == 0]
    assert len(texts) == 16 * 4 and texts[:2] == ["lo=0,wen=0", "lo=1,wen=0"]
    assert texts[-1] == "lo=f,wen=3"
    token = protocol.describe(protocol.token_id("lo=5,wen=2"))
    assert (token.value, token.pair, protocol.field_values(token)) == \
        (0x25, "wen", [("lo", 5), ("wen", 2)])
    assert protocol.field_token("lo", 0, 0x25) == token.id
    closing = [t for t in protocol.tokens if t.kind == "field" and t.slot == 3]
    assert len(closing) == 4 and all(t.closes_record for t in closing)
    assert protocol.slot_digits(0) == (("lo", 0), ("wen", 0))
    assert protocol.slot_digits(1) == (("val0", 0), ("val0", 1))


def test_records_round_trip_with_the_mask_in_a_high_digit(tmp_path):
    protocol = TraceProtocol.from_design(design())
    records = Simulator(design()).run(256)
    ids = protocol.encode_records(records)
    assert decode_trace(ids, protocol) == records
    lengths = {r["wen"]: len(protocol.encode_record(r)) for r in records}
    assert lengths == {0: 2, 1: 3, 2: 3, 3: 4}             # the pairs, then a value per lane
    record = records[0x9A]                                # r = 0x9a: lo a, wen 1, done 1
    assert [protocol.describe(i).text for i in protocol.encode_record(record)] == \
        ["lo=a,wen=1", "val0.b0=9a", "flag=0,done=1"]
    protocol.save(tmp_path)
    assert TraceProtocol.load(tmp_path) == protocol


def test_the_decoder_names_both_fields_of_a_pair():
    protocol = TraceProtocol.from_design(design())
    ids = protocol.encode_records(Simulator(design()).run(3))
    with pytest.raises(DecodeError, match=r"position 1: expected flag=\.,done=\. \(fields flag "
                                          r"and done of record 0\), got lo=1,wen=0"):
        decode_trace(ids[:1] + ids[2:], protocol)          # record 0 is wen 0: two tokens
    with pytest.raises(DecodeError, match=r"expected lo=\.,wen=\. \(the start of record 0\)"):
        decode_trace([protocol.token_id("flag=0,done=0")], protocol)


def test_a_pair_wider_than_a_digit_stays_two_fields():
    """A pair is a layout that holds where it fits: `(r, wen)` with an 8-bit r is two
    fields, so a spec's pairs hold for any value of its parameters."""
    protocol = TraceProtocol.from_design(design("(r, wen), val when wen, flag = r[6]"))
    assert not any(f.packed for f in protocol.fields) and protocol.slot_pair == {}
    assert protocol.record_slots[:2] == (("r", 0), ("wen", 0))


@pytest.mark.parametrize("emits, field, message", [
    ("(lo, val), flag", "val", "val is an array"),
    ("lo, (wen, val0 = r[1:0] when lo), flag", "val0", "present `when lo`"),
])
def test_what_cannot_be_paired_is_refused_at_the_field(emits, field, message):
    source = SPEC.format(emits=emits).replace("let lo : u4", "let flag = r[6];\n    let lo : u4")
    with pytest.raises(HdlError, match="`emit \\(|is an array") as error:
        elaborate_source(source, "pairs.hdl")
    assert message in str(error.value)
    line = next(number for number, text in enumerate(source.splitlines(), 1) if "emit" in text)
    assert error.value.loc.line == line and error.value.loc.column > 1
