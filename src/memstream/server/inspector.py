"""The read-only operations behind the memory inspector (the page at ``/``), run by the catalog
(``catalog.INSPECT_OPERATIONS``).

Their routes live under /v1 like every other route, so the page goes through the same key, role
and namespace checks as any client: it holds no privilege of its own. Aggregates (the plots) are
computed over the newest ``window`` records of a namespace so that a large memory still answers
quickly; the answer says how many records it covered.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from .._types import Record
from ..engine.changes import findings
from ..engine.memory import Memory
from ..engine.records import records_of
from ..errors import InvalidInput, NotFound
from ..filters import Selection
from ..scope import selection
from ..tiers import TieredMemory
from ..tiers.tiered import SPACE
from . import models as m
from .operation import Call

TIERS = ("stm", "im", "ltm")
BUCKETS = (1, 10, 60, 600, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400, 365 * 86400)
MAX_BUCKETS = 60
HEURISTIC_SERIES = 12


def namespaces(c: Call, _: m.NoFields) -> dict[str, Any]:
    """The namespaces this key may read (for an open server: every namespace in the store)."""
    mem, who = c.memory, c.who
    if who is not None and who.namespaces is not None:
        return {"namespaces": list(who.namespaces), "default": who.namespaces[0]}
    stored = records_of(mem).namespaces()
    default = mem.config.namespace
    return {"namespaces": sorted(set(stored) | {default}), "default": default}


def _tier_sets(c: Call, mem: Memory, ns: str) -> tuple[set[str], set[str]] | None:
    """Ids cached in STM and IM for a namespace with agents' records (None without)."""
    if not records_of(mem).select_ids(Selection(ns, space=SPACE, include_invalid=True),
                                      limit=1):
        return None
    tm = TieredMemory.of(mem, ns, redis_url=c.redis_url)
    out: list[set[str]] = []
    for backend in (tm.stm, tm.im):
        ids: set[str] = set()
        for agent in tm.tier_call(backend.agents, []):
            ids.update(i for _, i in tm.tier_call(lambda b=backend, a=agent: b.index(a), []))
        out.append(ids)
    return out[0], out[1]


def _tier_of(rec: Record, sets: tuple[set[str], set[str]] | None) -> str | None:
    """stm, im or ltm for an agent's record; None where tiers do not apply."""
    if sets is None or rec.space != SPACE:
        return None
    if rec.id in sets[0]:
        return "stm"
    if rec.id in sets[1]:
        return "im"
    return "ltm"


def _selection(mem: Memory, ns: str, body: m.ListRequest) -> Selection:
    """The records an inspector lists: those of every vector space (the agents' too)."""
    return dataclasses.replace(selection(body.scope(ns), body.as_query(),
                                           default_namespace=mem.config.namespace), space=None)


def inspect_records(c: Call, body: m.InspectListRequest) -> dict[str, Any]:
    """A page of records, newest first, each with its tier; filter by tier as well."""
    mem, ns = c.memory, c.namespace
    wanted = set(body.tiers or TIERS)
    if not wanted <= set(TIERS):
        raise InvalidInput(f"tiers must be among {', '.join(TIERS)}")
    sel = _selection(mem, ns, body)
    sets = _tier_sets(c, mem, ns)
    if sets is None:  # tiers do not apply here: a tier filter keeps everything
        wanted = set(TIERS)
    out: list[dict[str, Any]] = []
    offset, skipped = 0, 0
    while len(out) < body.limit:  # tier filtering happens after the page is read
        page = records_of(mem).select(sel, limit=500, offset=offset, order="-created")
        if not page:
            break
        offset += len(page)
        for rec in page:
            tier = _tier_of(rec, sets)
            if tier not in wanted and (tier is not None or wanted != set(TIERS)):
                continue  # a tier filter keeps the agents' records of those tiers
            if skipped < body.offset:
                skipped += 1
                continue
            out.append(dict(rec.to_dict(), tier=tier))
            if len(out) == body.limit:
                break
        if wanted == set(TIERS):
            break
    # with a tier filter the total would need a scan of every record: it is left unknown
    total = records_of(mem).count(sel) if wanted == set(TIERS) else None
    return {"namespace": ns, "total": total, "records": out}


def inspect_record(c: Call, r: m.InspectRecordRequest) -> dict[str, Any]:
    """One record with its tier, history, the records it rests on (its provenance), the
    records that cite it, the older versions it replaces (and those it probably replaces: a
    tentative change, not linked) and what ``audit`` found about it."""
    mem, ns, record_id = c.memory, c.namespace, r.record_id
    rec = mem.get(record_id, namespace=ns)
    sets = _tier_sets(c, mem, ns)
    evidence = records_of(mem).get(ns, list(rec.provenance))
    missing = [i for i in rec.provenance if i not in {e.id for e in evidence}]
    newest = _newest(mem, ns, 20_000)
    cited_by = [r for r in newest if record_id in r.provenance]
    replaces = [r for r in newest if r.superseded_by == record_id]
    known = findings(mem, ns)
    found = known.get(record_id)
    probably = records_of(mem).get(ns, [rid for rid, f in known.items()
                                        if f.tentative and f.related == record_id][:100])
    # the record that replaces it (linked, or probably: a tentative finding), shown by its
    # words and date rather than its id
    after = rec.superseded_by or (found.related if found is not None and found.tentative
                                  and found.kind == "superseded" else None)
    successor = records_of(mem).get(ns, [after]) if after else []
    try:
        history = [h.to_dict() for h in mem.history(record_id, namespace=ns)]
    except NotFound:  # an agent's state or action is written without history rows
        history = []
    return {"record": dict(rec.to_dict(), tier=_tier_of(rec, sets)),
            "history": history,
            "evidence": [_brief(r) for r in evidence], "missing_evidence": missing,
            "cited_by": [_brief(r) for r in cited_by[:100]],
            "replaces": [_brief(r) for r in replaces[:100]],
            "probably_replaces": [_brief(r) for r in probably],
            "finding": found.to_dict() if found else None,
            "successor": _brief(successor[0]) if successor else None}


def _brief(r: Record) -> dict[str, Any]:
    return {"id": r.id, "kind": r.kind, "text": r.text[:300], "created_at": r.created_at,
            "invalidated_at": r.invalidated_at}


def _newest(mem: Memory, ns: str, window: int, kinds: Sequence[str] | None = None
            ) -> list[Record]:
    sel = Selection(namespace=ns, kinds=tuple(kinds) if kinds else None, include_invalid=True,
                    space=None)
    return records_of(mem).select(sel, limit=window, order="-created")


def _bucket(span: float) -> int:
    return next((b for b in BUCKETS if span / b <= MAX_BUCKETS), BUCKETS[-1])


def _timeline(records: Sequence[Record], key: Iterable[str]) -> dict[str, Any]:
    """Counts per time bucket for each label in ``key`` (one label per record)."""
    labels = list(key)
    if not records:
        return {"bucket_seconds": BUCKETS[0], "starts": [], "end": None, "series": {}}
    lo = min(r.created_at for r in records)
    hi = max(r.created_at for r in records)
    size = _bucket(hi - lo)
    first = math.floor(lo / size) * size
    n = int((hi - first) // size) + 1
    series: dict[str, list[int]] = defaultdict(lambda: [0] * n)
    for rec, label in zip(records, labels, strict=True):
        series[label][int((rec.created_at - first) // size)] += 1
    return {"bucket_seconds": size, "starts": [first + i * size for i in range(n)],
            "end": first + n * size, "series": dict(sorted(series.items()))}


def overview(c: Call, body: m.OverviewRequest) -> dict[str, Any]:
    """What the plots show, over the newest ``window`` records: records over time by kind and
    by tier, episode scores per task, and the confidence of heuristics over time."""
    mem, ns = c.memory, c.namespace
    records = _newest(mem, ns, body.window)
    sets = _tier_sets(c, mem, ns)
    tiers = [_tier_of(r, sets) or "ltm" for r in records]
    episodes: dict[str, list[dict[str, float]]] = defaultdict(list)
    for r in reversed(records):
        if r.kind == "episode" and r.data and "score" in r.data:
            episodes[str(r.data.get("task_id", "unknown"))].append(
                {"at": r.created_at, "score": float(r.data["score"])})
    heuristics = []
    for r in [r for r in records if r.kind == "heuristic"][:HEURISTIC_SERIES]:
        points = []
        for h in mem.history(r.id, namespace=ns):
            conf = ((h.new or {}).get("data") or {}).get("confidence")
            if conf is not None:
                points.append({"at": h.at, "confidence": float(conf)})
        heuristics.append({"id": r.id, "label": r.text[:80], "points": points})
    total = records_of(mem).count(Selection(namespace=ns, include_invalid=True, space=None))
    return {"namespace": ns, "total": total,
            # the superseded and invalidated ones, which the list leaves out unless asked
            "invalid": total - records_of(mem).count(Selection(namespace=ns, space=None)),
            "covered": len(records),
            "kinds": dict(Counter(r.kind for r in records).most_common()),
            "agents": sorted({r.agent_id for r in records if r.agent_id})[:500],
            "users": sorted({r.user_id for r in records if r.user_id})[:500],
            "tiers": dict(Counter(tiers)), "has_tiers": sets is not None,
            "by_kind": _timeline(records, (r.kind for r in records)),
            "by_tier": _timeline(records, tiers),
            "episodes": dict(sorted(episodes.items())), "heuristics": heuristics}
