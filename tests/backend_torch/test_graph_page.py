"""The page of `hdlc graph -o FILE.html` in a real browser (headless Chromium, through
tests/browser_helpers.py): it draws without a script error, a chip and an edge for every op
and every read of the schedule, a click or a hover lights the chip's inputs, outputs and
whole cone to the state it reads and writes (as tests/graph_page_helpers.py computes it from
the schedule), the search box finds HDL names, and the whole machine's page names every chip
from the HDL and draws every edge."""

from __future__ import annotations

import re

import pytest

from compile_helpers import TINY_SPEC, compile_plan, whole_machine_plan
from graph_page_helpers import chip_graph, cone
from qwengpu.backend_torch.graph_view import schedule_html

pytestmark = pytest.mark.heavy     # one worker runs the heavy files in turn: tests/workers.py

LIT = """() => {
  const of = name => Array.from(document.querySelectorAll('.chip.' + name))
                          .map(e => Number(e.dataset.chip)).sort((a, b) => a - b);
  return {sel: of('sel'), back: of('back'), fwd: of('fwd'), in: of('in'), out: of('out'),
          edges: document.querySelectorAll('path.lit-back, path.lit-fwd').length};
}"""
DRAWN_EDGES = """() => Array.from(document.querySelectorAll('#edges path.e'))
                     .map(e => [Number(e.dataset.from), Number(e.dataset.to)])"""


def write_page(schedule, folder, name: str):
    path = folder / f"{name}.html"
    path.write_text(schedule_html(schedule), encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=["specs/counter.hdl", TINY_SPEC],
                ids=["counter", "tiny_carried"])
def small(request, tmp_path_factory):
    schedule = compile_plan(request.param).schedule
    return schedule, write_page(schedule, tmp_path_factory.mktemp("pages"), "small")


def opened(open_page, path):
    page = open_page(path)
    page.wait_for_function("document.body.dataset.ready === '1'")
    return page


def expected_lighting(graph, chip: int) -> dict:
    back, forward = cone(graph, chip, forward=False), cone(graph, chip, forward=True)
    return {"sel": [chip], "back": sorted(back), "fwd": sorted(forward),
            "in": sorted(graph.predecessors(chip)), "out": sorted(graph.successors(chip))}


def test_the_page_draws_a_chip_per_op_and_an_edge_per_read(small, open_page):
    schedule, path = small
    page = opened(open_page, path)
    graph = chip_graph(schedule.plan)
    chips = page.eval_on_selector_all(".chip[data-chip]", "els => els.map(e => e.dataset.chip)")
    assert sorted(map(int, chips)) == sorted(graph.nodes)
    assert sorted(map(tuple, page.evaluate(DRAWN_EDGES))) == sorted(graph.edges)


def test_a_click_lights_the_cone_and_a_second_click_lets_go(small, open_page):
    schedule, path = small
    page = opened(open_page, path)
    graph = chip_graph(schedule.plan)
    for chip in sorted(graph.nodes):
        page.click(f'.chip[data-chip="{chip}"]')
        lit = page.evaluate(LIT)
        expected = expected_lighting(graph, chip)
        assert {key: lit[key] for key in expected} == expected, chip
        assert (lit["edges"] > 0) == bool(expected["back"] or expected["fwd"])
        page.click(f'.chip[data-chip="{chip}"]')
        assert page.evaluate(LIT)["sel"] == []


def test_hovering_lights_the_chip_until_the_pointer_leaves(small, open_page):
    schedule, path = small
    page = opened(open_page, path)
    graph = chip_graph(schedule.plan)
    chip = next(c for c in graph.nodes if graph.nodes[c]["kind"] == "memory")
    page.hover(f'.chip[data-chip="{chip}"]')
    lit = page.evaluate(LIT)
    assert lit["sel"] == [chip] and lit["back"] == sorted(cone(graph, chip, False))
    assert page.inner_text("#detail h2") == page.inner_text(f'.chip[data-chip="{chip}"]')
    page.hover("header h1")
    assert page.evaluate(LIT)["sel"] == []


def test_the_search_box_finds_an_hdl_name(open_page, tmp_path):
    schedule = compile_plan("specs/counter.hdl").schedule
    page = opened(open_page, write_page(schedule, tmp_path, "counter"))
    first = len(schedule.plan.embedding)
    # `count <= count + 1;` is line 16: its adder and its write
    expected = sorted(first + k for k, op in enumerate(schedule.plan.ops)
                      if op.loc is not None and op.loc.line == 16)
    page.fill("#search", "count + 1")
    found = page.eval_on_selector_all(".chip.match", "els => els.map(e => +e.dataset.chip)")
    assert sorted(found) == expected and len(expected) == 5
    assert page.inner_text("#search-count") == "5 chips"
    page.press("#search", "Enter")
    assert page.evaluate(LIT)["sel"] == [found[0]]
    page.fill("#search", "")
    assert page.eval_on_selector_all(".chip.match", "els => els.length") == 0


@pytest.fixture(scope="module")
def whole_machine(tmp_path_factory):
    schedule = whole_machine_plan().schedule
    return schedule, write_page(schedule, tmp_path_factory.mktemp("whole"), "qwengpu")


def test_the_whole_machine_names_every_chip_and_draws_every_edge(whole_machine, open_page):
    schedule, path = whole_machine
    page = opened(open_page, path)
    graph = chip_graph(schedule.plan)
    texts = page.eval_on_selector_all(".chip[data-chip]",
                                      "els => els.map(e => e.textContent + '\\n' + e.title)")
    assert len(texts) == len(graph.nodes)
    anonymous = [text for text in texts if re.search(r"%\d", text)]
    assert anonymous == []
    assert not re.search(r"\b[cs]%\d", page.inner_text("body"))
    assert sorted(map(tuple, page.evaluate(DRAWN_EDGES))) == sorted(graph.edges)
    head = max(graph.nodes)
    page.click(f'.chip[data-chip="{head}"]')
    lit = page.evaluate(LIT)
    assert lit["back"] == sorted(cone(graph, head, forward=False)) and lit["fwd"] == []
