"""A store's ``records`` part (``protocol.RecordStore``): what is the same on every backend
(inserts, updates with their history and events, reads by id and by selection, counts) is
here (``Records``), over the backend's dialect (how it binds JSON, fetches rows by id, locks a
row, runs a selection: the store's ``_by_id``, ``_for_update``, ``_rewrite``, ...); deletes,
erasure and touches are the backend's subclass's (``sqlite.records.SQLiteRecords``,
``postgres.records.PgRecords``)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from ..._types import HistoryEntry, Record, Signals
from ...filters import Selection
from ..protocol import Patch
from .common import Refresh, change_of, plan_refresh

__all__ = ["Records"]

_HISTORY = "INSERT INTO history(namespace, record_id, event, at, old, new) VALUES "


class Records:
    """The records of a store; a backend adds ``delete``, ``erase``, ``history_ids``,
    ``touch`` and ``taken``."""

    def __init__(self, store: Any) -> None:
        self._s = store

    def delete(self, namespace: str, ids: Sequence[str], *, at: float) -> int:
        raise NotImplementedError

    def erase(self, namespace: str, ids: Sequence[str], *, at: float,
              cache_keys: Sequence[str] = ()) -> int:
        raise NotImplementedError

    def history_ids(self, namespace: str, scope: Any) -> list[str]:
        raise NotImplementedError

    def touch(self, namespace: str, ids: Sequence[str], *, at: float) -> None:
        raise NotImplementedError

    def taken(self, ids: Sequence[str]) -> set[str]:
        raise NotImplementedError

    def _write_history(self, db: Any, entries: Iterable[tuple[str, str, str, float, Any, Any]]
                       ) -> None:
        """Add history entries, each ``(namespace, record_id, event, at, old, new)`` with old
        and new as JSON values (None is NULL)."""
        rows = [(ns, rid, event, at, self._s._json(old), self._s._json(new))
                for ns, rid, event, at, old, new in entries]
        if rows:
            db.executemany(_HISTORY + f"({', '.join([self._s.PLACEHOLDER] * 6)})", rows)

    def _write_entries(self, db: Any, entries: Iterable[HistoryEntry]) -> None:
        self._write_history(db, [(e.namespace, e.record_id, e.event, e.at, e.old, e.new)
                                 for e in entries])

    def insert(self, records: Sequence[Record], *, event: str = "add",
               model: str | None = None, rate: Collection[str] = (),
               history: bool = True, ann: bool = True, refresh: bool = False
               ) -> dict[str, Record]:
        if not records:
            return {}
        self._s._before_insert(records, ann)
        with self._s._session(True) as db:
            plan = plan_refresh(records, self._s._repeats(db, records)) if refresh else None
            fresh = records if plan is None else plan.fresh
            if fresh:
                self._s._insert_rows(db, fresh, event=event, model=model, rate=rate,
                                  history=history)
                self._s._graph.link(db, fresh)
                self._s._events.log(db, self._s._events.change_rows(event, fresh))
            return {} if plan is None else self._apply_refresh(db, plan)

    def _apply_refresh(self, db: Any, plan: Refresh) -> dict[str, Record]:
        """Write what ``insert(refresh=True)`` found repeated: the stored records' new last
        access and count, their history entries and events."""
        ph = self._s.PLACEHOLDER
        self._s._events.log(db, self._s._events.change_rows("refresh", plan.stored))
        if plan.stored:
            db.executemany(f"UPDATE records SET last_accessed_at = {ph}, access_count = {ph} "
                           f"WHERE {self._s._NS_BY_ID} = {ph} AND id = {ph}",
                           [(r.last_accessed_at, r.access_count, r.namespace, r.id)
                            for r in plan.stored])
        self._write_entries(db, plan.entries)
        return plan.found

    def update(self, namespace: str, record_id: str, patch: Patch, *, at: float) -> Record:
        with self._s._session(True) as db:
            before, change = change_of(self._s._for_update(db, namespace, record_id), namespace,
                                       record_id, patch)
            if change is None:
                return before
            sets = {k: self._s._field(k, v) for k, v in change.fields.items()}
            sets["updated_at"] = at
            if change.requeue and before.space == "":  # a named space's vector is its owner's
                sets.update(embedding=None, embed_model=None, needs_embedding=True,
                            embed_owner=None, embed_until=None)
            after: Record = self._s._rewrite(db, namespace, record_id, sets)
            if "text" in change.fields:
                self._s._graph.relink(db, after)
            self._write_history(db, [(namespace, record_id, change.event, at, change.old,
                                      change.new)])
            self._s._events.log(db, self._s._events.change_rows(
                change.event, [before], fields=sorted(change.new),
                superseded_by=change.fields.get("superseded_by"), text=change.fields.get("text")))
        return after

    def history(self, namespace: str, record_id: str) -> list[HistoryEntry]:
        ph = self._s.PLACEHOLDER
        with self._s._session(False) as db:
            rows = db.execute("SELECT record_id, namespace, event, at, old, new FROM history "
                              f"WHERE namespace = {ph} AND record_id = {ph} ORDER BY seq",
                              (namespace, record_id)).fetchall()
        return [HistoryEntry(r[0], r[1], r[2], r[3], self._s._unjson(r[4]), self._s._unjson(r[5]))
                for r in rows]

    def _count_sql(self, where: str, limit: bool) -> str:
        if not limit:
            return f"SELECT count(*) FROM records r WHERE {where}"
        # stops counting early: "more than limit" is all a caller needs
        return (f"SELECT count(*) FROM (SELECT 1 FROM records r WHERE {where} "
                f"LIMIT {self._s.PLACEHOLDER}) t")

    def count(self, sel: Selection, *, limit: int | None = None) -> int:
        where, params = self._s._where(sel)
        if limit is not None:
            params = [*params, limit + 1]
        with self._s._session(False) as db:
            row = db.execute(self._count_sql(where, limit is not None), params).fetchone()
        return int(row[0])

    def get(self, namespace: str, ids: Sequence[str]) -> list[Record]:
        with self._s._session(False) as db:
            rows = self._s._by_id(db, self._s._ALL, namespace, ids)
        found = {rec.id: rec for rec in map(self._s._record, rows)}
        return [found[i] for i in ids if i in found]

    def texts(self, namespace: str, ids: Sequence[str]) -> dict[str, str]:
        with self._s._session(False) as db:
            return {rid: text for rid, text in self._s._by_id(
                db, "SELECT r.id, r.text FROM records r", namespace, ids)}

    def signals(self, namespace: str, ids: Sequence[str]) -> list[Signals]:
        with self._s._session(False) as db:
            rows = self._s._by_id(db, "SELECT r.id, r.importance, r.created_at, "
                                   "r.last_accessed_at FROM records r", namespace, ids)
        found = {row[0]: Signals(*row) for row in rows}
        return [found[i] for i in ids if i in found]

    def select(self, sel: Selection, *, limit: int | None = None, offset: int = 0,
               order: str = "created") -> list[Record]:
        return [self._s._record(row) for row in self._s._selected(self._s._ALL, sel, limit, offset,
                                                            order)]

    def select_ids(self, sel: Selection, *, limit: int | None = None, offset: int = 0,
                   order: str = "created") -> list[str]:
        return [row[0] for row in self._s._selected("SELECT r.id FROM records r", sel, limit,
                                                 offset, order)]
