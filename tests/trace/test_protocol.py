"""The trace vocabulary: its size from the record table, round trips, files, tokenizer."""

from __future__ import annotations

import json

import pytest

from qwengpu.trace.protocol import ProtocolError, TraceProtocol
from qwengpu.dsl.elaborate import load_design
from qwengpu.runtime.machine_state import DEFAULT_SPEC

# docs/isa.md, "A record": field widths in emit order, and when an optional one is present
# (mask field, bit; bit None: the mask is not 0); PACKED: the second fields of pairs.
RECORD_TABLE = [("warp", 3), ("pc", 7), ("active", 4), ("exec", 4), ("op", 6), ("rwen", 4),
                ("pwen", 4), ("rd", 4)] + [(f"rval{lane}", 32) for lane in range(4)] + \
               [("pd", 3), ("pval", 4), ("mwen", 4)] + \
               [(f"maddr{lane}", 7) for lane in range(4)] + \
               [(f"mval{lane}", 32) for lane in range(4)] + \
               [("trap", 3), ("released", 1), ("trap_lane", 2), ("taken", 4), ("exited", 4)]
PACKED = {"exec": "active", "pwen": "rwen", "released": "trap", "exited": "taken"}
CONDITIONS = {"rd": ("rwen", None), "pd": ("pwen", None), "pval": ("pwen", None),
              "trap_lane": ("trap", None),
              **{f"rval{lane}": ("rwen", lane) for lane in range(4)},
              **{f"maddr{lane}": ("mwen", lane) for lane in range(4)},
              **{f"mval{lane}": ("mwen", lane) for lane in range(4)}}
# docs/isa.md, "State": element counts (WARPS 8, LANES 4, REGS 15, PREDS 7) and widths.
STATE_TABLE = {"prog": (128, 64), "mem": (126, 32), "params": (8, 32), "regs": (480, 32),
               "preds": (224, 1), "pc": (32, 7), "live": (32, 1), "warp_ctaid": (8, 32),
               "warp_tid0": (8, 32), "warp_block": (8, 3), "warp_shared": (8, 7),
               "thread_local": (32, 7), "waiting": (8, 1), "shared_words": (1, 8),
               "local_words": (1, 8), "ntid": (1, 32), "nctaid": (1, 32), "last_warp": (1, 3),
               "halted": (1, 1), "trap": (1, 3)}


def test_vocabulary_size_follows_the_record_and_state_tables(protocol):
    field_tokens = 0
    slots = 0
    widths = dict(RECORD_TABLE)
    for name, width in RECORD_TABLE:
        if name in PACKED:                      # in the token of its pair's first field
            continue
        if name in PACKED.values():             # a token per pair of values
            field_tokens += 2 ** width * 2 ** widths[next(k for k, v in PACKED.items()
                                                          if v == name)]
            slots += 1
            continue
        for byte in range(-(-width // 8)):
            field_tokens += 2 ** min(8, width - 8 * byte)
            slots += 1
    commits = sum(count for count, _ in STATE_TABLE.values())
    assert len(protocol.record_slots) == slots == 48
    # `mem` takes one store per lane and step: write ports 1..3 get a token after the fields
    assert protocol.write_ports == 4 and protocol.tokens_per_record == 51
    assert {f.name for f in protocol.fields if f.packed} == set(PACKED)
    assert protocol.stage_bytes == 8
    assert protocol.vocab_size == 5 + field_tokens + 3 + slots + 8 * 256 + commits
    assert [(f.name, f.width) for f in protocol.fields] == RECORD_TABLE
    assert {f.name: (f.when, f.when_bit) for f in protocol.fields if f.when} == CONDITIONS
    # port token k when lane k stores
    assert protocol.port_when == ((("mwen", 1),), (("mwen", 2),), (("mwen", 3),))


def test_every_token_round_trips(protocol):
    texts = protocol.texts
    assert len(set(texts)) == len(texts)
    assert all(" " not in text for text in texts)
    for token in protocol.tokens:
        assert protocol.token_id(token.text) == token.id
        assert protocol.describe(token.id) == token
        if token.kind == "field":
            assert protocol.field_token(token.name, token.byte, token.value) == token.id
        elif token.kind == "stage":
            assert protocol.stage_token(token.byte, token.value) == token.id
        elif token.kind == "commit":
            assert protocol.commit_token(token.name, token.index) == token.id
        elif token.kind == "init":
            assert protocol.init_token(token.name, token.byte) == token.id
        elif token.kind == "port":
            assert protocol.port_token(token.port) == token.id


def test_token_meanings(protocol):
    token = protocol.describe(protocol.token_id("rval2.b1=3f"))
    assert (token.kind, token.name, token.byte, token.value) == ("field", "rval2", 1, 0x3F)
    assert not token.closes_record
    last = protocol.describe(protocol.token_id("taken=3,exited=1"))
    assert last.closes_record and last.slot == 47
    assert (last.name, last.pair, last.value) == ("taken", "exited", 0x13)
    pair = protocol.describe(protocol.token_id("trap=5,released=1"))
    assert (pair.name, pair.pair, pair.value, pair.slot) == ("trap", "released", 0x15, 45)
    assert not pair.closes_record
    with pytest.raises(ProtocolError, match="not a token"):
        protocol.token_id("trap=5,released=2")         # released: 1 bit
    with pytest.raises(ProtocolError, match="not a token"):
        protocol.token_id("trap=8,released=0")         # trap: 3 bits
    with pytest.raises(ProtocolError, match="not a token"):
        protocol.token_id("trap_lane.b0=04")           # 2 bits: values 0..3
    with pytest.raises(ProtocolError, match="not a token"):
        protocol.token_id("pc.b0=80")                  # 7 bits
    commit = protocol.describe(protocol.commit_token("regs", (3, 1, 4)))
    assert (commit.kind, commit.text, commit.index) == ("commit", "regs[3][1][4]", (3, 1, 4))
    assert protocol.describe(protocol.commit_token("ntid")).text == "ntid"
    control = [protocol.pad_id, protocol.unk_id, protocol.bos_id, protocol.trace_id,
               protocol.eos_id]
    assert [protocol.describe(i).text for i in control] == ["<pad>", "<unk>", "<bos>",
                                                            "<trace>", "<eos>"]
    with pytest.raises(ProtocolError, match="outside the vocabulary"):
        protocol.describe(protocol.vocab_size)
    port = protocol.describe(protocol.port_token(2))
    assert (port.kind, port.text, port.port, port.slot) == ("port", "commit:port2", 2, 49)
    with pytest.raises(ProtocolError, match="no port token 4"):
        protocol.port_token(4)


def test_following_slot(protocol):
    slots = protocol.record_slots
    assert slots[0] == ("warp", 0) and slots[6] == ("rval0", 0) and slots[47] == ("taken", 0)
    assert protocol.following_slot(protocol.trace_id) == 0
    assert protocol.following_slot(protocol.token_id("warp.b0=03")) == 1
    assert protocol.following_slot(protocol.token_id("active=3,exec=1")) == 3
    assert protocol.following_slot(protocol.token_id("rval0.b3=ff")) == 10
    assert protocol.following_slot(protocol.token_id("trap=2,released=0")) == 46
    assert protocol.following_slot(protocol.token_id("taken=0,exited=1")) == 48
    assert protocol.following_slot(protocol.token_id("commit:port1")) == 49
    assert protocol.following_slot(protocol.token_id("commit:port3")) == 0
    for text in ("<bos>", "<eos>", "init:warp.b0", "set.b0=00", "mem[0]"):
        assert protocol.following_slot(protocol.token_id(text)) is None


def test_encode_record_is_little_endian_bytes_in_emit_order(protocol):
    record = {name: 0 for name, _ in RECORD_TABLE}
    record.update(warp=5, rwen=0b0100, rval2=0x12345678, trap=2, trap_lane=3, exited=1)
    texts = [protocol.describe(i).text for i in protocol.encode_record(record)]
    assert texts == ["warp.b0=05", "pc.b0=00", "active=0,exec=0", "op.b0=00",
                     "rwen=4,pwen=0", "rd.b0=00",
                     "rval2.b0=78", "rval2.b1=56", "rval2.b2=34", "rval2.b3=12",
                     "mwen.b0=00", "trap=2,released=0", "trap_lane.b0=03", "taken=0,exited=1"]
    every = {**record, "rwen": 15, "pwen": 1, "mwen": 15}
    texts = [protocol.describe(i).text for i in protocol.encode_record(every)]
    assert len(texts) == 51 == protocol.tokens_per_record
    assert texts[-4:] == ["taken=0,exited=1", "commit:port1", "commit:port2", "commit:port3"]
    stores = [protocol.describe(i).text for i in protocol.encode_record({**record, "mwen": 4})]
    assert stores[-2:] == ["taken=0,exited=1", "commit:port2"]
    assert protocol.encode_records([record, record])[-1] == protocol.eos_id
    with pytest.raises(ProtocolError, match="does not fit"):
        protocol.encode_record({**record, "pc": 128})


def test_a_changed_spec_changes_the_vocabulary(protocol):
    wide = TraceProtocol.from_design(load_design(DEFAULT_SPEC, {"LANES": 8, "WARPS": 4}))
    assert "rval7" in wide.field_by_name and "rval7" not in protocol.field_by_name
    assert wide.vocab_size != protocol.vocab_size and wide != protocol
    assert wide.tokens_per_record > protocol.tokens_per_record
    two_lanes = TraceProtocol.from_design(load_design(DEFAULT_SPEC, {"LANES": 2}))
    assert two_lanes.write_ports == 2 and two_lanes.tokens_per_record == \
        len(two_lanes.record_slots) + 1


def test_save_and_load(protocol, tmp_path):
    protocol.save(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {
        "protocol.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}
    assert TraceProtocol.load(tmp_path) == protocol
    assert TraceProtocol.load(tmp_path).write_ports == 4
    again = tmp_path / "again"
    TraceProtocol.load(tmp_path).save(again)
    for name in ("protocol.json", "tokenizer.json"):
        assert (again / name).read_bytes() == (tmp_path / name).read_bytes()


def test_load_errors(protocol, tmp_path):
    with pytest.raises(ProtocolError, match="not a compiled QwenGPU checkpoint"):
        TraceProtocol.load(tmp_path)
    (tmp_path / "protocol.json").write_text("{nope")
    with pytest.raises(ProtocolError, match="cannot read"):
        TraceProtocol.load(tmp_path)
    data = protocol.to_json()
    (tmp_path / "protocol.json").write_text(json.dumps({**data, "vocab_size": 7}))
    with pytest.raises(ProtocolError, match="vocab_size 7"):
        TraceProtocol.load(tmp_path)
    (tmp_path / "protocol.json").write_text(json.dumps({**data, "fields": [["x"]]}))
    with pytest.raises(ProtocolError, match="malformed"):
        TraceProtocol.load(tmp_path)
    (tmp_path / "protocol.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ProtocolError, match="not a qwengpu-trace-protocol"):
        TraceProtocol.load(tmp_path)


def test_autotokenizer_maps_texts_to_the_same_ids(protocol, tmp_path):
    from transformers import AutoTokenizer

    protocol.save(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path))
    assert len(tokenizer) == protocol.vocab_size
    assert (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id,
            tokenizer.unk_token_id) == (protocol.bos_id, protocol.eos_id, protocol.pad_id,
                                        protocol.unk_id)
    ids = tokenizer(" ".join(protocol.texts), add_special_tokens=True)["input_ids"]
    assert ids == list(range(protocol.vocab_size))
    text = "<bos> set.b0=9e prog[0] <trace> warp.b0=00 pc.b0=7f <eos>"
    ids = tokenizer(text)["input_ids"]
    assert ids == [protocol.token_id(t) for t in text.split()]
    assert tokenizer.decode(ids) == text
    assert tokenizer("warp.b0=99")["input_ids"] == [protocol.unk_id]   # 3 bits: no 0x99
