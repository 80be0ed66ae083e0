"""The scheduled layer graph as one self-contained HTML page (`hdlc graph -o FILE.html`).

The page is a skeleton, its style (`graph_page.css`) and its script (`graph_page.js`), both
package data put inline, and the graph itself as JSON (`graph_data.layer_graph`) in a
`<script type="application/json" id="graph-data">` block that the script draws from and
tests read.  Nothing is fetched: no network, no external scripts or fonts.  Text in the
JSON is escaped so that no `<`, `>` or `&` can end the block early; the same schedule gives
the same bytes.
"""

from __future__ import annotations

import html
import json
from functools import lru_cache
from importlib.resources import files

from qwengpu.backend_torch.graph_data import layer_graph
from qwengpu.backend_torch.schedule import Schedule

SKELETON = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>
@STYLE@</style></head>
<body>
<header>
<h1>@TITLE@</h1>
<p>@SUMMARY@</p>
<div class="controls">
<input id="search" type="search" placeholder="find an HDL name, text or file:line"
 autocomplete="off">
<span id="search-count"></span>
<label><input id="show-edges" type="checkbox" checked> edges</label>
<label><input id="show-critical" type="checkbox" checked> critical path (@CRITICAL@ ops)</label>
<span class="legend">@LEGEND@</span>
</div>
<p>Hover a chip to light what it reads (blue) and what reads it (orange), back to the state
it reads and forward to the state it writes; click to keep it lit.</p>
</header>
<noscript><p>This page draws the graph with JavaScript; <code>hdlc graph SPEC</code> prints
it as text.</p></noscript>
<div class="layout"><main id="graph" class="show-critical"><svg id="edges"
xmlns="http://www.w3.org/2000/svg"></svg><div id="rows"></div></main>
<aside id="detail"><p>Hover or click a chip.</p></aside></div>
<script type="application/json" id="graph-data">@DATA@</script>
<script>
@SCRIPT@</script>
</body></html>
"""

REGIONS = ("embedding", "scratch", "commit", "state", "step", "emit", "lm_head")


@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    return files("qwengpu.backend_torch").joinpath(name).read_text(encoding="utf-8")


def page_json(data: dict) -> str:
    """`data` as JSON that can sit inside a `<script>` block (no `<`, `>` or `&`)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _summary(data: dict) -> str:
    s = data["summary"]
    used = "all used" if s["layers_used"] == s["num_layers"] else \
        f"{s['layers_used']} used, the rest exact no-ops"
    return (f"{s['num_layers']} layers ({used}); "
            f"hidden {s['hidden']}, intermediate {s['intermediate']}, {s['heads']} DeltaNet "
            f"heads per layer. Residual: {s['dims']} dims allocated, {s['peak_live_dims']} "
            f"live at the peak. {s['ops']} ops, {s['units']} MLP units, {s['op_heads']} "
            f"DeltaNet heads, {len(data['edges'])} edges.")


def schedule_html(schedule: Schedule) -> str:
    """The page (see the module doc)."""
    data = layer_graph(schedule)
    critical_ops = sum(1 for c in data["critical"]
                       if data["chips"][c]["kind"] not in ("embedding", "lm_head"))
    legend = "".join(f'<span class="chip r-{region}">{region}</span>' for region in REGIONS)
    parts = {"@TITLE@": html.escape(data["title"]), "@SUMMARY@": html.escape(_summary(data)),
             "@CRITICAL@": str(critical_ops), "@LEGEND@": legend,
             "@STYLE@": _asset("graph_page.css"), "@SCRIPT@": _asset("graph_page.js"),
             "@DATA@": page_json(data)}
    page = SKELETON
    for key in ("@TITLE@", "@SUMMARY@", "@CRITICAL@", "@LEGEND@", "@STYLE@", "@SCRIPT@"):
        page = page.replace(key, parts[key])
    return page.replace("@DATA@", parts["@DATA@"])
