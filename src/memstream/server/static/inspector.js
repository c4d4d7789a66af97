// memstream inspector: a static page over the /v1 API. Every request carries the key the user
// typed; the server applies the same key, role and namespace checks as for any other client.
// Data is put in the page with textContent only, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const PALETTE = ["#2456c9", "#2e7d32", "#b26a00", "#8e24aa", "#00838f", "#c62828", "#5d4037",
  "#546e7a", "#ad1457", "#6d8c00", "#283593", "#ef6c00"];
const TIER_COLOURS = { stm: "#2e7d32", im: "#b26a00", ltm: "#2456c9" };
const PAGE = 50;
const SVG = "http://www.w3.org/2000/svg";

const state = { key: "", ns: "", offset: 0, filter: {}, overview: null, plotsFor: null };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "style") node.style.cssText = value;  // CSSOM: allowed by the page's CSP
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const when = (seconds) => (seconds ? new Date(seconds * 1000).toISOString()
  .replace("T", " ").slice(0, 19) : "");
const pct = (x) => `${Math.round(Math.max(0, Math.min(1, x)) * 100)}%`;

function status(text) { $("status").textContent = text; }

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

async function api(path, body) {
  const headers = { Accept: "application/json" };
  if (state.key) headers.Authorization = `Bearer ${state.key}`;
  const init = { headers, method: body === undefined ? "GET" : "POST" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const payload = await response.json().catch(() => null);
  if (!response.ok) {
    const message = payload && payload.error ? payload.error.message : response.statusText;
    const err = new Error(`${response.status}: ${message}`);
    err.status = response.status;
    throw err;
  }
  return payload;
}

const nsQuery = () => `namespace=${encodeURIComponent(state.ns)}`;

// --- connection ---------------------------------------------------------------------------

async function loadNamespaces() {
  try {
    const answer = await api("/v1/namespaces");
    const list = $("namespace-list");
    list.replaceChildren(...answer.namespaces.map((ns) => el("option", { value: ns })));
    if (!$("namespace").value) $("namespace").value = answer.default;
    return true;
  } catch (err) {
    if (err.status === 401 && !state.key) {
      showError("This server needs an API key: enter one and press Open.");
    } else {
      showError(`The server refused: ${err.message}`);
    }
    return false;
  }
}

async function connect(event) {
  if (event) event.preventDefault();
  state.key = $("api-key").value.trim();
  sessionStorage.setItem("memstream-key", state.key);
  showError("");
  if (!(await loadNamespaces())) return;
  state.ns = $("namespace").value.trim();
  if (!state.ns) { showError("Choose a namespace."); return; }
  sessionStorage.setItem("memstream-namespace", state.ns);
  state.plotsFor = null;
  try {
    state.overview = await api(`/v1/inspect/overview?${nsQuery()}`);
  } catch (err) {
    state.overview = null;
    $("records").tBodies[0].replaceChildren();
    showError(err.message);
    status("");
    return;
  }
  const o = state.overview;
  status(`Namespace ${o.namespace}: ${o.total} records.`);
  $("f-kind").replaceChildren(el("option", { value: "" }, "any"),
    ...Object.keys(o.kinds).sort().map((k) => el("option", { value: k }, k)));
  $("agent-list").replaceChildren(...o.agents.map((a) => el("option", { value: a })));
  $("f-tier").disabled = !o.has_tiers;
  await loadRecords(false);
  if (!$("view-plots").hidden) drawPlots();
}

// --- records ------------------------------------------------------------------------------

function readFilter() {
  const f = {};
  const kind = $("f-kind").value;
  if (kind) f.kinds = [kind];
  const agent = $("f-agent").value.trim();
  if (agent) f.agent_id = agent;
  const tier = $("f-tier").value;
  if (tier && !$("f-tier").disabled) f.tiers = [tier];
  for (const [id, name] of [["f-since", "since"], ["f-until", "until"]]) {
    const value = $(id).value;
    if (value) f[name] = new Date(value).getTime() / 1000;
  }
  if ($("f-invalid").checked) f.include_invalid = true;
  return f;
}

async function loadRecords(more) {
  if (!state.ns) return;
  if (!more) { state.offset = 0; state.filter = readFilter(); }
  try {
    const answer = await api("/v1/inspect/records", {
      ...state.filter, namespace: state.ns, limit: PAGE, offset: state.offset });
    const body = $("records").tBodies[0];
    if (!more) body.replaceChildren();
    for (const r of answer.records) body.append(recordRow(r));
    state.offset += answer.records.length;
    $("more").hidden = answer.records.length < PAGE;
    $("records-count").textContent = answer.total === null
      ? `Showing ${body.rows.length} records.`
      : `Showing ${body.rows.length} of ${answer.total} matching records.`;
    showError("");
  } catch (err) {
    showError(err.message);
  }
}

function recordRow(r) {
  const cls = r.invalidated_at ? "invalid" : null;
  return el("tr", { "data-id": r.id },
    el("td", { class: "when" }, when(r.created_at)),
    el("td", {}, el("span", { class: "tag" }, r.kind)),
    el("td", {}, r.agent_id || ""),
    el("td", {}, r.tier.toUpperCase()),
    el("td", { class: "num" }, r.importance.toFixed(2)),
    el("td", { class: "text-col" }, el("button", {
      class: `link ${cls || ""}`, type: "button", onclick: () => openRecord(r.id),
      title: "Open this record" }, r.text.length > 160 ? `${r.text.slice(0, 160)}…` : r.text)));
}

// --- one record -----------------------------------------------------------------------------

function recordLink(brief) {
  return el("li", {}, el("button", { class: "link", type: "button",
    onclick: () => openRecord(brief.id) }, `${brief.kind}: ${brief.text.slice(0, 120)}`),
  brief.invalidated_at ? " (invalidated)" : "");
}

function changed(entry) {
  if (!entry.old || !entry.new) return "";
  const before = entry.old;
  const after = entry.new;
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]));
  return keys.length ? ` (${keys.join(", ")})` : "";
}

async function openRecord(id) {
  let answer;
  try {
    answer = await api(`/v1/inspect/records/${encodeURIComponent(id)}?${nsQuery()}`);
  } catch (err) {
    showError(err.message);
    return;
  }
  const r = answer.record;
  const fields = [["id", r.id], ["kind", r.kind], ["tier", r.tier.toUpperCase()],
    ["created", when(r.created_at)], ["updated", when(r.updated_at)],
    ["last access", when(r.last_accessed_at)], ["accesses", r.access_count],
    ["importance", r.importance.toFixed(3)], ["user", r.user_id], ["agent", r.agent_id],
    ["run", r.run_id], ["step", r.step]].filter(([, v]) => v !== null && v !== "");
  const validity = r.invalidated_at
    ? [`invalidated ${when(r.invalidated_at)}`, r.superseded_by
      ? el("span", {}, ", superseded by ", el("button", { class: "link", type: "button",
        onclick: () => openRecord(r.superseded_by) }, r.superseded_by)) : ""]
    : ["valid"];
  const body = [
    el("p", { class: r.invalidated_at ? "invalid" : null }, r.text),
    el("dl", {}, fields.map(([k, v]) => [el("dt", {}, k), el("dd", {}, String(v))]),
      el("dt", {}, "validity"), el("dd", { id: "validity" }, ...validity)),
    el("h3", {}, `Rests on (${r.provenance.length})`),
    r.provenance.length ? el("ul", { class: "links", id: "evidence" },
      answer.evidence.map(recordLink),
      answer.missing_evidence.map((i) => el("li", {}, `${i} (deleted)`)))
      : el("p", { class: "empty" }, "No provenance: an original record."),
    el("h3", {}, `Cited by (${answer.cited_by.length})`),
    answer.cited_by.length ? el("ul", { class: "links", id: "cited-by" },
      answer.cited_by.map(recordLink)) : el("p", { class: "empty" }, "Nothing cites it."),
  ];
  if (r.data) body.push(el("h3", {}, "Data"), el("pre", {}, JSON.stringify(r.data, null, 2)));
  if (Object.keys(r.metadata || {}).length) {
    body.push(el("h3", {}, "Metadata"), el("pre", {}, JSON.stringify(r.metadata, null, 2)));
  }
  body.push(el("h3", {}, "History"), el("ol", { class: "history", id: "history" },
    answer.history.map((h) => el("li", {}, `${when(h.at)} ${h.event}${changed(h)}`))));
  $("detail-body").replaceChildren(...body);
  const panel = $("detail");
  panel.hidden = false;
  panel.focus();
}

function closeRecord() {
  $("detail").hidden = true;
  $("main").focus();
}

// --- search ---------------------------------------------------------------------------------

function bar(name, value, weight) {
  return [el("span", {}, `${name} ×${weight}`),
    el("span", { class: `bar ${name}`, role: "meter", "aria-label": name,
      "aria-valuemin": 0, "aria-valuemax": 1, "aria-valuenow": value.toFixed(3) },
    el("span", { style: `width:${pct(value)}` })),
    el("span", { class: "num" }, value.toFixed(2))];
}

async function search(event) {
  event.preventDefault();
  if (!state.ns) { showError("Open a namespace first."); return; }
  const body = { namespace: state.ns, query: $("q").value, k: Number($("k").value) || 10,
    touch: false };
  if ($("profile").value) body.weights = $("profile").value;
  let hits;
  try {
    hits = await api("/v1/search", body);
  } catch (err) {
    showError(err.message);
    return;
  }
  showError("");
  const items = hits.map((h) => {
    const x = h.explain;
    return el("li", { class: "hit", "data-id": h.record.id },
      el("div", { class: "hit-head" },
        el("button", { class: "link", type: "button", onclick: () => openRecord(h.record.id) },
          h.record.text),
        el("span", { class: "num", title: "score" }, h.score.toFixed(3))),
      el("div", { class: "bars" }, bar("recency", x.recency, x.weights.recency),
        bar("importance", x.importance, x.weights.importance),
        bar("relevance", x.relevance, x.weights.relevance)));
  });
  $("hits").replaceChildren(...items);
  status(`${hits.length} hits for “${body.query}” (search does not count as an access).`);
}

// --- plots ------------------------------------------------------------------------------------

const W = 560;
const H = 220;
const M = { l: 40, r: 10, t: 10, b: 30 };

function axes(maxY, starts, fmt) {
  const g = svg("g", { class: "axes", "font-size": 10, fill: "#5b6475" });
  for (const frac of [0, 0.5, 1]) {
    const y = M.t + (1 - frac) * (H - M.t - M.b);
    g.append(svg("line", { x1: M.l, x2: W - M.r, y1: y, y2: y, stroke: "#e3e6ec" }),
      svg("text", { x: M.l - 4, y: y + 3, "text-anchor": "end" }, fmt(maxY * frac)));
  }
  if (starts.length) {
    const first = starts[0];
    const last = starts[starts.length - 1];
    g.append(svg("text", { x: M.l, y: H - 8 }, when(first).slice(0, 16)),
      svg("text", { x: W - M.r, y: H - 8, "text-anchor": "end" }, when(last).slice(0, 16)));
  }
  return g;
}

function legend(names, colour) {
  return el("div", { class: "legend" }, names.map((n, i) => el("span", {},
    el("i", { style: `background:${colour(n, i)}` }), n)));
}

function stacked(target, timeline, colour) {
  const names = Object.keys(timeline.series);
  if (!names.length) { target.replaceChildren(el("p", { class: "empty" }, "No records.")); return; }
  const n = timeline.starts.length;
  const totals = timeline.starts.map((_, i) => names.reduce((s, k) => s + timeline.series[k][i], 0));
  const maxY = Math.max(1, ...totals);
  const bw = (W - M.l - M.r) / n;
  const plotH = H - M.t - M.b;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `${names.join(", ")}: ${totals.reduce((a, b) => a + b, 0)} records in ${n} buckets` },
  axes(maxY, timeline.starts, (v) => Math.round(v)));
  for (let i = 0; i < n; i += 1) {
    let base = 0;
    names.forEach((name, j) => {
      const count = timeline.series[name][i];
      if (!count) return;
      const h = (count / maxY) * plotH;
      chart.append(svg("rect", { x: M.l + i * bw + 0.5, width: Math.max(1, bw - 1),
        y: M.t + plotH - base - h, height: h, fill: colour(name, j), "data-series": name },
      svg("title", {}, `${name}: ${count} from ${when(timeline.starts[i])}`)));
      base += h;
    });
  }
  target.replaceChildren(chart, legend(names, colour));
}

function lines(target, series, yMax, empty) {
  const names = Object.keys(series);
  if (!names.length) { target.replaceChildren(el("p", { class: "empty" }, empty)); return; }
  const all = names.flatMap((k) => series[k]);
  const lo = Math.min(...all.map((p) => p.x));
  const hi = Math.max(...all.map((p) => p.x));
  const span = hi - lo || 1;
  const plotH = H - M.t - M.b;
  const px = (x) => M.l + ((x - lo) / span) * (W - M.l - M.r);
  const py = (y) => M.t + (1 - Math.min(y, yMax) / yMax) * plotH;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `${names.length} series, ${all.length} points` },
  axes(yMax, [lo, hi], (v) => v.toFixed(1)));
  names.forEach((name, i) => {
    const points = series[name];
    const colour = PALETTE[i % PALETTE.length];
    chart.append(svg("polyline", { fill: "none", stroke: colour, "stroke-width": 2,
      points: points.map((p) => `${px(p.x)},${py(p.y)}`).join(" "), "data-series": name }));
    for (const p of points) {
      chart.append(svg("circle", { cx: px(p.x), cy: py(p.y), r: 3, fill: colour },
        svg("title", {}, `${name}: ${p.y.toFixed(2)} at ${when(p.x)}`)));
    }
  });
  target.replaceChildren(chart, legend(names, (n, i) => PALETTE[i % PALETTE.length]));
}

function drawPlots() {
  const o = state.overview;
  if (!o || state.plotsFor === o) return;
  state.plotsFor = o;
  $("plots-note").textContent = o.covered < o.total
    ? `Plots cover the newest ${o.covered} of ${o.total} records.`
    : `Plots cover all ${o.total} records.`;
  stacked($("plot-kind"), o.by_kind, (n, i) => PALETTE[i % PALETTE.length]);
  stacked($("plot-tier"), o.by_tier, (n) => TIER_COLOURS[n] || "#888");
  const episodes = {};
  for (const [task, points] of Object.entries(o.episodes)) {
    episodes[task] = points.map((p) => ({ x: p.at, y: p.score }));
  }
  lines($("plot-episodes"), episodes, 1, "No episodes recorded.");
  const heuristics = {};
  for (const h of o.heuristics) heuristics[h.label] = h.points.map((p) => ({ x: p.at, y: p.confidence }));
  lines($("plot-heuristics"), heuristics, 1, "No heuristics learned.");
}

// --- tabs ---------------------------------------------------------------------------------------

function selectTab(tab) {
  const tabs = [...document.querySelectorAll("[role=tab]")];
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute("aria-controls")).hidden = !on;
  }
  tab.focus();
  if (tab.id === "tab-plots") drawPlots();
}

function tabKeys(event) {
  const tabs = [...document.querySelectorAll("[role=tab]")];
  const i = tabs.indexOf(document.activeElement);
  if (i < 0) return;
  const moves = { ArrowRight: 1, ArrowLeft: -1 };
  if (event.key in moves) {
    event.preventDefault();
    selectTab(tabs[(i + moves[event.key] + tabs.length) % tabs.length]);
  } else if (event.key === "Home") {
    event.preventDefault(); selectTab(tabs[0]);
  } else if (event.key === "End") {
    event.preventDefault(); selectTab(tabs[tabs.length - 1]);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("api-key").value = sessionStorage.getItem("memstream-key") || "";
  $("namespace").value = sessionStorage.getItem("memstream-namespace") || "";
  $("connect").addEventListener("submit", connect);
  $("filters").addEventListener("submit", (e) => { e.preventDefault(); loadRecords(false); });
  $("more").addEventListener("click", () => loadRecords(true));
  $("search-form").addEventListener("submit", search);
  $("close-detail").addEventListener("click", closeRecord);
  $("detail").addEventListener("keydown", (e) => { if (e.key === "Escape") closeRecord(); });
  for (const t of document.querySelectorAll("[role=tab]")) {
    t.addEventListener("click", () => selectTab(t));
  }
  $("tabs").addEventListener("keydown", tabKeys);
  state.key = $("api-key").value;
  loadNamespaces().then((ok) => { if (ok && $("namespace").value) connect(); });
});
