"""The trace viewer: a self-contained HTML page of one or more launches (`hdlc run ...
--html FILE`, `hdlc decode ... --html FILE`).

    html = trace_page_html([launch_page_data(launch, result, protocol, name, "sim")])
    write_trace_page("out/trace.html", entries)

The page is one file with nothing to fetch: `trace_page.html` (the skeleton),
`trace_page.css` and `trace_page.js` (package data beside this module) are put together
with the launches' data (`qwengpu.runtime.trace_page_data`) as JSON in a
`<script type="application/json">` element.  The script replays the records' writes to show
the registers and memory at any step (docs/trace.md, "The trace viewer"); several launches
share one page, with a chooser.  The output depends only on the data: the same launches give
the same bytes.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from typing import Sequence

from qwengpu.errors import write_output

PAGE_FORMAT = "qwengpu-trace-page"
PAGE_VERSION = 1
_MARKERS = re.compile(r"/\*TRACE_PAGE_(?:CSS|JS)\*/|TRACE_PAGE_(?:TITLE|DATA)")


def _asset(name: str) -> str:
    return resources.files("qwengpu.runtime").joinpath(name).read_text(encoding="utf-8")


def _script_json(data) -> str:
    """JSON that cannot end the `<script>` element it sits in."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page_title(entries: Sequence[dict]) -> str:
    if len(entries) == 1:
        entry = entries[0]
        kernel = entry.get("kernel")
        return f"QwenGPU trace: {kernel} ({entry['name']})" if kernel else \
            f"QwenGPU trace: {entry['name']}"
    return f"QwenGPU traces: {len(entries)} launches"


def trace_page_html(entries: Sequence[dict]) -> str:
    """The page of these launches' data (each `launch_page_data` or `failed_page_data`)."""
    title = page_title(entries)
    data = {"format": PAGE_FORMAT, "version": PAGE_VERSION, "title": title,
            "launches": list(entries)}
    parts = {"/*TRACE_PAGE_CSS*/": _asset("trace_page.css"),
             "/*TRACE_PAGE_JS*/": _asset("trace_page.js"),
             "TRACE_PAGE_TITLE": html.escape(title), "TRACE_PAGE_DATA": _script_json(data)}
    # one pass over the skeleton, so no inserted text is searched for markers again
    return _MARKERS.sub(lambda match: parts[match.group(0)], _asset("trace_page.html"))


def write_trace_page(path, entries: Sequence[dict]) -> None:
    """Write the page; a path that cannot be written is a `UserError`."""
    write_output(path, trace_page_html(entries), "trace page")
