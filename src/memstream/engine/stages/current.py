"""What is current, applied to a search's ranking: each superseded record's current version in
its place, a probable successor (a tentative change) before what it probably replaces, with the
past asked for (or a question about the past: ``retrieval.past``) the versions a record
replaced after it, and junk and duplicates below every other hit (docs/retrieval.md, "How
memstream knows what is current"). The findings come from ``engine.changes`` (``Verdicts``);
the records from the store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import ClassVar

from ..._types import Record, Signals
from ...filters import Selection, admits
from ...retrieval.dates import spans
from ...retrieval.pipeline import Scored
from ...retrieval.reads import Reads
from ..changes import Verdicts
from . import Search

__all__ = ["CURRENT", "EARLIER", "PROBABLE", "Current", "current_first"]

#: how many successors a chain of changes is followed through
CHAIN = 8
#: why a current version stands where the record it replaces matched (``explain.lifted``)
CURRENT = "the current version of a matching record"
#: why a probable newer version stands before a matching record (``explain.lifted``)
PROBABLE = "a probable newer version of a matching record"
#: why an earlier version follows a matching record, the past asked for (``explain.lifted``)
EARLIER = "an earlier version of a matching record"


class Current:
    name: ClassVar[str] = "current"

    def run(self, search: Search) -> bool:
        # a question about the past reads the versions since replaced, as the past asked for
        sel = (dataclasses.replace(search.sel, include_invalid=True) if search.asks_past
               else search.sel)
        search.ranked = current_first(search.reads, sel, search.ranked, search.verdicts,
                                      named=[(a, b) for a, b, _ in spans(search.text,
                                                                          search.now)])
        return True


def current_first(reads: Reads, sel: Selection, ranked: list[Scored[Signals]],
                  verdicts: Verdicts, named: Sequence[tuple[float, float]] = ()
                  ) -> list[Scored[Signals]]:
    """``ranked`` with each superseded record's current version (the end of its chain of
    ``superseded_by``) in its place, each record a tentative change probably replaced
    (``verdicts.probable``) after its probable successor, and junk and duplicates
    (``verdicts.demoted``) below every other hit. The old version is left out, as every
    invalidated record is, unless the selection includes them (the past on request): then it
    follows its current version, and the versions a matching record replaced follow it
    (``verdicts.earlier``). ``as_of`` asks what was valid then: a record replaced by then
    gives its place to the version valid then (the end of its chain at that time), and a
    probable successor counts only when it was written by then. A query that names a
    time (``named``: "at the start of May", "el 18 de abril") asks what was so then: a record
    valid at some time of it stands as itself, whatever replaced it since, and a probable
    successor counts only when it was written by the end of that time, if the record was
    there at that time (a time before it asks about something else); of several probable
    successors (``verdicts.successors``), such a read takes the likeliest written by then."""
    ids = [s.item.id for s in ranked]
    demoted, probable = verdicts.demoted, verdicts.probable
    timed = sel.as_of is not None or bool(named)
    records = {r.id: r for r in reads.records(ids)}
    if sel.as_of is None:
        stale = {i for i, r in records.items() if not r.valid and not _valid_during(r, named)}
    else:  # replaced by the time asked about
        stale = {i for i, r in records.items() if _replaced_by(r, sel.as_of)}
    maybe = {i for i in ids if (i in probable or (timed and i in verdicts.successors))
             and i not in stale}
    past = _earlier(reads, sel, ids, verdicts) if sel.include_invalid else {}
    if not stale and not maybe and not past and demoted.isdisjoint(ids):
        return ranked
    head: dict[str, str] = {}
    for rid in stale | maybe:
        cur, seen = records[rid], {rid}
        # the times asked about while the record was there (an earlier one, "in August" read
        # as last August for a plan written in November, asks about something else)
        asked = [b for _, b in named if b >= records[rid].created_at]
        until = sel.as_of if sel.as_of is not None else max(asked, default=None)
        for _ in range(CHAIN):
            replaced = not cur.valid if sel.as_of is None else _replaced_by(cur, sel.as_of)
            nxt_id = cur.superseded_by if replaced else probable.get(cur.id)
            if not replaced and until is not None and cur.id in verdicts.successors:
                nxt_id = _likeliest(reads, records, verdicts.successors[cur.id], until) or nxt_id
            if nxt_id is None or nxt_id in seen:
                break
            nxt = records.get(nxt_id) or next(iter(reads.records([nxt_id])), None)
            if nxt is None or (rid in maybe and (not admits(sel, nxt) or (
                    asked and not any(nxt.created_at <= b for b in asked)))):
                break  # a probable successor written after the time asked about
            records[nxt.id] = nxt
            seen.add(nxt.id)
            cur = nxt
        if cur.id != rid and admits(sel, cur) and (sel.as_of is not None or cur.valid):
            head[rid] = cur.id
    by_id = {s.item.id: s for s in ranked}
    missing = [h for h in head.values() if h not in by_id]
    signals = {s.id: s for s in reads.signals(missing)} if missing else {}
    out: list[Scored[Signals]] = []
    placed: set[str] = set()
    for s in ranked:
        rid = s.item.id
        if rid in placed:
            continue
        h = head.get(rid)
        if rid in stale and (h is None or (h not in by_id and h not in signals)):
            if sel.include_invalid:
                out.append(s)
                placed.add(rid)
            continue
        if h is not None and h not in placed and (h in by_id or (rid in stale and h in signals)):
            own = by_id.get(h)
            out.append(_in_place(s, own, own.item if own else signals[h],
                                 CURRENT if rid in stale else PROBABLE, (rid,)))
            placed.add(h)
        if rid in stale and not sel.include_invalid:
            continue
        out.append(s)
        placed.add(rid)
        for old in past.get(rid, ()):
            if old.id not in placed:
                out.append(_in_place(s, by_id.get(old.id), old, EARLIER, ()))
                placed.add(old.id)
    return [s for s in out if s.item.id not in demoted] + [s for s in out
                                                           if s.item.id in demoted]


def _likeliest(reads: Reads, records: dict[str, Record],
               successors: Sequence[tuple[str, float]], until: float) -> str | None:
    """The likeliest of a record's probable ``successors`` (id, probability) written by
    ``until`` (None: none was); the records read are kept in ``records``."""
    if missing := [i for i, _ in successors if i not in records]:
        records.update((r.id, r) for r in reads.records(missing))
    written = [(p, i) for i, p in successors if i in records and records[i].created_at <= until]
    return max(written)[1] if written else None


def _replaced_by(record: Record, when: float) -> bool:
    """Whether ``record`` was no longer valid at ``when``."""
    return record.invalidated_at is not None and record.invalidated_at <= when


def _valid_during(record: Record, named: Sequence[tuple[float, float]]) -> bool:
    """Whether ``record`` was valid at some time of one of the spans ``named``."""
    end = record.invalidated_at
    return any(record.created_at <= b and (end is None or end >= a) for a, b in named)


def _in_place(at: Scored[Signals], own: Scored[Signals] | None, item: Signals, lifted: str,
              updates: tuple[str, ...]) -> Scored[Signals]:
    """``item`` placed beside ``at`` (``own``: its scored form when it was a candidate): it
    shows at least ``at``'s score, ``lifted`` says why, and its evidence is its own when it
    has any."""
    if own is not None and own.score >= at.score:
        return own
    return Scored(item, at.score, dataclasses.replace((own or at).explain, lifted=lifted,
                                                      updates=updates))


def _earlier(reads: Reads, sel: Selection, ids: Sequence[str], verdicts: Verdicts
             ) -> dict[str, list[Signals]]:
    """For each of ``ids`` the selection's records it replaced (a change applied or
    tentative: ``verdicts.earlier``), by their signals."""
    wanted = {rid: verdicts.earlier[rid] for rid in ids if rid in verdicts.earlier}
    if not wanted:
        return {}
    olds = {r.id: r for r in reads.records([o for os in wanted.values() for o in os])
            if admits(sel, r)}
    signals = {s.id: s for s in reads.signals(list(olds))}
    return {rid: [signals[o] for o in os if o in signals] for rid, os in wanted.items()}
