"""The page of `hdlc graph -o FILE.html` as a file (`backend_torch/graph_view.py`): one
self-contained HTML file (its style and script inline, nothing fetched), the graph's data as
JSON in the page that reads back as `layer_graph`'s, text that cannot end its `<script>`
block early, and the same bytes from the same spec.  In a browser: test_graph_page.py."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from compile_helpers import compile_plan
from qwengpu.backend_torch.graph_data import layer_graph
from qwengpu.backend_torch.graph_view import page_json, schedule_html

ROOT = Path(__file__).resolve().parents[2]


def page_data(page: str) -> dict:
    block = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', page,
                      re.S)
    return json.loads(block.group(1))


def test_the_page_carries_the_graph_as_json():
    schedule = compile_plan("specs/counter.hdl").schedule
    page = schedule_html(schedule)
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert page_data(page) == json.loads(json.dumps(layer_graph(schedule)))
    assert page == schedule_html(compile_plan("specs/counter.hdl").schedule)


def test_the_page_fetches_nothing():
    page = schedule_html(compile_plan("specs/counter.hdl").schedule)
    assert not re.search(r"<script[^>]*\bsrc=|<link\b|@import|url\(|<img\b|<iframe\b", page)
    assert re.findall(r"https?://[^\"' ]*", page) == ["http://www.w3.org/2000/svg"]  # a name
    assert page.count("<script") == 2 and "document.body.dataset.ready" in page


def test_text_in_the_data_cannot_end_its_block():
    data = {"name": "count <= count + 1; </script><b>&amp;"}
    text = page_json(data)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == data
    page = schedule_html(compile_plan("specs/counter.hdl").schedule)
    assert "count <= count + 1;" in json.dumps(page_data(page), ensure_ascii=False)


def test_style_and_script_ship_as_package_data():
    package = ROOT / "qwengpu" / "backend_torch"
    assert (package / "graph_page.js").is_file() and (package / "graph_page.css").is_file()
    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert {"*.js", "*.css"} <= set(shipped["package-data"]["*"])
