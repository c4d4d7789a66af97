// The inspector's entity view: the namespace's entities, and for one its memories over time
// and the names it shares memories with, drawn as SVG in the page (nothing from a CDN). It
// reads POST /v1/entities/list and /v1/entities/profile with the key the page holds.
"use strict";

const ENTITY_W = 640;

async function loadEntities(event) {
  if (event) event.preventDefault();
  if (!state.ns) return;
  const body = { namespace: state.ns, limit: 200 };
  const q = $("e-q").value.trim();
  const user = $("e-user").value.trim();
  if (q) body.query = q;
  if (user) body.user_id = user;
  try {
    const found = await api("/v1/entities/list", body);
    showError("");
    status(`${found.length} entities in ${state.ns}${user ? ` for ${user}` : ""}.`,
           "tab-entities");
    $("entity-list").replaceChildren(...found.map((e) => el("li", {},
      el("button", { type: "button", onclick: () => openEntity(e) },
        `${e.name} `, el("span", { class: "count" }, kindOf(e, " · ") + e.mentions)))));
    $("entity-detail").hidden = true;
  } catch (err) {
    showError(err.message);
  }
}

// the kind where the words placed the name (a person, a place, ...); "name" says nothing more
const kindOf = (e, after) => (e.kind && e.kind !== "name" ? `${e.kind}${after}` : "");

async function openEntity(e) {
  const body = { namespace: state.ns, name: e.name, limit: 50 };
  if (e.user_id) body.user_id = e.user_id;
  const p = await shown("/v1/entities/profile", body);
  if (p === undefined) return;
  for (const b of $("entity-list").querySelectorAll("button")) {
    b.setAttribute("aria-current", String(b.firstChild.textContent.trim() === e.name));
  }
  $("entity-detail").hidden = false;
  $("entity-name").textContent = p.name;
  const also = p.aliases.length ? `; also written ${p.aliases.join(", ")}` : "";
  $("entity-meta").textContent = `${kindOf(p, ", ")}in ${p.mentions} memories from ` +
    `${when(p.first_seen)} to ${when(p.last_seen)}${also}` +
    (p.user_id ? ` (user ${p.user_id})` : "");
  timeline($("entity-timeline"), p.records);
  neighbourhood($("entity-graph"), p);
  $("entity-records").replaceChildren(...p.records.map((r) => el("li", {},
    el("button", { type: "button", class: "link", onclick: () => openRecord(r.id) },
      `${when(r.created_at)}`), ` ${r.text}`)));
}

function timeline(target, records) {
  const H = 90, L = 16, R = 16;
  const times = records.map((r) => secs(r.created_at));
  const lo = Math.min(...times), hi = Math.max(...times);
  const span = hi - lo || 1;
  const x = (t) => L + (ENTITY_W - L - R) * (hi === lo ? 0.5 : (t - lo) / span);
  const root = svg("svg", { viewBox: `0 0 ${ENTITY_W} ${H}`, width: "100%", role: "img",
    "aria-label": `${records.length} memories from ${when(lo)} to ${when(hi)}` },
    svg("line", { x1: L, x2: ENTITY_W - R, y1: 40, y2: 40, stroke: "#9aa3b5" }),
    svg("text", { x: L, y: 78 }, when(lo).slice(0, 10)),
    svg("text", { x: ENTITY_W - R, y: 78, "text-anchor": "end" }, when(hi).slice(0, 10)),
    ...records.map((r) => svg("circle", { cx: x(secs(r.created_at)), cy: 40, r: 6,
      fill: "#2456c9", "fill-opacity": 0.75, "data-id": r.id },
      svg("title", {}, `${when(r.created_at)} ${r.text}`))));
  target.replaceChildren(root);
}

function neighbourhood(target, p) {
  const H = 320, cx = ENTITY_W / 2, cy = H / 2, radius = 120;
  const related = p.related.slice(0, 12);
  const most = Math.max(1, ...related.map((r) => r.record_ids.length));
  const nodes = related.map((r, i) => {
    const a = (2 * Math.PI * i) / Math.max(1, related.length) - Math.PI / 2;
    return { r, x: cx + radius * Math.cos(a), y: cy + radius * Math.sin(a) };
  });
  const root = svg("svg", { viewBox: `0 0 ${ENTITY_W} ${H}`, width: "100%", role: "img",
    "aria-label": `${p.name} and ${related.length} names it shares memories with` },
    ...nodes.map((n) => svg("line", { x1: cx, y1: cy, x2: n.x, y2: n.y, stroke: "#9aa3b5",
      "stroke-width": 1 + (4 * n.r.record_ids.length) / most, "data-name": n.r.name },
      svg("title", {}, `${n.r.record_ids.length} memories mention both`))),
    svg("circle", { cx, cy, r: 10, fill: "#2456c9" }),
    svg("text", { x: cx, y: cy - 16, "text-anchor": "middle", "font-weight": 600 }, p.name),
    ...nodes.flatMap((n) => [
      svg("circle", { cx: n.x, cy: n.y, r: 6, fill: "#2e7d32", class: "neighbour",
        "data-name": n.r.name }),
      svg("text", { x: n.x, y: n.y + 18, "text-anchor": "middle" },
        `${n.r.name} (${n.r.record_ids.length})`)]));
  target.replaceChildren(related.length ? root : el("p", {}, "It shares no memory with another name."));
}

document.addEventListener("DOMContentLoaded", () => {
  $("entity-form").addEventListener("submit", loadEntities);
  $("tab-entities").addEventListener("click", () => loadEntities());
});

document.addEventListener("DOMContentLoaded", () => {
  // the tab chosen with the keyboard lists them too; another namespace clears the view
  $("tabs").addEventListener("keydown", () => {
    if ($("tab-entities").getAttribute("aria-selected") === "true" &&
        !$("entity-list").children.length) loadEntities();
  });
  $("connect").addEventListener("submit", () => {
    $("entity-list").replaceChildren();
    $("entity-detail").hidden = true;
  });
});
