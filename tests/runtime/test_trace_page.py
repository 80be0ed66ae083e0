"""The trace viewer in a real browser (headless Chromium, tests/browser_helpers.py): pages
that `hdlc run --html` wrote load without script errors, and what they show at a step is
what an independent account of the kernel says — the examples' expected.json (their own
models) for the final memory, and values worked out by hand from the CUDA source and the
launch for steps in between — never values read back from the page's own replay.
divergent_if shows where its lanes split and join again, out_of_bounds its trap, a
-lineinfo kernel its CUDA lines, a decoded trace its tokens; the keyboard steps; a page of
two launches switches between them; a record field the viewer does not know is shown raw.
A model's page (the tokens the model wrote) is tested in test_trace_page_model.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from runtime_helpers import EXAMPLES_DIR, VECTOR_ADD, expected_of, launch_of, sim_result
from test_trace_page_data import lineinfo_launch
from qwengpu.cli import main
from qwengpu.runtime.trace_page import write_trace_page
from qwengpu.runtime.trace_page_data import launch_page_data
from qwengpu.trace.protocol import FieldSpec

DIVERGENT_IF = EXAMPLES_DIR / "divergent_if"
OUT_OF_BOUNDS = EXAMPLES_DIR / "out_of_bounds"


def write_page(tmp_path, *launches, name="trace.html", extra=()) -> str:
    page = tmp_path / name
    code = main(["run", *map(str, launches), "--html", str(page), *extra])
    assert page.exists(), code
    return str(page)


def go_to_step(page, step: int) -> None:
    """Move the slider as a user's drag does: its value, then an input event."""
    page.eval_on_selector("#step", "(slider, value) => { slider.value = value; "
                          "slider.dispatchEvent(new Event('input', {bubbles: true})); }",
                          str(step))


def memory_shown(page, region: dict) -> list[int]:
    return [int(page.text_content(f'#memory td[data-name="{region["name"]}[{index}]"]'))
            for index in range(region["words"])]


def buffers_shown(page, launch) -> dict[str, list[int]]:
    return {region.name: memory_shown(page, {"name": region.name, "words": region.words})
            for region in launch.regions if region.kind == "buffer"}


def register_shown(page, warp: int, lane: int, name: str) -> int:
    return int(page.text_content(f'#registers td[data-cell="{warp}.{lane}.{name}"]'))


@pytest.mark.parametrize("example", ["vector_add", "divergent_if", "multi_block",
                                     "serial_sum", "device_calls", "matrix_add_2d", "grid_3d"])
def test_the_last_step_shows_the_expected_buffers(example, tmp_path, open_page):
    folder = EXAMPLES_DIR / example
    page = open_page(write_page(tmp_path, folder / "launch.json"))
    launch = launch_of(folder)
    records = len(sim_result(folder).records)
    assert page.get_attribute("#step", "max") == str(records)
    assert buffers_shown(page, launch) == json.loads(
        (folder / "launch.json").read_text())["buffers"]        # step 0: the launch as given
    go_to_step(page, records)
    assert page.text_content("#step-label").startswith(f"step {records} of {records}")
    assert buffers_shown(page, launch) == expected_of(folder)["buffers"]


def test_steps_in_between_show_the_hand_worked_registers_and_memory(tmp_path, open_page):
    """out_of_bounds (p at byte 0, idx = 1000, four threads t): ldp p; ldp idx; t = tid;
    t * 4; p + t * 4; store p[t] = t; idx * 4; &p[idx + t]; 7; the store that traps.  Its
    one warp issues one record a pc, so step N has run pcs 0 .. N-1.  Which register each
    pc writes is the program's (its instructions), not the trace's."""
    page = open_page(write_page(tmp_path, OUT_OF_BOUNDS / "launch.json"))
    destination = [f"r{instruction.d}" for instruction in launch_of(OUT_OF_BOUNDS).instructions]
    p = {"name": "p", "words": 4}
    go_to_step(page, 5)
    for lane in range(4):
        assert register_shown(page, 0, lane, destination[0]) == 0           # p
        assert register_shown(page, 0, lane, destination[1]) == 1000        # idx
        assert register_shown(page, 0, lane, destination[2]) == lane        # t
        assert register_shown(page, 0, lane, destination[4]) == 4 * lane    # p + 4t
    assert memory_shown(page, p) == [0, 0, 0, 0]
    go_to_step(page, 6)
    assert memory_shown(page, p) == [0, 1, 2, 3]
    assert page.locator("#memory td.changed").count() == 4
    go_to_step(page, 8)
    for lane in range(4):
        assert register_shown(page, 0, lane, destination[7]) == 4000 + 4 * lane
    cell = page.locator(f'#registers td[data-cell="0.2.{destination[7]}"]')
    assert "changed" in cell.get_attribute("class")


def test_divergent_if_shows_the_split_and_the_join(tmp_path, open_page):
    """Warp 0 holds x = 5, 8, -3, 0 (the launch's `in`): `if (x > 0)` parts lanes 0 1 (x > 0)
    from lanes 2 3, which wait at the branch's target while 2 3 run the else path; all four
    run together again at the last store.  The records are found in the interpreter's trace
    by pc; the lanes come from x."""
    page = open_page(write_page(tmp_path, DIVERGENT_IF / "launch.json"))
    records = sim_result(DIVERGENT_IF).records
    launch = launch_of(DIVERGENT_IF)
    warp0 = [index for index, record in enumerate(records) if record["warp"] == 0]
    split = next(index for index in warp0 if records[index]["taken"] not in (0, 15))
    target = launch.instructions[records[split]["pc"]].imm
    join = next(index for index in warp0 if index > split and records[index]["active"] == 15)
    assert page.locator(f'[data-mark="split"][data-record="{split}"]').count() == 1
    assert page.locator(f'[data-mark="join"][data-record="{join}"]').count() == 1
    after = next(index for index in warp0 if index > split)         # lanes 2 3 run alone
    for lane, state in enumerate(["waiting", "waiting", "exec", "exec"]):
        cell = page.locator(f'rect.cell[data-record="{after}"][data-warp="0"][data-lane="{lane}"]')
        assert cell.get_attribute("class") == f"cell {state}"
    go_to_step(page, split + 1)
    pc = records[split]["pc"]
    assert page.text_content("#divergence-note") == (
        f"split: lanes 0 1 take the branch to {target}, lanes 2 3 go on to {pc + 1}; they "
        "wait for each other from here")
    go_to_step(page, after + 1)
    assert page.text_content('#registers tr[data-thread="0.0"] td.state') == "waiting"
    last_pc = page.locator('#registers tr[data-thread="0.0"] td').nth(3)   # the branch's
    assert last_pc.text_content() == str(records[split]["pc"])
    assert page.text_content('#registers tr[data-thread="0.2"] td.state') == "exec"
    # lanes 0 1 then compute x & 1 (the inner if's test) while lanes 2 3 wait: those keep
    # the register as it was
    masked = next(index for index in warp0 if index > split and records[index]["active"] == 3
                  and records[index]["rwen"])
    register = f"r{launch.instructions[records[masked]['pc']].d}"
    go_to_step(page, masked)
    waiting = [register_shown(page, 0, lane, register) for lane in (2, 3)]
    go_to_step(page, masked + 1)
    assert [register_shown(page, 0, lane, register) for lane in range(4)] == [
        5 & 1, 8 & 1, *waiting]
    go_to_step(page, join + 1)
    note = page.text_content("#divergence-note")
    assert note.startswith(f"join: lanes 0 1 2 3 run together again at pc "
                           f"{records[join]['pc']}")
    # the first store of the launch: lane 1 (x = 8, even) writes pos[1] = 8 >> 1, nothing else
    first_store = next(index for index, record in enumerate(records) if record["mwen"])
    go_to_step(page, first_store + 1)
    given = json.loads((DIVERGENT_IF / "launch.json").read_text())["buffers"]
    assert buffers_shown(page, launch) == {**given, "pos": [1111, 4] + [1111] * 6}
    assert page.locator("#memory td.changed").get_attribute("data-name") == "pos[1]"


def test_the_trap_is_marked(tmp_path, open_page):
    """out_of_bounds stores through p[1000 + t]: the address trap of its expected.json, at
    its last record, after p[t] = t."""
    assert expected_of(OUT_OF_BOUNDS) == {"trap": "address"}
    page = open_page(write_page(tmp_path, OUT_OF_BOUNDS / "launch.json"))
    last = len(sim_result(OUT_OF_BOUNDS).records) - 1
    assert page.is_visible("#trap-banner")
    assert "address out of range" in page.text_content("#trap-banner")
    assert page.locator('[data-mark="trap"]').count() == 1
    assert page.get_attribute('[data-mark="trap"]', "data-record") == str(last)
    go_to_step(page, last + 1)
    assert page.text_content("#record-trap").startswith("TRAP (lane 0): address out of range")
    assert page.text_content("#record-fields tr.absent").startswith(
        "absent from this record (read 0): rd, rval0, rval1")       # a trap writes nothing
    assert memory_shown(page, {"name": "p", "words": 4}) == [0, 1, 2, 3]


def test_the_keyboard_steps(tmp_path, open_page):
    page = open_page(write_page(tmp_path, VECTOR_ADD))
    count = len(sim_result(VECTOR_ADD.parent).records)
    label = lambda: page.text_content("#step-label")                # noqa: E731
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("j")
    assert label().startswith(f"step 3 of {count} (after record #2)")
    page.keyboard.press("k")
    assert label().startswith("step 2 of")
    page.click("#next")
    page.click("#prev")
    page.click("#prev")
    assert label().startswith("step 1 of")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("PageDown")
    assert label().startswith("step 12 of") and page.input_value("#step") == "12"
    page.keyboard.press("End")
    assert label().startswith(f"step {count} of")
    page.focus("#step")                  # on the slider itself a key moves one step, not two
    page.keyboard.press("ArrowLeft")
    assert label().startswith(f"step {count - 1} of")
    page.keyboard.press("Home")
    assert label().startswith("step 0 of") and "before the first record" in label()


def test_a_page_of_two_launches_switches_between_them(tmp_path, open_page):
    serial_mad = EXAMPLES_DIR / "serial_mad"
    page = open_page(write_page(tmp_path, VECTOR_ADD, serial_mad / "launch.json"))
    assert page.is_visible("#launch-choice")
    assert page.locator("#launch-choice option").all_text_contents() == [
        str(VECTOR_ADD), str(serial_mad / "launch.json")]
    page.select_option("#launch-choice", "1")
    assert "kernel serial_mad" in page.text_content("#summary")
    records = len(sim_result(serial_mad).records)
    assert page.get_attribute("#step", "max") == str(records)
    page.keyboard.press("End")
    assert buffers_shown(page, launch_of(serial_mad)) == expected_of(serial_mad)["buffers"]


def test_the_cuda_line_of_each_record(tmp_path, open_page):
    page = open_page(write_page(tmp_path, lineinfo_launch(tmp_path)))
    records = sim_result(DIVERGENT_IF).records
    last_store = max(index for index, record in enumerate(records) if record["mwen"])
    go_to_step(page, last_store + 1)
    assert page.text_content("#record-cuda") == "CUDA kernel.cu:20: path[t] = p * 10 + t;"
    assert page.text_content("#record-ptx").startswith("PTX line ")
    assert page.text_content("#record-ptx").endswith("st.global.u32 [%rd17], %r12;")


def test_a_decoded_trace_shows_its_tokens(tmp_path, open_page, protocol):
    """vector_add's record 68 is 31 tokens (docs/trace.md's worked example)."""
    ids = protocol.encode_records(sim_result(VECTOR_ADD.parent).records)
    tokens = tmp_path / "ids.json"
    tokens.write_text(json.dumps(ids))
    page_file = tmp_path / "decoded.html"
    assert main(["decode", str(VECTOR_ADD), "--tokens", str(tokens), "--html",
                 str(page_file)]) == 0
    page = open_page(page_file)
    go_to_step(page, 69)
    chips = page.locator("#record-tokens .token").all_text_contents()
    assert len(chips) == 31 and chips[:2] == ["warp.b0=00", "pc.b0=11"]
    assert chips[4:10] == ["rwen=0,pwen=0", "mwen.b0=0f", "maddr0.b0=20", "maddr1.b0=21", "maddr2.b0=22", "maddr3.b0=23"]
    assert chips[-1] == "commit:port3"


def test_a_record_field_the_viewer_does_not_know_is_shown_raw(tmp_path, open_page, protocol):
    """A machine grown a `barrier` field (5 bits): the record's table shows its value raw."""
    launch = launch_of(VECTOR_ADD.parent)
    records = [dict(record, barrier=(index * 3) % 32)
               for index, record in enumerate(sim_result(VECTOR_ADD.parent).records)]
    grown = SimpleNamespace(fields=list(protocol.fields) + [FieldSpec("barrier", 5)])
    page_file = tmp_path / "grown.html"
    write_trace_page(page_file, [launch_page_data(
        launch, SimpleNamespace(records=records, trap=None), grown, "grown", "sim")])
    page = open_page(page_file)
    go_to_step(page, 11)                                  # record 10: barrier = 30
    row = page.locator('#record-fields tr[data-field="barrier"]')
    assert row.get_attribute("class") == "raw"
    assert row.locator("td").all_text_contents() == [
        "barrier", "30", "0x1e", "not interpreted by this viewer: shown raw"]
    assert buffers_shown(page, launch) == {name: values for name, values in json.loads(
        VECTOR_ADD.read_text())["buffers"].items()}      # step 11: no store yet


def test_clicking_the_timeline_selects_a_record(tmp_path, open_page):
    page = open_page(write_page(tmp_path, VECTOR_ADD))
    cell = page.locator('rect.cell[data-record="40"][data-lane="0"]')
    cell.click()
    assert page.text_content("#step-label").startswith("step 41 of")
    assert page.text_content("#record-head").startswith("record #40 ")


def test_unwritten_registers_are_grey_and_other_words_are_shown(tmp_path, open_page):
    """out_of_bounds with idx = 10: p[10 + t] = 7 lands on words 10..13, in no buffer (p is
    words 0..3), so the memory shows them as `mem[10]` .. `mem[13]`."""
    launch = json.loads((OUT_OF_BOUNDS / "launch.json").read_text())
    launch["args"] = ["p", 10]
    launch["source"] = str(OUT_OF_BOUNDS / "kernel.ptx")
    path = tmp_path / "in_range.json"
    path.write_text(json.dumps(launch))
    page = open_page(write_page(tmp_path, path))
    registers = page.locator("#registers td[data-cell]")
    assert registers.count() == 4 * (15 + 7)
    assert page.locator("#registers td.unwritten").count() == registers.count()   # step 0
    go_to_step(page, 1)               # pc 0 wrote one register of each lane
    assert page.locator("#registers td.unwritten").count() == registers.count() - 4
    assert page.locator("#registers td.changed").count() == 4
    page.keyboard.press("End")
    assert memory_shown(page, {"name": "p", "words": 4}) == [0, 1, 2, 3]
    assert [int(page.text_content(f'#memory td[data-name="mem[{word}]"]'))
            for word in range(10, 14)] == [7, 7, 7, 7]
    assert page.locator('#memory td[data-name="mem[14]"]').count() == 0


def test_a_launch_of_two_dimensions_names_blocks_and_threads_by_coordinates(tmp_path,
                                                                           open_page):
    """matrix_add_2d: 2 x 2 blocks of 4 x 2 threads; warp 7's lane 3 is the last thread,
    (3, 1) of block (1, 1) (threads x fastest, 8 a block)."""
    page = open_page(write_page(tmp_path, EXAMPLES_DIR / "matrix_add_2d" / "launch.json"))
    assert "grid 2x2 x block 4x2" in page.text_content("#summary")
    assert page.text_content('#registers tr[data-thread="7.3"] td') == "b(1,1).t(3,1)"
    assert page.text_content('#registers tr[data-thread="2.1"] td') == "b(1,0).t(1,0)"
