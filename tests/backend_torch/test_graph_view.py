"""The scheduled layer graph as a page (`backend_torch/graph_view.py`): one row per used
layer, a chip per op in its layer's mixer or MLP cell with what it reads and writes in its
tooltip, and every name HTML-escaped."""

from __future__ import annotations

import html
import re

from compile_helpers import compile_plan
from qwengpu.backend_torch.graph_view import schedule_html


def test_every_op_has_a_chip_in_its_layer():
    schedule = compile_plan("specs/counter.hdl").schedule
    page = schedule_html(schedule)
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    rows = re.findall(r"<tr><td class=layer>(\d+)<br>", page)
    assert [int(row) for row in rows] == list(range(schedule.layers_used))
    for op in schedule.plan.ops:
        assert f">{html.escape(op.name)}" in page, op.name
        assert html.escape(f"{op.label}({', '.join(op.inputs)})") in page
    assert "<script" not in page
