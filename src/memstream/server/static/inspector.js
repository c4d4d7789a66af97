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

const LIVE_EVERY = 2000;  // ms between two looks for new memories

const state = { key: "", ns: "", offset: 0, filter: {}, overview: null, plotsFor: null,
  newest: 0, seen: new Set(), total: null, polling: false, tab: "tab-records", statuses: {} };

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

// the API writes times as ISO 8601 UTC; seconds since the epoch for arithmetic and plots
const secs = (t) => (typeof t === "string" ? Date.parse(t) / 1000 : t);
const when = (t) => (t ? new Date(secs(t) * 1000).toISOString()
  .replace("T", " ").slice(0, 19) : "");
const pct = (x) => `${Math.round(Math.max(0, Math.min(1, x)) * 100)}%`;

// each tab keeps its own status line: switching tabs shows that tab's, never another's
function status(text, tab = state.tab) {
  state.statuses[tab] = text;
  if (tab === state.tab) $("status").textContent = text;
}

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

// the answer, or undefined after showing the error (the caller stops there)
async function shown(path, body) {
  try {
    return await api(path, body);
  } catch (err) {
    showError(err.message);
    return undefined;
  }
}

// Until the first data is in (or the page knows it cannot get it), the page says it is loading:
// body[data-state=loading], a "Loading…" row in the table; then data-state is "ready" (data
// shown) or "waiting" (a key or a namespace is needed, or the server refused).
function busy(on, done = "ready") {
  document.body.dataset.state = on ? "loading" : done;
  document.body.setAttribute("aria-busy", String(on));
  const body = $("records").tBodies[0];
  if (on) {
    body.replaceChildren(el("tr", { class: "loading" }, el("td", { colspan: 7 }, "Loading…")));
    $("records-count").textContent = "Loading…";
    status("Loading…", "tab-records");
  } else {
    for (const row of [...body.querySelectorAll("tr.loading")]) row.remove();
    if ($("records-count").textContent === "Loading…") $("records-count").textContent = "";
    if (state.statuses["tab-records"] === "Loading…") status("", "tab-records");
  }
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
  busy(true);
  if (!(await loadNamespaces())) { busy(false, "waiting"); return; }
  state.ns = $("namespace").value.trim();
  if (!state.ns) { showError("Choose a namespace."); busy(false, "waiting"); return; }
  // an earlier namespace's hits go now, not after the overview: a search started meanwhile
  // is for this namespace and must not be wiped when the overview comes in
  status("", "tab-search");
  $("hits").replaceChildren();
  sessionStorage.setItem("memstream-namespace", state.ns);
  state.plotsFor = null;
  try {
    state.overview = await api(`/v1/inspect/overview?${nsQuery()}`);
  } catch (err) {
    state.overview = null;
    $("records").tBodies[0].replaceChildren();
    showError(err.message);
    status("");
    busy(false, "waiting");
    return;
  }
  const o = state.overview;
  status(`Namespace ${o.namespace}: ${o.total} records`
    + (o.invalid ? ` (${o.invalid} superseded or invalidated: listed with `
      + "\u201cinclude invalidated\u201d)." : "."), "tab-records");
  status(`Namespace ${o.namespace}: plots of ${o.total} records.`, "tab-plots");
  $("f-kind").replaceChildren(el("option", { value: "" }, "any"),
    ...Object.keys(o.kinds).sort().map((k) => el("option", { value: k }, k)));
  $("agent-list").replaceChildren(...o.agents.map((a) => el("option", { value: a })));
  $("user-list").replaceChildren(...(o.users || []).map((u) => el("option", { value: u })));
  $("f-tier").disabled = !o.has_tiers;
  document.body.classList.toggle("no-tiers", !o.has_tiers);  // tiers apply to agents only
  await loadRecords(false);
  busy(false, state.loadFailed ? "waiting" : "ready");
  if (!$("view-plots").hidden) drawPlots();
}

// --- records ------------------------------------------------------------------------------

function readFilter() {
  const f = {};
  const kind = $("f-kind").value;
  if (kind) f.kinds = [kind];
  const user = $("f-user").value.trim();
  if (user) f.user_id = user;
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
    if (!more) { body.replaceChildren(); state.seen = new Set(); state.newest = 0; }
    for (const r of answer.records) {
      body.append(recordRow(r));
      state.seen.add(r.id);
      state.newest = Math.max(state.newest, secs(r.created_at));
    }
    state.offset += answer.records.length;
    state.total = answer.total;
    $("more").hidden = answer.records.length < PAGE;
    showCount();
    showError("");
    state.loadFailed = false;
  } catch (err) {
    showError(err.message);
    state.loadFailed = true;
  }
}

function showCount() {
  const shown = $("records").tBodies[0].rows.length;
  $("records-count").textContent = state.total === null
    ? `Showing ${shown} records.`
    : `Showing ${shown} of ${state.total} matching records.`;
}

// New memories while the page is open: a look every LIVE_EVERY ms at the newest records (same
// filter); those not shown yet go on top of the table, marked as new.
async function poll() {
  if (state.polling || !state.ns || !$("f-live").checked || $("view-records").hidden) return;
  state.polling = true;
  try {
    const answer = await api("/v1/inspect/records", {
      ...state.filter, namespace: state.ns, limit: PAGE, offset: 0 });
    const fresh = answer.records.filter((r) => !state.seen.has(r.id));
    const body = $("records").tBodies[0];
    for (const r of fresh.reverse()) {
      const row = recordRow(r);
      row.classList.add("new");
      body.prepend(row);
      state.seen.add(r.id);
      state.newest = Math.max(state.newest, secs(r.created_at));
      state.offset += 1;
    }
    if (fresh.length) {
      state.overviewStale = true;  // the plots fetch it again when shown
      if (state.total !== null) state.total += fresh.length;
      showCount();
      status(`${fresh.length} new ${fresh.length === 1 ? "memory" : "memories"} at ` +
        `${when(Date.now() / 1000)}.`, "tab-records");
    }
  } catch (err) {
    // a failed look is retried at the next one; the error shows once
    if (err.status) showError(err.message);
  } finally {
    state.polling = false;
  }
}

function recordRow(r) {
  const cls = r.invalidated_at ? "invalid" : null;
  // the whole row opens the record (the text is also a button, for the keyboard)
  return el("tr", { "data-id": r.id, class: "opens", onclick: (e) => {
    if (!e.target.closest("button")) openRecord(r.id);
  } },
    el("td", { class: "c-when" }, when(r.created_at)),
    el("td", { class: "c-kind" }, el("span", { class: "tag" }, r.kind)),
    el("td", { class: "c-user" }, r.user_id || ""),
    el("td", { class: "c-agent" }, r.agent_id || ""),
    el("td", { class: "c-tier" }, r.tier ? r.tier.toUpperCase() : ""),
    el("td", { class: "c-imp num" }, r.importance.toFixed(2)),
    el("td", { class: "c-text" }, el("button", {
      class: `link ${cls || ""}`, type: "button", onclick: () => openRecord(r.id),
      title: "Open this record" }, r.text.length > 240 ? `${r.text.slice(0, 240)}…` : r.text)));
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
  const answer = await shown(`/v1/inspect/records/${encodeURIComponent(id)}?${nsQuery()}`);
  if (answer === undefined) return;
  const r = answer.record;
  const fields = [["id", r.id], ["kind", r.kind], ["tier", r.tier ? r.tier.toUpperCase() : ""],
    ["created", when(r.created_at)], ["updated", when(r.updated_at)],
    ["last access", when(r.last_accessed_at)], ["accesses", r.access_count],
    ["importance", r.importance.toFixed(3)], ["user", r.user_id], ["agent", r.agent_id],
    ["run", r.run_id], ["step", r.step]].filter(([, v]) => v !== null && v !== "");
  // a record that replaces this one, by its words and date (its id is one click away)
  const successorLink = (id) => el("button", { class: "link", type: "button", title: id,
    onclick: () => openRecord(id) }, answer.successor && answer.successor.id === id
    ? `the ${answer.successor.kind} of ${when(answer.successor.created_at)}: `
      + `“${answer.successor.text.slice(0, 120)}”` : id);
  const validity = r.invalidated_at
    ? [`invalidated ${when(r.invalidated_at)}`, r.superseded_by
      ? el("span", {}, ", superseded by ", successorLink(r.superseded_by)) : ""]
    : ["valid"];
  // what the comparison found, in words; the signals that decided it behind "details"
  const FOUND = { superseded: "a newer memory changes it", duplicate:
    "it restates an earlier memory", junk: "it reads as chatter or noise, not a memory" };
  const body = [
    el("p", { class: r.invalidated_at ? "invalid" : null }, r.text),
    el("dl", {}, fields.map(([k, v]) => [el("dt", {}, k), el("dd", {}, String(v))]),
      el("dt", {}, "validity"), el("dd", { id: "validity" }, ...validity),
      answer.finding ? [el("dt", {}, "found"), el("dd", { id: "finding" },
        `${FOUND[answer.finding.kind] || answer.finding.kind} (confidence `
        + `${answer.finding.confidence.toFixed(2)}${answer.finding.applied ? ""
          : answer.finding.tentative ? "; tentative: not linked" : "; restored"})`,
        answer.finding.tentative && answer.finding.related ? el("span", {},
          ", probably replaced by ", successorLink(answer.finding.related)) : "",
        answer.finding.reason ? el("details", {}, el("summary", {}, "details"),
          answer.finding.reason) : "")] : []),
    el("h3", {}, `Rests on (${r.provenance.length})`),
    r.provenance.length ? el("ul", { class: "links", id: "evidence" },
      answer.evidence.map(recordLink),
      answer.missing_evidence.map((i) => el("li", {}, `${i} (deleted)`)))
      : el("p", { class: "empty" }, "No provenance: an original record."),
    el("h3", {}, `Replaces (${answer.replaces.length})`),
    answer.replaces.length ? el("ul", { class: "links", id: "replaces" },
      answer.replaces.map(recordLink)) : el("p", { class: "empty" }, "No older version."),
    ...(answer.probably_replaces.length ? [
      el("h3", {}, `Probably replaces (${answer.probably_replaces.length}; not linked)`),
      el("ul", { class: "links", id: "probably-replaces" },
        answer.probably_replaces.map(recordLink))] : []),
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
  if ($("q-user").value.trim()) body.user_id = $("q-user").value.trim();
  const hits = await shown("/v1/search", body);
  if (hits === undefined) return;
  if (body.namespace !== state.ns) return;  // another namespace was opened meanwhile
  showError("");
  const items = hits.map((h) => {
    const x = h.explain;
    return el("li", { class: "hit", "data-id": h.record.id },
      el("div", { class: "hit-head" },
        el("button", { class: "link", type: "button", onclick: () => openRecord(h.record.id) },
          h.record.text),
        el("span", { class: "num", title: "score" }, h.score.toFixed(3))),
      el("div", { class: "hit-meta" }, el("span", { class: "tag" }, h.record.kind),
        h.record.user_id ? el("span", { class: "hit-user" }, `user ${h.record.user_id}`) : null,
        h.record.agent_id ? el("span", {}, `agent ${h.record.agent_id}`) : null,
        el("span", { class: "when" }, when(h.record.created_at)),
        // why it stands where it does, when not by its score alone (explain: via, lifted)
        x.via && x.via.length ? el("span", { class: "why via",
          title: "reached through a name the hit above it holds" }, `via ${x.via.join(", ")}`)
          : null,
        x.lifted ? el("span", { class: "why lifted" }, x.lifted) : null),
      el("div", { class: "bars" }, bar("recency", x.recency, x.weights.recency),
        bar("importance", x.importance, x.weights.importance),
        bar("relevance", x.relevance, x.weights.relevance)));
  });
  $("hits").replaceChildren(...items);
  const who = body.user_id ? ` of user ${body.user_id}` : "";
  status(`${hits.length} hits${who} for “${body.query}” (search does not count as an access).`,
    "tab-search");
}

// --- plots ------------------------------------------------------------------------------------

// Plots are drawn at the size they are shown (no scaling), so that their text is body-sized.
const H = 240;
const FONT = 13;
const M = { l: 52, r: 16, t: 12, b: 34 };

// A time label as precise as the plot's range asks for.
function tick(seconds, range) {
  const full = when(seconds);
  if (range < 60) return full.slice(11, 19);
  if (range < 86400) return full.slice(11, 16);
  if (range < 30 * 86400) return full.slice(5, 16);
  return full.slice(0, 10);
}

function widthOf(target) {
  return Math.max(300, Math.floor((target.clientWidth || target.parentNode.clientWidth || 560)));
}

function axes(W, maxY, lo, hi, fmt) {
  const g = svg("g", { class: "axes", "font-size": FONT, fill: "#4a5263" });
  for (const frac of [0, 0.5, 1]) {
    const y = M.t + (1 - frac) * (H - M.t - M.b);
    g.append(svg("line", { x1: M.l, x2: W - M.r, y1: y, y2: y, stroke: "#e3e6ec" }),
      svg("text", { x: M.l - 6, y: y + 4, "text-anchor": "end" }, fmt(maxY * frac)));
  }
  const range = hi - lo;
  const count = range > 0 ? Math.max(2, Math.min(5, Math.floor((W - M.l - M.r) / 130))) : 1;
  for (let i = 0; i < count; i += 1) {
    const frac = count === 1 ? 0.5 : i / (count - 1);
    const x = M.l + frac * (W - M.l - M.r);
    const anchor = count === 1 ? "middle" : i === 0 ? "start" : i === count - 1 ? "end" : "middle";
    g.append(svg("text", { x, y: H - 10, "text-anchor": anchor, class: "x-tick" },
      tick(lo + frac * range, range)));
  }
  return g;
}

function legend(names, colour) {
  return el("div", { class: "legend" }, names.map((n, i) => el("span", {},
    el("i", { style: `background:${colour(n, i)}` }), n)));
}

function stacked(target, timeline, colour) {
  const names = Object.keys(timeline.series);
  if (!names.length) { target.replaceChildren(el("p", { class: "empty" }, "No records yet.")); return; }
  const W = widthOf(target);
  const n = timeline.starts.length;
  const totals = timeline.starts.map((_, i) => names.reduce((s, k) => s + timeline.series[k][i], 0));
  const all = totals.reduce((a, b) => a + b, 0);
  const maxY = Math.max(1, ...totals);
  const bw = (W - M.l - M.r) / n;
  const plotH = H - M.t - M.b;
  const lo = timeline.starts[0];
  const hi = timeline.end || lo + timeline.bucket_seconds;
  const chart = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `${names.join(", ")}: ${all} records in ${n} bins` },
  axes(W, maxY, lo, hi, (v) => String(Math.round(v))));
  for (let i = 0; i < n; i += 1) {
    let base = 0;
    names.forEach((name, j) => {
      const count = timeline.series[name][i];
      if (!count) return;
      const h = (count / maxY) * plotH;
      const width = n === 1 ? Math.min(120, bw) : Math.max(1, bw - 1);
      const x = n === 1 ? M.l + (bw - width) / 2 : M.l + i * bw + 0.5;
      chart.append(svg("rect", { x, width, y: M.t + plotH - base - h, height: h,
        fill: colour(name, j), "data-series": name },
      svg("title", {}, `${name}: ${count} from ${when(timeline.starts[i])}`)));
      base += h;
    });
  }
  const note = n === 1
    ? el("p", { class: "plot-note" }, `All ${all} records fall within one ` +
      `${timeline.bucket_seconds === 1 ? "second" : `${timeline.bucket_seconds}-second bin`}, ` +
      `from ${when(lo)}.`)
    : el("p", { class: "plot-note" }, `${n} bins of ${binLabel(timeline.bucket_seconds)}, ` +
      `${when(lo)} to ${when(hi)}.`);
  target.replaceChildren(chart, legend(names, colour), note);
}

function binLabel(seconds) {
  if (seconds % 86400 === 0) return `${seconds / 86400} day${seconds === 86400 ? "" : "s"}`;
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? "" : "s"}`;
  if (seconds % 60 === 0) return `${seconds / 60} minute${seconds === 60 ? "" : "s"}`;
  return `${seconds} second${seconds === 1 ? "" : "s"}`;
}

function lines(target, series, yMax, empty) {
  const names = Object.keys(series);
  if (!names.length) { target.replaceChildren(el("p", { class: "empty" }, empty)); return; }
  const W = widthOf(target);
  const all = names.flatMap((k) => series[k]);
  const lo = Math.min(...all.map((p) => p.x));
  const hi = Math.max(...all.map((p) => p.x));
  const span = hi - lo;
  const plotH = H - M.t - M.b;
  const px = (x) => (span ? M.l + ((x - lo) / span) * (W - M.l - M.r) : (M.l + W - M.r) / 2);
  const py = (y) => M.t + (1 - Math.min(y, yMax) / yMax) * plotH;
  const chart = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `${names.length} series, ${all.length} points` },
  axes(W, yMax, lo, hi, (v) => v.toFixed(1)));
  names.forEach((name, i) => {
    const points = series[name];
    const colour = PALETTE[i % PALETTE.length];
    chart.append(svg("polyline", { fill: "none", stroke: colour, "stroke-width": 2,
      points: points.map((p) => `${px(p.x)},${py(p.y)}`).join(" "), "data-series": name }));
    for (const p of points) {
      chart.append(svg("circle", { cx: px(p.x), cy: py(p.y), r: 4, fill: colour },
        svg("title", {}, `${name}: ${p.y.toFixed(2)} at ${when(p.x)}`)));
    }
  });
  const extra = all.length === 1 ? [el("p", { class: "plot-note" }, "One point so far.")] : [];
  target.replaceChildren(chart, legend(names, (n, i) => PALETTE[i % PALETTE.length]), ...extra);
}

function drawPlots() {
  const o = state.overview;
  if (!o || state.plotsFor === o) return;
  state.plotsFor = o;
  $("plots-note").textContent = o.covered < o.total
    ? `Plots cover the newest ${o.covered} of ${o.total} records.`
    : `Plots cover all ${o.total} records.`;
  // (before drawing: each plot is drawn at its shown width)
  // a panel with nothing to draw is not shown: the plots that have data take the room
  const hasEpisodes = Object.keys(o.episodes).length > 0;
  const hasHeuristics = o.heuristics.length > 0;
  $("plot-episodes").closest("figure").hidden = !hasEpisodes;
  $("plot-heuristics").closest("figure").hidden = !hasHeuristics;
  if (!hasEpisodes || !hasHeuristics) {
    const none = [!hasEpisodes && "episodes", !hasHeuristics && "heuristics"].filter(Boolean);
    $("plots-note").textContent += ` No ${none.join(" or ")} in this namespace.`;
  }
  stacked($("plot-kind"), o.by_kind, (n, i) => PALETTE[i % PALETTE.length]);
  stacked($("plot-tier"), o.by_tier, (n) => TIER_COLOURS[n] || "#888");
  const episodes = {};
  for (const [task, points] of Object.entries(o.episodes)) {
    episodes[task] = points.map((p) => ({ x: secs(p.at), y: p.score }));
  }
  lines($("plot-episodes"), episodes, 1, "No episodes recorded.");
  const heuristics = {};
  for (const h of o.heuristics) heuristics[h.label] = h.points.map((p) => ({ x: secs(p.at), y: p.confidence }));
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
  state.tab = tab.id;
  $("status").textContent = state.statuses[tab.id] || "";
  if (tab.id === "tab-plots") {
    if (state.overviewStale && state.ns) {
      state.overviewStale = false;
      api(`/v1/inspect/overview?${nsQuery()}`).then((o) => { state.overview = o; drawPlots(); })
        .catch((err) => showError(err.message));
    } else {
      drawPlots();
    }
  }
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
  setInterval(poll, LIVE_EVERY);
  let resizing = null;
  window.addEventListener("resize", () => {  // plots are drawn at their shown size
    clearTimeout(resizing);
    resizing = setTimeout(() => { state.plotsFor = null; if (!$("view-plots").hidden) drawPlots(); }, 200);
  });
  state.key = $("api-key").value;
  busy(true);
  loadNamespaces().then((ok) => {
    if (ok && $("namespace").value) connect();
    else busy(false, "waiting");
  });
});
