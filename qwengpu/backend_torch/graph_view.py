"""The scheduled layer graph as a self-contained HTML page (`hdlc graph -o FILE.html`).

One row per used layer: the token mixer and the MLP side by side, each with a utilisation bar
(DeltaNet heads, MLP units), the hot entries of the norm ledger, and its ops as coloured
chips by region (scratch, commit, state, step, emission).  A chip's tooltip gives what the op
reads and writes, its cost and its HDL line; a state chip names the element its heads hold.
A bar of residual use (values live at each layer's input) runs down the left.  No scripts,
no external files: it opens anywhere.
"""

from __future__ import annotations

import html

from qwengpu.backend_torch.schedule import Schedule

COLOURS = {"scratch": "#8ecae6", "commit": "#ffb703", "state": "#90be6d", "step": "#cdb4db",
           "emit": "#f28482"}


def _chip(op) -> str:
    cost = f"{op.heads} head(s)" if op.kind != "mlp" else f"{op.units} units"
    label = op.name if op.kind == "mlp" else f"{op.name} [{getattr(op.work, 'element', op.kind)}]"
    tip = (f"{op.label}({', '.join(op.inputs)}) -> {', '.join(op.outputs)}"
           f"\n{op.region}, {cost}" + (f"\n{op.loc}" if op.loc else ""))
    return (f'<span class="chip" style="background:{COLOURS.get(op.region, "#ddd")}" '
            f'title="{html.escape(tip)}">{html.escape(label)}</span>')


def _bar(used: int, total: int) -> str:
    share = 0 if not total else min(100.0, 100.0 * used / total)
    return (f'<div class="bar"><div style="width:{share:.1f}%"></div></div>'
            f'<small>{used} / {total}</small>')


def schedule_html(schedule: Schedule) -> str:
    plan, target = schedule.plan, schedule.target
    types = target.layer_types
    rows = []
    for layer in range(schedule.layers_used):
        mixer = schedule.ops_at(2 * layer)
        mlp = schedule.ops_at(2 * layer + 1)
        live = sum(plan.values[v].size for v in schedule.live_values(2 * layer))
        rows.append(
            f"<tr><td class=layer>{layer}<br><small>{types[layer].split('_')[0]}</small></td>"
            f"<td>{_bar(live, target.hidden_size)}<small> dims, "
            f"{schedule.hot_entries(2 * layer)} hot</small></td>"
            f"<td>{_bar(schedule.heads.get(layer, 0), target.linear_heads)}"
            f"<div>{''.join(_chip(op) for op in mixer)}</div></td>"
            f"<td>{_bar(schedule.layer_units(layer), target.intermediate_size)}"
            f"<div>{''.join(_chip(op) for op in mlp)}</div></td></tr>")
    legend = "".join(f'<span class="chip" style="background:{c}">{r}</span>'
                     for r, c in COLOURS.items())
    title = f"{plan.graph.name} on {target.name}"
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font: 13px system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; width: 100%; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 4px 8px; vertical-align: top; }}
td.layer {{ text-align: center; font-weight: bold; width: 4em; }}
.bar {{ background: #eee; height: 8px; width: 100%; border-radius: 4px; }}
.bar div {{ background: #457b9d; height: 8px; border-radius: 4px; }}
.chip {{ display: inline-block; margin: 2px; padding: 1px 6px; border-radius: 8px;
         font: 11px monospace; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{target.num_layers} layers ({schedule.layers_used} used, the rest exact no-ops); hidden
{target.hidden_size}, intermediate {target.intermediate_size}, {target.linear_heads} DeltaNet
heads per layer. Residual: {schedule.dims} dims allocated, {schedule.peak_live_dims} live at
the peak. {len(plan.ops)} ops, {sum(op.units for op in plan.ops)} MLP units,
{sum(op.heads for op in plan.ops)} DeltaNet heads. Hover a chip for what it reads and writes.</p>
<p>{legend}</p>
<table><tr><th>layer</th><th>residual at input</th><th>token mixer (DeltaNet heads)</th>
<th>MLP (units)</th></tr>
{chr(10).join(rows)}
</table></body></html>
"""
