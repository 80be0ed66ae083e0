/* The page `hdlc graph -o FILE.html` writes (graph_view.py puts it inline): it draws the
   scheduled layer graph from the JSON in #graph-data (graph_data.py says what each field is).

   Rows top to bottom: the embedding, each used layer (its residual dims, MLP units and
   DeltaNet heads as bars; its mixer's and its MLP's ops as chips), the lm_head.  An SVG
   under the chips draws every edge.  Hovering a chip lights it (click pins it, a click
   elsewhere or Escape lets go): the chips it reads from and the chips that read it, and its
   whole cone back to the state it reads and forward to the state it writes (a cone stops at
   a chip holding DeltaNet state: the scratch or a memory); the panel on the right says what
   the chip is.  The search box marks the chips whose HDL name, text or place holds what is
   typed; Enter steps through them.  When it is drawn, `document.body.dataset.ready` is "1".
*/
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("graph-data").textContent);
  const chips = data.chips, values = data.values, edges = data.edges;
  const graph = document.getElementById("graph");
  const rows = document.getElementById("rows");
  const svg = document.getElementById("edges");
  const detail = document.getElementById("detail");
  const search = document.getElementById("search");
  const searchCount = document.getElementById("search-count");

  const into = chips.map(() => []), outOf = chips.map(() => []);   // [chip, edge]
  edges.forEach(([from, to], k) => { outOf[from].push([to, k]); into[to].push([from, k]); });
  const writerOf = {};
  chips.forEach(chip => chip.writes.forEach(v => { writerOf[v] = chip.id; }));
  const readersOf = values.map(() => []);
  chips.forEach(chip => chip.reads.forEach(v => readersOf[v].push(chip.id)));
  const onCritical = new Set(data.critical);
  const criticalEdges = new Set();
  for (let i = 1; i < data.critical.length; i++) {
    const pair = outOf[data.critical[i - 1]].find(([to]) => to === data.critical[i]);
    if (pair) criticalEdges.add(pair[1]);
  }

  function escape(text) {
    return String(text).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;",
                                                  '"': "&quot;", "'": "&#39;"}[c]));
  }

  function plural(count, noun) {
    return `${count} ${noun}${count === 1 ? "" : "s"}`;
  }

  function chipTitle(chip) {
    return [chip.name, chip.role, chip.loc, chip.text !== chip.name ? chip.text : ""]
      .filter(Boolean).join("\n");
  }

  function chipHtml(id) {
    const chip = chips[id];
    const crit = onCritical.has(id) ? " crit" : "";
    // the loop iteration at the end of a name (` [lane=2]`) is never cut off
    const [, main, tail] = chip.name.match(/^(.*?)( \[[^\]]*\])?$/);
    return `<span class="chip r-${chip.region} k-${chip.kind}${crit}" data-chip="${id}" ` +
           `title="${escape(chipTitle(chip))}"><span class="main">${escape(main)}</span>` +
           (tail ? `<span class="tail">${escape(tail)}</span>` : "") + "</span>";
  }

  function bar(label, used, size) {
    const share = size ? Math.min(100, Math.round(100 * used / size)) : 0;
    const over = size && used > size ? " over" : "";
    return `<div class="bar" data-bar="${label}"><div class="fill${over}" ` +
           `style="width:${share}%"></div></div>` +
           `<div class="barlabel">${label} ${used} / ${size}</div>`;
  }

  function sideHtml(layer) {
    const info = data.layers[layer];
    const heads = info.head_cap ? bar("DeltaNet heads", info.heads, info.head_cap)
      : `<div class="barlabel">full attention: no DeltaNet heads</div>`;
    const anchor = info.anchor ? ` (+${info.anchor} norm anchor)` : "";
    return `<div class="lname">layer ${layer}</div>` +
           `<div class="ltype">${escape(info.type.replace("_", " "))}</div>` +
           bar("residual dims", info.dims, info.hidden) +
           bar("MLP units", info.units, info.intermediate) + heads +
           `<div class="ledger">${info.hot} hot entries${anchor}; ` +
           `${plural(info.erased, "value")} erased by ${plural(info.erase_units, "unit")}` +
           `</div>`;
  }

  function bandHtml(band) {
    return `<div class="band ${band.place}" data-layer="${band.layer}" ` +
           `data-place="${band.place}"><span class="bandlabel">${band.place}</span>` +
           band.chips.map(chipHtml).join("") + "</div>";
  }

  function drawRows() {
    const byLayer = new Map();
    data.bands.forEach(band => {
      if (!byLayer.has(band.layer)) byLayer.set(band.layer, []);
      byLayer.get(band.layer).push(band);
    });
    const html = [];
    for (const [layer, bands] of byLayer) {
      const side = layer < 0 ? `<div class="lname">embedding</div>` +
                               `<div class="ltype">the token's own fields</div>`
        : layer >= data.layers.length ? `<div class="lname">lm_head</div>` +
                                        `<div class="ltype">the next token</div>`
        : sideHtml(layer);
      html.push(`<section class="layer" data-layer="${layer}"><div class="side">${side}` +
                `</div><div class="bands">${bands.map(bandHtml).join("")}</div></section>`);
    }
    rows.innerHTML = html.join("");
  }

  let chipElements = [];
  let edgeElements = [];

  function drawEdges() {
    const origin = rows.getBoundingClientRect();
    const boxes = chipElements.map(element => element.getBoundingClientRect());
    svg.setAttribute("width", rows.scrollWidth);
    svg.setAttribute("height", rows.scrollHeight);
    const paths = edges.map(([from, to], k) => {
      const a = boxes[from], b = boxes[to];
      const x1 = a.left + a.width / 2 - origin.left, y1 = a.bottom - origin.top;
      const x2 = b.left + b.width / 2 - origin.left, y2 = b.top - origin.top;
      const bend = Math.max(12, Math.min(90, (y2 - y1) / 2));
      const crit = criticalEdges.has(k) ? " crit" : "";
      return `<path class="e${crit}" data-from="${from}" data-to="${to}" d="M${x1.toFixed(1)} ` +
             `${y1.toFixed(1)}C${x1.toFixed(1)} ${(y1 + bend).toFixed(1)} ${x2.toFixed(1)} ` +
             `${(y2 - bend).toFixed(1)} ${x2.toFixed(1)} ${y2.toFixed(1)}"/>`;
    });
    svg.innerHTML = paths.join("");
    edgeElements = Array.from(svg.children);
    if (shown !== null) light(shown);
  }

  // -- lighting a chip's cone --------------------------------------------------------------
  let shown = null, pinned = null, litChips = [], litEdges = [];

  function cone(start, links) {
    const reached = new Set(), through = [];
    const stack = [start];
    while (stack.length) {
      const chip = stack.pop();
      if (chip !== start && chips[chip].state) continue;    // the state it reads or writes
      for (const [next, edge] of links[chip]) {
        through.push(edge);
        if (!reached.has(next) && next !== start) { reached.add(next); stack.push(next); }
      }
    }
    return [reached, through];
  }

  function clear() {
    litChips.forEach(([id, names]) => chipElements[id].classList.remove(...names));
    litEdges.forEach(([k, name]) => edgeElements[k].classList.remove(name));
    litChips = []; litEdges = [];
    graph.classList.remove("lighting");
    shown = null;
  }

  function mark(id, ...names) {
    chipElements[id].classList.add(...names);
    litChips.push([id, names]);
  }

  function light(id) {
    clear();
    shown = id;
    const [back, backEdges] = cone(id, into);
    const [forward, forwardEdges] = cone(id, outOf);
    const inputs = new Set(into[id].map(([from]) => from));
    const outputs = new Set(outOf[id].map(([to]) => to));
    mark(id, "sel");
    back.forEach(chip => inputs.has(chip) ? mark(chip, "back", "in") : mark(chip, "back"));
    forward.forEach(chip => outputs.has(chip) ? mark(chip, "fwd", "out") : mark(chip, "fwd"));
    for (const [list, name] of [[backEdges, "lit-back"], [forwardEdges, "lit-fwd"]]) {
      list.forEach(k => { if (edgeElements[k]) { edgeElements[k].classList.add(name);
                                                 litEdges.push([k, name]); } });
    }
    graph.classList.add("lighting");
    describe(id, back, forward);
  }

  function link(id) {
    return `<a data-goto="${id}">${escape(chips[id].name)}</a>`;
  }

  function place(chip) {
    if (chip.place === "embedding" || chip.place === "lm_head") return chip.place;
    return `layer ${chip.layer} ${chip.place}`;
  }

  function lifetime(value) {
    const at = s => `layer ${Math.floor(s / 2)} ${s % 2 ? "mlp" : "mixer"}`;
    const end = value.erased_at >= 0 ? `erased in ${at(value.erased_at)}` : "kept to the end";
    return `dims ${value.first_dim}..${value.first_dim + value.dims - 1} (${value.encoding}), ` +
           `from ${value.from > 0 ? at(value.from) : "the embedding"}, ${end}`;
  }

  function describe(id, back, forward) {
    const chip = chips[id];
    const cost = chip.unit ? `${chip.cost} ${chip.unit}` : "";
    const reads = chip.reads.map(v => `<li>${escape(values[v].name)}` +
      (writerOf[v] !== undefined && writerOf[v] !== id ? ` from ${link(writerOf[v])}` : "") +
      "</li>").join("");
    const writes = chip.writes.map(v => `<li>${escape(values[v].name)}: ` +
      `${lifetime(values[v])}; read by ${readersOf[v].length}</li>`).join("");
    const states = set => Array.from(set).filter(c => chips[c].state || chips[c].kind ===
                                                 "lm_head").sort((a, b) => a - b);
    const stateList = set => states(set).map(link).join(", ") || "none";
    detail.innerHTML =
      `<h2>${escape(chip.name)}</h2>` +
      `<p>${escape([chip.role, chip.region, chip.kind, place(chip), cost]
                   .filter(Boolean).join(" · "))}</p>` +
      (chip.loc ? `<p><code>${escape(chip.loc)}</code></p>` : "") +
      (chip.text ? `<p><code>${escape(chip.text)}</code></p>` : "") +
      (onCritical.has(id) ? `<p><b>on the critical path</b></p>` : "") +
      `<p>reads</p><ul>${reads || "<li>nothing</li>"}</ul>` +
      `<p>writes</p><ul>${writes || "<li>nothing</li>"}</ul>` +
      `<p>cone back: ${plural(back.size, "chip")}; the state it reads: ${stateList(back)}` +
      `</p><p>cone forward: ${plural(forward.size, "chip")}; what it writes: ` +
      `${stateList(forward)}</p>`;
  }

  function pin(id) {
    pinned = id;
    light(id);
  }

  function letGo() {
    pinned = null;
    clear();
  }

  // -- search ------------------------------------------------------------------------------
  let matches = [], cursor = -1;

  function find() {
    matches.forEach(id => chipElements[id].classList.remove("match"));
    const query = search.value.trim().toLowerCase();
    matches = query ? chips.filter(chip => [chip.name, chip.text, chip.loc]
      .some(field => field.toLowerCase().includes(query))).map(chip => chip.id) : [];
    matches.forEach(id => chipElements[id].classList.add("match"));
    graph.classList.toggle("searching", query.length > 0);
    cursor = -1;
    searchCount.textContent = query ? plural(matches.length, "chip") : "";
  }

  function next() {
    if (!matches.length) return;
    cursor = (cursor + 1) % matches.length;
    pin(matches[cursor]);
    chipElements[matches[cursor]].scrollIntoView({block: "center", inline: "nearest"});
  }

  // -- wiring ------------------------------------------------------------------------------
  function chipOf(event) {
    const element = event.target.closest && event.target.closest(".chip[data-chip]");
    return element && rows.contains(element) ? Number(element.dataset.chip) : null;
  }

  rows.addEventListener("mouseover", event => {
    const id = chipOf(event);
    if (pinned === null && id !== null && id !== shown) light(id);
  });
  rows.addEventListener("mouseleave", () => { if (pinned === null) clear(); });
  rows.addEventListener("click", event => {
    const id = chipOf(event);
    if (id === null || id === pinned) letGo(); else pin(id);
  });
  detail.addEventListener("click", event => {
    const target = event.target.closest("a[data-goto]");
    if (!target) return;
    const id = Number(target.dataset.goto);
    pin(id);
    chipElements[id].scrollIntoView({block: "center", inline: "nearest"});
  });
  document.addEventListener("keydown", event => { if (event.key === "Escape") letGo(); });
  search.addEventListener("input", find);
  search.addEventListener("keydown", event => { if (event.key === "Enter") next(); });
  document.getElementById("show-edges").addEventListener("change", event =>
    graph.classList.toggle("hide-edges", !event.target.checked));
  document.getElementById("show-critical").addEventListener("change", event =>
    graph.classList.toggle("show-critical", event.target.checked));
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(drawEdges, 150);
  });

  // the rows' labels and the panel stay below the header as the page scrolls
  document.documentElement.style.setProperty(
    "--header", `${document.querySelector("header").offsetHeight}px`);
  drawRows();
  chipElements = chips.map(() => null);
  rows.querySelectorAll(".chip[data-chip]").forEach(element => {
    chipElements[Number(element.dataset.chip)] = element;
  });
  drawEdges();
  document.body.dataset.ready = "1";
  window.graphPage = {drawnMs: Math.round(performance.now())};
})();
