"""Optional record fields and port tokens, end to end short of a model: `emit F when M` as
elaborated (a bit per element, or M != 0), the interpreter's refusal of an absent field that
is not 0, the protocol's encoding and decoding of records without their absent fields
(positions, port tokens, protocol.json), the decoder's errors for a field missing or one too
many, which port tokens a record needs (`port_conditions`), and `check_optional_reads`
(qwengpu/trace/optional.py), which refuses a write that may read a field its record left
out.  Expected values are worked out by hand from the specs below."""

from __future__ import annotations

import pytest

from qwengpu.dsl.elaborate import elaborate_source, load_design
from qwengpu.dsl.interp import Simulator
from qwengpu.errors import HdlError
from qwengpu.trace.decode import DecodeError, decode_trace
from qwengpu.trace.optional import check_optional_reads, required_field_bits
from qwengpu.trace.protocol import TraceProtocol
from qwengpu.trace.write_ports import port_conditions

from trace_helpers import SPECS, random_records

# Two lanes: `val` per lane when its bit of `wen` is set, `addr` when any lane stores, one
# store per lane into `mem` (two write ports: `commit:port1` when lane 1 stores).
SPEC = """
machine opt;
memory mem[4] : u8;
register r : u8;
stage s {{
    let wen : u2 = r[1:0];
    let sen : u2 = r[3:2];
    for lane in 0..2 {{ let val[lane] : u8 = wen[lane] ? r + lane : 0; }}
    let addr : u2 = sen != 0 ? r[5:4] : 0;
    emit r, wen, val when wen, sen, addr when sen, done = r[7];
    for lane in 0..2 {{
        mem[addr + lane] <= {data} when {enable};
    }}
    r <= r + 1;
}}
"""
SAFE = dict(data="val[lane]", enable="sen[lane] & wen[lane]")


def design(**parts):
    return elaborate_source(SPEC.format(**{**SAFE, **parts}), "opt.hdl")


def test_conditions_as_elaborated():
    fields = {f.name: (f.when, f.when_bit) for f in design().record}
    assert fields == {"r": (None, None), "wen": (None, None), "val0": ("wen", 0),
                      "val1": ("wen", 1), "sen": (None, None), "addr": ("sen", None),
                      "done": (None, None)}


def test_the_interpreter_refuses_an_absent_field_that_is_not_zero():
    source = SPEC.format(**SAFE).replace("wen[lane] ? r + lane : 0", "r + lane")
    sim = Simulator(elaborate_source(source, "opt.hdl"))
    sim.registers["r"] = 1                              # lane 0 writes, lane 1 does not
    with pytest.raises(HdlError, match=r"record field val1 is absent \(its condition, bit 1 of "
                                       r"wen, does not hold\) but is 2") as error:
        sim.step()
    assert error.value.loc.line == 10


def test_records_leave_out_absent_fields_and_port_tokens():
    protocol = TraceProtocol.from_design(design())
    assert protocol.optional and protocol.port_when == ((("sen", 1),),)
    assert protocol.tokens_per_record == 7 + 1          # every field and commit:port1
    sim, texts = Simulator(design()), []
    for _ in range(16):
        record = sim.step()
        texts.append(" ".join(protocol.describe(i).text for i in protocol.encode_record(record)))
    assert texts[0] == "r.b0=00 wen.b0=00 sen.b0=00 done.b0=00"
    assert texts[1] == "r.b0=01 wen.b0=01 val0.b0=01 sen.b0=00 done.b0=00"
    assert texts[3] == "r.b0=03 wen.b0=03 val0.b0=03 val1.b0=04 sen.b0=00 done.b0=00"
    assert texts[4] == "r.b0=04 wen.b0=00 sen.b0=01 addr.b0=00 done.b0=00"
    assert texts[8] == "r.b0=08 wen.b0=00 sen.b0=02 addr.b0=00 done.b0=00 commit:port1"
    assert texts[15] == ("r.b0=0f wen.b0=03 val0.b0=0f val1.b0=10 sen.b0=03 addr.b0=00 "
                         "done.b0=00 commit:port1")


def test_next_position_skips_what_the_record_leaves_out():
    protocol = TraceProtocol.from_design(design())
    slots = [name for name, _ in protocol.record_slots]   # r wen val0 val1 sen addr done
    assert protocol.next_position(slots.index("wen"), {"wen": 2}) == slots.index("val1")
    assert protocol.next_position(slots.index("wen"), {"wen": 0}) == slots.index("sen")
    assert protocol.next_position(slots.index("sen"), {"sen": 0}) == slots.index("done")
    assert protocol.next_position(slots.index("done"), {"sen": 1}) == 0     # no port token
    assert protocol.next_position(slots.index("done"), {"sen": 2}) == 7     # commit:port1


def test_encode_decode_round_trip_and_protocol_file(tmp_path):
    protocol = TraceProtocol.from_design(design())
    records = random_records(protocol, 200, seed=3)
    ids = protocol.encode_records(records)
    assert decode_trace(ids, protocol) == records
    assert len(ids) < 200 * protocol.tokens_per_record
    protocol.save(tmp_path)
    assert TraceProtocol.load(tmp_path) == protocol
    with pytest.raises(Exception, match="absent"):
        protocol.encode_record({**records[0], "wen": 0, "val0": 5})


def test_decode_names_a_missing_field_and_one_too_many():
    protocol = TraceProtocol.from_design(design())
    tok = protocol.field_token
    base = [tok("r", 0, 1), tok("wen", 0, 1)]
    with pytest.raises(DecodeError, match=r"position 2: expected val0\.b0=\.\. .*val0 is "
                                          r"present: bit 0 of wen holds\), got sen\.b0=00"):
        decode_trace(base + [tok("sen", 0, 0)], protocol)
    with pytest.raises(DecodeError, match=r"position 3: expected sen\.b0=\.\. .*got val1\.b0=00"
                                          r" .*\(val1 is absent from this record: bit 1 of "
                                          r"wen does not hold\)"):
        decode_trace(base + [tok("val0", 0, 1), tok("val1", 0, 0)], protocol)


def test_port_conditions_of_the_shipped_spec():
    assert port_conditions(load_design(SPECS / "qwengpu.hdl")) == \
        [(("mwen", 1),), (("mwen", 2),), (("mwen", 3),)]


def test_a_port_whose_writes_need_no_field_bit_is_in_every_record():
    assert port_conditions(design(enable="r[6] | sen[lane]")) == [None]
    assert port_conditions(design(enable="r[6] & r[7]")) == [(("r", 6),)]


def test_required_field_bits():
    d = design()
    enable = next(w.enable for w in d.writes if w.state == "mem")
    assert required_field_bits(d, enable) == {("sen", 0), ("wen", 0)}


@pytest.mark.parametrize("parts", [
    SAFE,
    dict(data="addr == 1 ? val[lane] : 0"),          # under an enable that requires wen[lane]
    dict(enable="sen[lane] & (wen[lane] & (val[lane] == 3))"),   # val guarded in the enable
    dict(enable="(sen != 0) & (addr == 2) & wen[lane]"),         # addr when sen != 0
], ids=["enable-requires-mask", "data-under-enable", "guarded-in-enable", "nonzero-mask"])
def test_reads_under_their_mask_are_accepted(parts):
    check_optional_reads(design(**parts))


@pytest.mark.parametrize("parts, field", [
    (dict(enable="sen[lane]"), "val0"),               # data read without wen[lane]
    (dict(enable="sen[lane] & wen[lane] & (wen[0] | (val[1] == 3))"), "val1"),  # OR: no guard
    (dict(enable="wen[lane]"), "addr"),               # the index, without sen
], ids=["data-unguarded", "or-in-enable", "index-unguarded"])
def test_reads_outside_their_mask_are_refused(parts, field):
    with pytest.raises(HdlError, match=f"reads record field {field}, which a record leaves out"
                       ) as error:
        check_optional_reads(design(**parts))
    assert error.value.loc.line == 12                 # the write
