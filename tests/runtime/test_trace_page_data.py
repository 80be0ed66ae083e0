"""The trace page's data (qwengpu/runtime/trace_page_data.py) and the page file
(qwengpu/runtime/trace_page.py), without a browser: records travel in the protocol's field
order and a field the viewer does not know travels too; the state writes the page replays;
where divergent_if's lanes split and join, from the kernel's own branches and inputs; the
tokens of each record; the CUDA line of -lineinfo PTX; the page is self-contained and the
same launch gives the same bytes; `hdlc run/decode --html` and their mistakes.  The page's
script is tested in a browser by test_trace_page.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from runtime_helpers import EXAMPLES_DIR, VECTOR_ADD, launch_of, sim_result
from qwengpu.cli import main
from qwengpu.isa import PT, Op
from qwengpu.runtime.trace_page import trace_page_html
from qwengpu.runtime.trace_page_data import (STATE_WRITES, _writes_for, divergence_events,
                                             launch_page_data, program_rows, record_tokens)
from qwengpu.trace.protocol import FieldSpec

DATA = Path(__file__).parent / "data"
DIVERGENT_IF = EXAMPLES_DIR / "divergent_if"


def page_data_of(html: str) -> dict:
    """The JSON the page carries, read back the way its script reads it."""
    found = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', html,
                      re.S)
    return json.loads(found.group(1))


def lineinfo_launch(folder: Path) -> Path:
    """divergent_if from PTX made with -lineinfo, beside its kernel.cu."""
    shutil.copy(DATA / "divergent_if_lineinfo.ptx", folder)
    shutil.copy(DIVERGENT_IF / "kernel.cu", folder)
    launch = json.loads((DIVERGENT_IF / "launch.json").read_text())
    launch["source"] = "divergent_if_lineinfo.ptx"
    path = folder / "launch.json"
    path.write_text(json.dumps(launch))
    return path


def test_records_follow_the_protocols_fields(protocol):
    launch, result = launch_of(VECTOR_ADD.parent), sim_result(VECTOR_ADD.parent)
    data = launch_page_data(launch, result, protocol, "vector_add", "sim")
    names = [field["name"] for field in data["fields"]]
    assert names == [field.name for field in protocol.fields]
    assert data["fields"][names.index("rval2")] == {"name": "rval2", "width": 32,
                                                    "when": "rwen", "when_bit": 2}
    assert len(data["records"]) == len(result.records) == 76
    for row, record in zip(data["records"], result.records):
        assert row == [record[name] for name in names]
    assert data["memory"] == launch.memory
    assert [region["name"] for region in data["regions"]] == ["a", "b", "c"]
    assert data["regions"][2] == {"name": "c", "base": 32, "words": 16, "kind": "buffer"}
    assert len(data["threads"]) == 16 and data["threads"][9] == {
        "warp": 2, "lane": 1, "block": 1, "thread": 1}
    assert data["tokens"] is None and data["trap"] is None


def test_a_field_the_viewer_does_not_know_travels_raw(protocol):
    """A machine that grows a field (here `barrier`, 5 bits, in the protocol, and `extra`
    only in the records): both reach the page with their values."""
    launch = launch_of(VECTOR_ADD.parent)
    records = [dict(record, barrier=index % 32, extra=7)
               for index, record in enumerate(sim_result(VECTOR_ADD.parent).records)]
    grown = SimpleNamespace(fields=list(protocol.fields) + [FieldSpec("barrier", 5)])
    result = SimpleNamespace(records=records, trap=None)
    data = launch_page_data(launch, result, grown, "vector_add", "sim")
    names = [field["name"] for field in data["fields"]]
    assert names[-2:] == ["barrier", "extra"]
    assert data["fields"][-2:] == [{"name": "barrier", "width": 5, "when": None,
                                    "when_bit": None},
                                   {"name": "extra", "width": None, "when": None,
                                    "when_bit": None}]
    assert [row[-2:] for row in data["records"][:3]] == [[0, 7], [1, 7], [2, 7]]


def test_state_writes_need_all_their_fields():
    everything = {"rwen", "rd", "pwen", "pd", "pval", "mwen"} | {
        f"{name}{lane}" for name in ("rval", "maddr", "mval") for lane in range(4)}
    assert _writes_for(everything, 4) == list(STATE_WRITES)
    assert [write["state"] for write in _writes_for(everything - {"mval3"}, 4)] == [
        "registers", "predicates"]
    assert [write["state"] for write in _writes_for(everything - {"pval"}, 4)] == [
        "registers", "memory"]
    assert _writes_for({"rwen", "rd", "rval0"}, 1) == [STATE_WRITES[0]]


def test_divergent_if_splits_at_its_two_ifs_and_joins_at_the_last_store():
    """From the kernel: `if (x > 0)` sends the lanes with x > 0 to the inner `if`, the others
    on; `if (x & 1)` parts the odd from the even; all paths meet at `path[t] = ...`, the
    target of the unconditional branches that end the paths.  x is the launch's `in`."""
    launch = launch_of(DIVERGENT_IF)
    records = sim_result(DIVERGENT_IF).records
    x = json.loads((DIVERGENT_IF / "launch.json").read_text())["buffers"]["in"]
    instructions = launch.instructions
    guarded = [pc for pc, ins in enumerate(instructions) if ins.op == Op.BRA and ins.pg != PT]
    join_pc = max(ins.imm for ins in instructions if ins.op == Op.BRA and ins.pg == PT)
    assert len(guarded) == 2
    events = divergence_events(records, launch)
    found = [(records[index]["warp"], event["kind"], event["pc"], event.get("taken"),
              event.get("stay"), event.get("lanes")) for index, event in enumerate(events)
             if event]

    def lanes(warp, keep):
        return [lane for lane in range(4) if keep(x[4 * warp + lane])]

    positive = {warp: lanes(warp, lambda v: v > 0) for warp in (0, 1)}
    expected = []
    for warp in (0, 1):
        expected.append((warp, "split", guarded[0], positive[warp],
                         lanes(warp, lambda v: v <= 0), None))
    for warp in (0, 1):
        # the inner if branches over its then-part: the even lanes take it
        expected.append((warp, "split", guarded[1], lanes(warp, lambda v: v > 0 and v % 2 == 0),
                         lanes(warp, lambda v: v > 0 and v % 2 == 1), None))
    expected += [(warp, "join", join_pc, None, None, [0, 1, 2, 3]) for warp in (0, 1)]
    assert sorted(found, key=str) == sorted(expected, key=str)
    joins = [index for index, event in enumerate(events) if event and event["kind"] == "join"]
    assert all(records[index]["pc"] == join_pc and records[index]["active"] == 15
               for index in joins)


def test_record_tokens_are_split_where_records_end(protocol):
    records = sim_result(VECTOR_ADD.parent).records
    ids = protocol.encode_records(records)
    per_record, end = record_tokens(ids, protocol)
    assert len(per_record) == len(records) and end == ["<eos>"]
    assert per_record[68][:3] == ["warp.b0=00", "pc.b0=11", "active=f,exec=f"]
    assert per_record[68][-3:] == ["commit:port1", "commit:port2", "commit:port3"]
    assert len(per_record[68]) == 31 and len(per_record[40]) == 25    # docs/trace.md
    assert sum(map(len, per_record)) + 1 == len(ids)
    cut, rest = record_tokens(ids[:len(protocol.encode_records(records[:3])) - 1 + 4],
                              protocol)
    assert len(cut) == 3 and rest == per_record[3][:4]


def test_the_cuda_line_of_lineinfo_ptx(tmp_path):
    from qwengpu.runtime.launch import load_launch

    launch = load_launch(str(lineinfo_launch(tmp_path)))
    rows = program_rows(launch)
    last_store = max(row["pc"] for row in rows if row["instruction"].startswith("st "))
    assert rows[last_store]["cuda"] == "kernel.cu:20"
    assert rows[last_store]["cuda_text"] == "path[t] = p * 10 + t;"     # kernel.cu line 20
    assert rows[last_store]["ptx"] == "st.global.u32 [%rd17], %r12;"
    assert rows[-1]["cuda"] == "kernel.cu:21" and rows[-1]["cuda_text"] == "}"
    # the checked-in example PTX is nvcc's with -lineinfo too: the same CUDA lines
    checked_in = program_rows(launch_of(DIVERGENT_IF))
    assert [row["cuda"] for row in checked_in] == [row["cuda"] for row in rows]


def run_cli(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_run_html_writes_one_self_contained_page(tmp_path, capsys, protocol):
    page = tmp_path / "new" / "folder" / "trace.html"
    code, out, err = run_cli(capsys, "run", str(VECTOR_ADD), "--html", str(page))
    assert code == 0 and out.startswith("a = [") and f"{page}: trace page of 1 launch" in err
    html = page.read_text()
    assert not re.search(r'<(script|link|img)[^>]* (src|href)=', html)   # nothing to fetch
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    data = page_data_of(html)
    assert [entry["name"] for entry in data["launches"]] == [str(VECTOR_ADD)]
    assert data["launches"][0]["records"] == [
        [record[field.name] for field in protocol.fields]
        for record in sim_result(VECTOR_ADD.parent).records]
    code, out, err = run_cli(capsys, "run", str(VECTOR_ADD), "--json", "--html",
                             str(tmp_path / "json.html"))
    assert code == 0 and json.loads(out)["records"] == 76        # stdout: the JSON alone
    assert (tmp_path / "json.html").read_bytes() == page.read_bytes()
    again = tmp_path / "again.html"
    assert run_cli(capsys, "run", str(VECTOR_ADD), "--html", str(again))[0] == 0
    assert again.read_bytes() == page.read_bytes()


def test_the_pages_data_cannot_end_its_script():
    entry = {"name": "</script><script>alert(1)</script> & <!--", "backend": "sim",
             "error": "x"}
    html = trace_page_html([entry])
    assert html.count("</script>") == 2          # the data's and the script's own
    assert page_data_of(html)["launches"] == [entry]


def test_several_launches_share_a_page_and_a_failed_one_shows_its_error(tmp_path, capsys):
    """serial_mad ends within 20 records, vector_add does not: its entry is its error."""
    serial_mad = EXAMPLES_DIR / "serial_mad" / "launch.json"
    page = tmp_path / "both.html"
    code, out, err = run_cli(capsys, "run", str(serial_mad), str(VECTOR_ADD), "--max-records",
                             "20", "--html", str(page))
    assert code == 1 and "trace page of 2 launches" in err
    first, second = page_data_of(page.read_text())["launches"]
    assert first["name"] == str(serial_mad) and len(first["records"]) == 13
    assert second == {"name": str(VECTOR_ADD), "backend": "sim (the reference interpreter)",
                      "error": second["error"]}
    assert "did not finish within 20 records" in second["error"]
    alone = tmp_path / "none.html"
    code, _, err = run_cli(capsys, "run", str(VECTOR_ADD), "--max-records", "20", "--html",
                           str(alone))
    assert code == 1 and not alone.exists() and "did not finish" in err


def test_a_trap_is_in_the_page_and_the_run_still_exits_1(tmp_path, capsys):
    page = tmp_path / "trap.html"
    code, _, err = run_cli(capsys, "run", str(EXAMPLES_DIR / "out_of_bounds" / "launch.json"),
                           "--html", str(page))
    assert code == 1 and "trap: address out of range" in err
    entry, = page_data_of(page.read_text())["launches"]
    assert entry["trap"]["kind"] == "address out of range" and entry["trap"]["record"] == 9


def test_an_html_path_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    target = blocker / "trace.html"
    for argv in (["run", str(VECTOR_ADD), "--html", str(target)],
                 ["run", str(VECTOR_ADD), "--backend", "model", "--model",
                  str(tmp_path / "no-model"), "--html", str(target)],
                 ["decode", str(VECTOR_ADD), "--tokens", str(tmp_path / "no-ids.json"),
                  "--html", str(target)]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 1 and out == "", argv
        assert f"{target}: cannot write the trace page: {blocker} is a file" in err, err
        assert "Traceback" not in err


def test_decode_html_shows_the_tokens_of_each_record(tmp_path, capsys, protocol):
    records = sim_result(VECTOR_ADD.parent).records
    ids = protocol.encode_records(records)
    tokens = tmp_path / "ids.json"
    tokens.write_text(json.dumps(ids))
    page = tmp_path / "decoded.html"
    code, _, err = run_cli(capsys, "decode", str(VECTOR_ADD), "--tokens", str(tokens),
                           "--html", str(page))
    assert code == 0, err
    entry, = page_data_of(page.read_text())["launches"]
    assert entry["backend"] == f"ids from {tokens}"
    assert entry["tokens"] == [[protocol.describe(token).text
                                for token in protocol.encode_record(record)]
                               for record in records]
    assert entry["end_tokens"] == ["<eos>"]
