// The trace viewer's script (qwengpu/runtime/trace_page.py puts it inline; docs/trace.md,
// "The trace viewer").  Step s is the state after the first s records (0: the launch as
// loaded; the last: the final state), with record s-1 selected.  The state comes from
// replaying the records' writes (the page data's `state_writes`) from the launch's initial
// memory and zeroed registers, never from running an instruction.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("trace-data").textContent);
  const $ = (id) => document.getElementById(id);
  const SNAPSHOT_EVERY = 256;
  const LANE_HEIGHT = 7, MARK_HEIGHT = 10, ROW_GAP = 8, LABELS = 86, LEFT = 4, TOP = 16;
  const MASK_FIELDS = new Set(["active", "exec", "rwen", "pwen", "mwen", "taken", "exited"]);
  const BASE_FIELDS = ["warp", "pc", "active", "exec", "op", "rwen", "pwen", "rd", "pd", "pval",
                       "mwen", "trap", "trap_lane", "taken", "exited"];

  function esc(value) {
    return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;");
  }
  const signed = (value) => typeof value === "number" ? (value | 0) : value;
  const hex = (value) => typeof value === "number" ? "0x" + value.toString(16) : value;
  const bit = (value, index) => typeof value === "number" ? Math.floor(value / 2 ** index) % 2 : 0;
  function lanesOf(mask, lanes) {
    const found = [];
    for (let lane = 0; lane < lanes; lane++) if (bit(mask, lane)) found.push(lane);
    return found;
  }
  function maskText(mask, lanes) {
    let text = "";
    for (let lane = 0; lane < lanes; lane++) text += bit(mask, lane) ? String(lane) : ".";
    return text;
  }

  // ---- one launch: its records, their replay, and what each record did ---------------------
  class LaunchView {
    constructor(data) {
      this.data = data;
      this.column = {};
      data.fields.forEach((field, index) => { this.column[field.name] = index; });
      this.count = data.records.length;
      this.known = new Set(BASE_FIELDS);
      for (const write of data.state_writes) {       // the fields the replay reads
        for (const key of ["mask", "index"]) if (write[key]) this.known.add(write[key]);
        if (write.kind === "lane_predicate") this.known.add(write.value);
        for (let lane = 0; write.kind !== "lane_predicate" && lane < data.lanes; lane++) {
          this.known.add(write.value + lane);
          if (write.address) this.known.add(write.address + lane);
        }
      }
      this.live = new Array(data.warps).fill(0);
      for (const thread of data.threads) this.live[thread.warp] |= 1 << thread.lane;
      this.sizes = {registers: data.registers, predicates: data.predicates};
      this.laneStates = this.computeLaneStates();
      this.buildSnapshots();
    }
    get(index, name) {
      const column = this.column[name];
      return column === undefined ? 0 : this.data.records[index][column];
    }
    blockOf(warp) {
      const thread = this.data.threads.find((row) => row.warp === warp);
      return thread ? thread.block : null;
    }
    // per record and lane: "exec", "guarded" (active, guard false), "waiting" (live, not
    // finished, at another pc) or "" (finished or not launched)
    computeLaneStates() {
      const exited = new Array(this.data.warps).fill(0);
      const states = [];
      for (let index = 0; index < this.count; index++) {
        const warp = this.get(index, "warp");
        const remaining = this.live[warp] & ~exited[warp];
        const active = this.get(index, "active"), exec = this.get(index, "exec");
        const lanes = [];
        for (let lane = 0; lane < this.data.lanes; lane++) {
          lanes.push(bit(exec, lane) ? "exec" : bit(active, lane) ? "guarded"
            : bit(remaining, lane) ? "waiting" : "");
        }
        states.push(lanes);
        exited[warp] |= this.get(index, "exited");
      }
      return states;
    }
    emptyState() {
      const data = this.data, threads = data.warps * data.lanes;
      return {registers: new Array(threads * data.registers).fill(0),
              predicates: new Array(threads * data.predicates).fill(0),
              memory: data.memory.slice(), exited: new Array(data.warps).fill(0),
              lastPc: new Array(threads).fill(null)};
    }
    copyState(state) {
      return {registers: state.registers.slice(), predicates: state.predicates.slice(),
              memory: state.memory.slice(), exited: state.exited.slice(),
              lastPc: state.lastPc.slice()};
    }
    // the state writes of record `index`: [{state, key, value}] in the order they apply
    writesOf(index) {
      const data = this.data, lanes = data.lanes, warp = this.get(index, "warp");
      const writes = [];
      for (const write of data.state_writes) {
        const mask = this.get(index, write.mask);
        for (let lane = 0; lane < lanes; lane++) {
          if (!bit(mask, lane)) continue;
          const thread = warp * lanes + lane;
          if (write.kind === "lane_register" || write.kind === "lane_predicate") {
            const register = this.get(index, write.index);
            const size = this.sizes[write.state];
            if (size === undefined || register >= size) continue;
            const value = write.kind === "lane_register" ? this.get(index, write.value + lane)
              : bit(this.get(index, write.value), lane);
            writes.push({state: write.state, key: thread * size + register, value: value});
          } else if (write.kind === "memory") {
            writes.push({state: write.state, key: this.get(index, write.address + lane),
                         value: this.get(index, write.value + lane)});
          }
        }
      }
      return writes;
    }
    apply(state, index) {
      for (const write of this.writesOf(index)) {
        if (state[write.state] !== undefined) state[write.state][write.key] = write.value;
      }
      const warp = this.get(index, "warp"), active = this.get(index, "active");
      for (const lane of lanesOf(active, this.data.lanes)) {
        state.lastPc[warp * this.data.lanes + lane] = this.get(index, "pc");
      }
      state.exited[warp] |= this.get(index, "exited");
    }
    buildSnapshots() {
      this.snapshots = [];
      this.firstWrite = {};            // "state:key" -> the first record that writes it
      const state = this.emptyState();
      for (let index = 0; index < this.count; index++) {
        if (index % SNAPSHOT_EVERY === 0) this.snapshots.push(this.copyState(state));
        for (const write of this.writesOf(index)) {
          const name = write.state + ":" + write.key;
          if (!(name in this.firstWrite)) this.firstWrite[name] = index;
        }
        this.apply(state, index);
      }
    }
    stateAt(step) {
      const start = Math.min(Math.floor(step / SNAPSHOT_EVERY), this.snapshots.length - 1);
      if (start < 0) return this.emptyState();
      const state = this.copyState(this.snapshots[start]);
      for (let index = start * SNAPSHOT_EVERY; index < step; index++) this.apply(state, index);
      return state;
    }
    writtenBefore(stateName, key, step) {
      const first = this.firstWrite[stateName + ":" + key];
      return first !== undefined && first < step;
    }
    memoryName(word) {
      for (const region of this.data.regions) {
        if (region.base <= word && word < region.base + region.words) {
          return region.name + "[" + (word - region.base) + "]";
        }
      }
      return "mem[" + word + "]";
    }
  }

  // ---- drawing ----------------------------------------------------------------------------
  let view = null, step = 0;

  // A launch of 2 or 3 dimensions names blocks and threads by (x, y[, z]), x fastest.
  function indexText(index, dims) {
    if (!dims || (dims[1] === 1 && dims[2] === 1)) return String(index);
    const x = index % dims[0], y = Math.floor(index / dims[0]) % dims[1];
    const z = Math.floor(index / (dims[0] * dims[1]));
    return dims[2] > 1 ? `(${x},${y},${z})` : `(${x},${y})`;
  }

  function shapeText(dims, count) {
    if (!dims || (dims[1] === 1 && dims[2] === 1)) return String(count);
    return (dims[2] > 1 ? dims : dims.slice(0, 2)).join("x");
  }

  function cellWidth(count) { return count <= 400 ? 10 : count <= 4000 ? 5 : 2; }

  function renderSummary(data) {
    const parts = [esc(data.backend), "kernel " + esc(data.kernel), "source " + esc(data.source),
                   "grid " + shapeText(data.grid_dims, data.grid) + " x block " +
                   shapeText(data.block_dims, data.block),
                   data.warps + (data.warps === 1 ? " warp of " : " warps of ") + data.lanes +
                   (data.lanes === 1 ? " lane" : " lanes"),
                   view.count + " records"];
    if (data.tokens) {
      const tokens = data.tokens.reduce((sum, list) => sum + list.length, 0) +
        data.end_tokens.length;
      parts.push(tokens + " tokens written by the model");
    }
    $("summary").innerHTML = parts.join(" &middot; ");
    const banner = $("trap-banner");
    banner.hidden = !data.trap;
    if (data.trap) {
      banner.innerHTML = "TRAP at record #" + data.trap.record + ": " + esc(data.trap.message) +
        (data.trap.ptx_line ? " (PTX line " + data.trap.ptx_line + ": " + esc(data.trap.ptx) + ")" : "");
    }
  }

  function renderTimeline(data) {
    const width = cellWidth(view.count), lanes = data.lanes;
    const rowHeight = MARK_HEIGHT + lanes * LANE_HEIGHT + ROW_GAP;
    const totalWidth = LEFT + view.count * width + 20, totalHeight = TOP + data.warps * rowHeight;
    // the warp and lane labels stay put while the records scroll under them
    const labels = [`<svg id="timeline-labels" xmlns="http://www.w3.org/2000/svg" width="${LABELS}" height="${totalHeight}">`];
    const parts = [`<svg id="timeline-svg" xmlns="http://www.w3.org/2000/svg" width="${totalWidth}" height="${totalHeight}">`];
    const tick = width >= 10 ? 10 : width >= 5 ? 50 : 200;
    for (let index = 0; index < view.count; index += tick) {
      parts.push(`<text class="label" x="${LEFT + index * width}" y="10">${index}</text>`);
    }
    for (let warp = 0; warp < data.warps; warp++) {
      const top = TOP + warp * rowHeight, block = view.blockOf(warp);
      labels.push(`<text class="label" x="2" y="${top + MARK_HEIGHT + LANE_HEIGHT}">warp ${warp}` +
                 (data.grid > 1 && block !== null ? ` (b${indexText(block, data.grid_dims)})` : "") +
                 `</text>`);
      for (let lane = 0; lane < lanes; lane++) {
        labels.push(`<text class="label" x="${LABELS - 12}" y="${top + MARK_HEIGHT + (lane + 1) * LANE_HEIGHT - 1}">${lane}</text>`);
      }
    }
    for (let index = 0; index < view.count; index++) {
      const warp = view.get(index, "warp"), top = TOP + warp * rowHeight;
      const x = LEFT + index * width, lanesTop = top + MARK_HEIGHT;
      view.laneStates[index].forEach((state, lane) => {
        if (state) {
          parts.push(`<rect class="cell ${state}" data-record="${index}" data-warp="${warp}" data-lane="${lane}" ` +
                     `x="${x}" y="${lanesTop + lane * LANE_HEIGHT}" width="${Math.max(width - 1, 1)}" height="${LANE_HEIGHT - 1}"/>`);
        }
      });
      const marks = [];
      if (view.get(index, "mwen")) marks.push(["store", "stores"]);
      const event = data.divergence[index];
      if (event) marks.push([event.kind, divergenceText(event)]);
      if (view.get(index, "trap")) marks.push(["trap", "trap"]);
      marks.forEach(([kind, title], slot) => {
        const wide = Math.max(width, 4);
        const shape = kind === "trap"
          ? `<rect x="${x}" y="${top}" width="${wide}" height="${MARK_HEIGHT + lanes * LANE_HEIGHT}"/>`
          : kind === "store"
            ? `<rect x="${x}" y="${top + MARK_HEIGHT - 4}" width="${Math.max(width - 1, 1)}" height="3"/>`
            : `<path d="M${x} ${top + slot * 2} h${wide} l${-wide / 2} 6 z"/>`;
        parts.push(`<g class="mark ${kind}" data-mark="${kind}" data-record="${index}" ` +
                   `data-warp="${warp}">${shape}<title>#${index} ${esc(title)}</title></g>`);
      });
    }
    parts.push(`<rect id="cursor" x="0" y="${TOP - 2}" width="${width}" height="${totalHeight - TOP + 2}" visibility="hidden"/>`);
    parts.push("</svg>");
    $("timeline").innerHTML = labels.join("") + "</svg>" +
      `<div id="timeline-scroll">${parts.join("")}</div>`;
    $("timeline-svg").addEventListener("click", (event) => {
      const box = event.currentTarget.getBoundingClientRect();
      const index = Math.floor((event.clientX - box.left - LEFT) / width);
      if (index >= 0 && index < view.count) setStep(index + 1);
    });
  }

  function divergenceText(event) {
    if (event.kind === "split") {
      return `split: lanes ${event.taken.join(" ")} take the branch to ${event.target}, ` +
        `lanes ${event.stay.join(" ")} go on to ${event.next}; they wait for each other from here`;
    }
    return `join: lanes ${event.lanes.join(" ")} run together again at pc ${event.pc} ` +
      `(lanes ${event.joined.join(" ")} were waiting)`;
  }

  function renderProgram(data) {
    const rows = data.program.map((slot) =>
      `<tr data-pc="${slot.pc}"><td>${slot.pc}</td><td class="text where">${esc(slot.instruction)}</td>` +
      `<td>${slot.ptx_line === null ? "" : slot.ptx_line}</td><td class="text where">${esc(slot.ptx)}</td>` +
      `<td class="text where">${slot.cuda ? esc(slot.cuda) + (slot.cuda_text ? ": " + esc(slot.cuda_text) : "") : ""}</td></tr>`);
    $("program").innerHTML = `<table id="program-table"><tr><th>pc</th><th class="text">machine</th>` +
      `<th>PTX line</th><th class="text">PTX</th><th class="text">CUDA</th></tr>${rows.join("")}</table>`;
  }

  function fieldPresent(field, values) {
    if (!field.when) return true;
    const condition = values[field.when];
    return field.when_bit === null ? condition !== 0 : bit(condition, field.when_bit) === 1;
  }

  function fieldValueText(name, value, lanes) {
    if (typeof value !== "number") return esc(value);
    if (MASK_FIELDS.has(name)) return `${value} (lanes ${maskText(value, lanes)})`;
    if (name === "op") return `${value} (${esc(view.data.ops[String(value)] || "?")})`;
    return `${value}`;
  }

  function renderRecord(index) {
    const data = view.data, target = $("record");
    if (index < 0) {
      target.innerHTML = `<p id="record-head">Before the first record: the launch as loaded ` +
        `(memory from the launch's buffers; every register and predicate 0).</p>`;
      return;
    }
    const values = {};
    data.fields.forEach((field) => { values[field.name] = view.get(index, field.name); });
    const warp = values.warp, pc = values.pc, slot = data.program[pc];
    const block = view.blockOf(warp);
    const parts = [`<div id="record-head" class="where">record #${index} &middot; warp ${warp}` +
      (block !== null ? ` (block ${indexText(block, data.grid_dims)})` : "") +
      ` &middot; pc ${pc} &middot; active ` +
      `${maskText(values.active, data.lanes)} &middot; exec ${maskText(values.exec, data.lanes)}</div>`];
    if (slot) {
      parts.push(`<div id="record-instruction" class="where">machine: ${esc(slot.instruction)}</div>`);
      if (slot.ptx_line !== null) {
        parts.push(`<div id="record-ptx" class="where">PTX line ${slot.ptx_line}: ${esc(slot.ptx)}</div>`);
      }
      if (slot.cuda) {
        parts.push(`<div id="record-cuda" class="where">CUDA ${esc(slot.cuda)}` +
                   (slot.cuda_text ? `: ${esc(slot.cuda_text)}` : "") + `</div>`);
      }
    } else {
      parts.push(`<div id="record-instruction" class="where">machine: (empty slot)</div>`);
    }
    const event = data.divergence[index];
    if (event) parts.push(`<div id="divergence-note" class="note ${event.kind}">${esc(divergenceText(event))}</div>`);
    if (values.trap) {
      const trap = data.trap && data.trap.record === index ? data.trap.message : `trap ${values.trap}`;
      parts.push(`<div id="record-trap" class="note trap">TRAP (lane ${values.trap_lane}): ${esc(trap)}</div>`);
    }
    const did = data.text[index];
    parts.push(`<pre id="record-text">${did.length ? esc(did.join("\n")) : "(writes nothing)"}</pre>`);
    if (data.tokens) {
      const tokens = data.tokens[index] || [];
      let chips = tokens.map((text) => `<span class="token">${esc(text)}</span>`).join("");
      if (index === view.count - 1 && data.end_tokens.length) {
        chips += ` then ` + data.end_tokens.map((text) => `<span class="token end">${esc(text)}</span>`).join("");
      }
      parts.push(`<div id="record-tokens"><b>${tokens.length} tokens the model wrote:</b> ${chips}</div>`);
    }
    const rows = [], absent = [];
    for (const field of data.fields) {
      const value = values[field.name], known = view.known.has(field.name);
      if (!fieldPresent(field, values)) { absent.push(field.name); continue; }
      rows.push(`<tr data-field="${esc(field.name)}" class="${known ? "" : "raw"}"><td class="text">` +
        `${esc(field.name)}</td><td>${fieldValueText(field.name, value, data.lanes)}</td>` +
        `<td>${esc(hex(value))}</td><td class="text">${known ? "" : "not interpreted by this viewer: shown raw"}</td></tr>`);
    }
    if (absent.length) {
      rows.push(`<tr class="absent"><td class="text" colspan="4">absent from this record (read 0): ` +
                `${absent.map(esc).join(", ")}</td></tr>`);
    }
    parts.push(`<table id="record-fields"><tr><th class="text">field</th><th>value</th><th>hex</th>` +
               `<th class="text"></th></tr>${rows.join("")}</table>`);
    target.innerHTML = parts.join("");
  }

  function renderRegisters(state, index) {
    const data = view.data, lanes = data.lanes;
    const changed = new Set(index >= 0 ? view.writesOf(index).map((w) => w.state + ":" + w.key) : []);
    const warp = index >= 0 ? view.get(index, "warp") : null;
    const laneStates = index >= 0 ? view.laneStates[index] : null;
    const head = [`<th class="text">thread</th><th class="text">warp.lane</th><th class="text">state</th><th>last pc</th>`];
    for (let r = 0; r < data.registers; r++) head.push(`<th>r${r}</th>`);
    for (let p = 0; p < data.predicates; p++) head.push(`<th>p${p}</th>`);
    const rows = data.threads.map((thread) => {
      const id = thread.warp * lanes + thread.lane;
      const exited = bit(state.exited[thread.warp], thread.lane) === 1;
      let status = exited ? "exited" : "";
      if (!exited && thread.warp === warp) status = laneStates[thread.lane] || "";
      const cells = [`<td class="text">b${indexText(thread.block, data.grid_dims)}.t` +
                     `${indexText(thread.thread, data.block_dims)}</td>`,
                     `<td class="text">${thread.warp}.${thread.lane}</td>`,
                     `<td class="text state">${status === "guarded" ? "guard false" : status}</td>`,
                     `<td>${state.lastPc[id] === null ? "" : state.lastPc[id]}</td>`];
      const cell = (stateName, register, name) => {
        const size = view.sizes[stateName], key = id * size + register;
        const value = state[stateName][key];
        const classes = changed.has(stateName + ":" + key) ? "changed"
          : view.writtenBefore(stateName, key, step) ? "" : "unwritten";
        return `<td class="${classes}" data-cell="${thread.warp}.${thread.lane}.${name}" title="${esc(hex(value))}">` +
          `${stateName === "registers" ? signed(value) : value}</td>`;
      };
      for (let r = 0; r < data.registers; r++) cells.push(cell("registers", r, "r" + r));
      for (let p = 0; p < data.predicates; p++) cells.push(cell("predicates", p, "p" + p));
      return `<tr data-thread="${thread.warp}.${thread.lane}" class="${status === "guarded" ? "" : status}">${cells.join("")}</tr>`;
    });
    $("registers").innerHTML = `<table id="register-table"><tr>${head.join("")}</tr>${rows.join("")}</table>`;
  }

  function renderMemory(state, index) {
    const data = view.data;
    const changed = new Set(index >= 0 ? view.writesOf(index).filter((w) => w.state === "memory")
      .map((w) => w.key) : []);
    const cell = (word, label) =>
      `<td class="${changed.has(word) ? "changed" : ""}" data-word="${word}" data-name="${esc(label)}" ` +
      `title="${esc(label)} = ${esc(hex(state.memory[word]))}">${esc(signed(state.memory[word]))}</td>`;
    const table = (words, labels) => {
      const rows = [];
      for (let start = 0; start < words.length; start += 16) {
        const slice = words.slice(start, start + 16);
        rows.push(`<tr>${slice.map((word, i) => `<th>${esc(labels[start + i])}</th>`).join("")}</tr>` +
                  `<tr>${slice.map((word) => cell(word, view.memoryName(word))).join("")}</tr>`);
      }
      return `<table>${rows.join("")}</table>`;
    };
    const parts = [], covered = new Set();
    for (const region of data.regions) {
      const words = [], labels = [];
      for (let i = 0; i < region.words; i++) { words.push(region.base + i); labels.push(i); covered.add(region.base + i); }
      parts.push(`<div class="region" data-region="${esc(region.name)}"><h3>${esc(region.name)} ` +
                 `<span class="hint">(${region.kind}, words ${region.base}..${region.base + region.words - 1})</span></h3>` +
                 table(words, labels) + `</div>`);
    }
    const others = [];
    for (let word = 0; word < state.memory.length; word++) {
      if (!covered.has(word) && (state.memory[word] !== 0 || view.writtenBefore("memory", word, view.count + 1))) others.push(word);
    }
    if (others.length) {
      parts.push(`<div class="region" data-region=""><h3>other words</h3>${table(others, others.map((w) => "mem[" + w + "]"))}</div>`);
    }
    $("memory").innerHTML = parts.join("");
  }

  // ---- stepping ---------------------------------------------------------------------------
  function setStep(value) {
    if (!view) return;
    step = Math.max(0, Math.min(view.count, value));
    const slider = $("step");
    slider.value = String(step);
    const index = step - 1;
    $("step-label").textContent = `step ${step} of ${view.count}` +
      (index >= 0 ? ` (after record #${index})` : " (before the first record)");
    const state = view.stateAt(step);
    renderRecord(index);
    renderRegisters(state, index);
    renderMemory(state, index);
    const cursor = $("cursor"), width = cellWidth(view.count);
    if (cursor) {
      cursor.setAttribute("visibility", index >= 0 ? "visible" : "hidden");
      cursor.setAttribute("x", String(LEFT + Math.max(index, 0) * width));
      const box = $("timeline-scroll"), x = LEFT + index * width;
      if (x < box.scrollLeft || x > box.scrollLeft + box.clientWidth - 20) {
        box.scrollLeft = Math.max(0, x - box.clientWidth / 2);
      }
    }
    for (const row of document.querySelectorAll("#program-table tr.current")) row.classList.remove("current");
    if (index >= 0) {
      const row = document.querySelector(`#program-table tr[data-pc="${view.get(index, "pc")}"]`);
      if (row) {
        row.classList.add("current");
        const box = $("program");
        if (row.offsetTop < box.scrollTop || row.offsetTop > box.scrollTop + box.clientHeight - 20) {
          box.scrollTop = row.offsetTop - box.clientHeight / 2;
        }
      }
    }
  }

  function showLaunch(number) {
    const data = DATA.launches[number];
    $("launch-error").hidden = !data.error;
    $("viewer").hidden = Boolean(data.error);
    if (data.error) {
      view = null;
      $("launch-error").textContent = `${data.name}: ${data.error}`;
      $("summary").textContent = data.backend;
      $("trap-banner").hidden = true;
      return;
    }
    view = new LaunchView(data);
    $("step").max = String(view.count);
    renderSummary(data);
    renderTimeline(data);
    renderProgram(data);
    setStep(0);
  }

  function setUp() {
    const choice = $("launch-choice");
    DATA.launches.forEach((data, number) => {
      const option = document.createElement("option");
      option.value = String(number);
      option.textContent = data.name + (data.error ? " (failed)" : "");
      choice.appendChild(option);
    });
    $("chooser").hidden = DATA.launches.length < 2;
    choice.addEventListener("change", () => showLaunch(Number(choice.value)));
    $("step").addEventListener("input", (event) => setStep(Number(event.target.value)));
    $("first").addEventListener("click", () => setStep(0));
    $("prev").addEventListener("click", () => setStep(step - 1));
    $("next").addEventListener("click", () => setStep(step + 1));
    $("last").addEventListener("click", () => setStep(view ? view.count : 0));
    const moves = {ArrowRight: 1, j: 1, ArrowLeft: -1, k: -1, PageDown: 10, PageUp: -10};
    document.addEventListener("keydown", (event) => {
      if (!view || event.target.tagName === "SELECT" || event.altKey || event.ctrlKey || event.metaKey) return;
      if (event.key in moves) setStep(step + moves[event.key]);
      else if (event.key === "Home") setStep(0);
      else if (event.key === "End") setStep(view.count);
      else return;
      event.preventDefault();
    });
    showLaunch(0);
  }

  setUp();
})();
