"""Record reads and writes whose SQL is the same on every backend (a mixin of both stores).

A backend supplies its dialect: the parameter placeholder, how a JSON value is bound and read
back, how a patched field is bound, how rows are fetched by id (SQLite binds chunks of ``IN``
lists and keeps its planner on the id index; PostgreSQL binds one array) and how a row is
locked and rewritten by an update. What is left here is the logic both share: the update with
its history entry and events, the history table, counts, reads by id and a record's neighbours
in its stream.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from .._types import HistoryEntry, Record
from ..filters import Selection
from ._common import Refresh, change_of, plan_refresh
from ._events import EventLog
from .protocol import Patch, Signals

#: a selection up to this many records reads its whole stream once to find neighbours
SMALL_SELECTION = 5000

_HISTORY = "INSERT INTO history(namespace, record_id, event, at, old, new) VALUES "


class SQLRecords:
    """``update``, ``history``, ``count``, ``get``, ``texts``, ``signals`` and ``neighbours``
    over a backend's dialect (the methods below that raise ``NotImplementedError``)."""

    PLACEHOLDER: str  # the backend's parameter placeholder
    _ALL: str  # "SELECT <every column> FROM records r"
    #: the namespace column as a lookup by id names it (SQLite: "+namespace", which keeps its
    #: planner on the id index)
    _NS_BY_ID = "namespace"

    # --- the dialect ------------------------------------------------------------------------

    def _session(self, write: bool) -> AbstractContextManager[Any]:
        """A connection or cursor; with ``write``, inside one transaction."""
        raise NotImplementedError

    def _json(self, value: Any) -> Any:
        """A JSON value (None stays NULL) as a bound parameter."""
        raise NotImplementedError

    def _unjson(self, value: Any) -> Any:
        """A JSON column's value as read back."""
        raise NotImplementedError

    def _field(self, name: str, value: Any) -> Any:
        """A patched field's new value as a bound parameter."""
        raise NotImplementedError

    def _by_id(self, db: Any, head: str, namespace: str, ids: Sequence[str]) -> list[Any]:
        """The rows of ``head`` (a SELECT over ``records r``) for the records ``ids`` of a
        namespace, in any order."""
        raise NotImplementedError

    def _for_update(self, db: Any, namespace: str, record_id: str) -> Record | None:
        """The record an update is about to change, locked until the transaction ends."""
        raise NotImplementedError

    def _rewrite(self, db: Any, namespace: str, record_id: str, sets: dict[str, Any]
                 ) -> Record:
        """Set the columns ``sets`` of one record; the record as it now is."""
        raise NotImplementedError

    def _stream(self, db: Any, where: str, params: Sequence[Any]) -> list[str]:
        """The ids of a (small) selection in stream order: by creation time, then id."""
        raise NotImplementedError

    def _record(self, row: Any) -> Record:
        raise NotImplementedError

    def _before_insert(self, records: Sequence[Record], ann: bool) -> None:
        """Anything to prepare outside the insert's transaction (an index for a new size of
        vector)."""

    def _repeats(self, db: Any, records: Sequence[Record]) -> Callable[[Record], list[Record]]:
        """For ``insert(refresh=True)``: the lookup ``plan_refresh`` needs, safe against two
        writers adding the same text at once."""
        raise NotImplementedError

    def _insert_rows(self, db: Any, records: Sequence[Record], *, event: str,
                     model: str | None, rate: Collection[str], history: bool) -> None:
        """Insert new records (and their "add" history entries with ``history``)."""
        raise NotImplementedError

    _events: EventLog  # the store's event log (its ``events`` part)

    # --- writes -----------------------------------------------------------------------------

    def _write_history(self, db: Any, entries: Iterable[tuple[str, str, str, float, Any, Any]]
                       ) -> None:
        """Add history entries, each ``(namespace, record_id, event, at, old, new)`` with old
        and new as JSON values (None is NULL)."""
        rows = [(ns, rid, event, at, self._json(old), self._json(new))
                for ns, rid, event, at, old, new in entries]
        if rows:
            db.executemany(_HISTORY + f"({', '.join([self.PLACEHOLDER] * 6)})", rows)

    def _write_entries(self, db: Any, entries: Iterable[HistoryEntry]) -> None:
        self._write_history(db, [(e.namespace, e.record_id, e.event, e.at, e.old, e.new)
                                 for e in entries])

    def insert(self, records: Sequence[Record], *, event: str = "add",
               model: str | None = None, rate: Collection[str] = (),
               history: bool = True, ann: bool = True, refresh: bool = False
               ) -> dict[str, Record]:
        if not records:
            return {}
        self._before_insert(records, ann)
        with self._session(True) as db:
            plan = plan_refresh(records, self._repeats(db, records)) if refresh else None
            fresh = records if plan is None else plan.fresh
            if fresh:
                self._insert_rows(db, fresh, event=event, model=model, rate=rate,
                                  history=history)
                self._events.log(db, self._events.change_rows(event, fresh))
            return {} if plan is None else self._apply_refresh(db, plan)

    def _apply_refresh(self, db: Any, plan: Refresh) -> dict[str, Record]:
        """Write what ``insert(refresh=True)`` found repeated: the stored records' new last
        access and count, their history entries and events."""
        ph = self.PLACEHOLDER
        self._events.log(db, self._events.change_rows("refresh", plan.stored))
        if plan.stored:
            db.executemany(f"UPDATE records SET last_accessed_at = {ph}, access_count = {ph} "
                           f"WHERE {self._NS_BY_ID} = {ph} AND id = {ph}",
                           [(r.last_accessed_at, r.access_count, r.namespace, r.id)
                            for r in plan.stored])
        self._write_entries(db, plan.entries)
        return plan.found

    def update(self, namespace: str, record_id: str, patch: Patch, *, at: float) -> Record:
        with self._session(True) as db:
            before, change = change_of(self._for_update(db, namespace, record_id), namespace,
                                       record_id, patch)
            if change is None:
                return before
            sets = {k: self._field(k, v) for k, v in change.fields.items()}
            sets["updated_at"] = at
            if change.requeue and before.space == "":  # a named space's vector is its owner's
                sets.update(embedding=None, embed_model=None, needs_embedding=True,
                            embed_owner=None, embed_until=None)
            after = self._rewrite(db, namespace, record_id, sets)
            self._write_history(db, [(namespace, record_id, change.event, at, change.old,
                                      change.new)])
            self._events.log(db, self._events.change_rows(
                change.event, [before], fields=sorted(change.new),
                superseded_by=change.fields.get("superseded_by"), text=change.fields.get("text")))
        return after

    # --- reads ------------------------------------------------------------------------------

    def history(self, namespace: str, record_id: str) -> list[HistoryEntry]:
        ph = self.PLACEHOLDER
        with self._session(False) as db:
            rows = db.execute("SELECT record_id, namespace, event, at, old, new FROM history "
                              f"WHERE namespace = {ph} AND record_id = {ph} ORDER BY seq",
                              (namespace, record_id)).fetchall()
        return [HistoryEntry(r[0], r[1], r[2], r[3], self._unjson(r[4]), self._unjson(r[5]))
                for r in rows]

    def _count_sql(self, where: str, limit: bool) -> str:
        if not limit:
            return f"SELECT count(*) FROM records r WHERE {where}"
        # stops counting early: "more than limit" is all a caller needs
        return (f"SELECT count(*) FROM (SELECT 1 FROM records r WHERE {where} "
                f"LIMIT {self.PLACEHOLDER}) t")

    def _where(self, sel: Selection) -> tuple[str, list[Any]]:
        """The WHERE clause of a selection in the backend's SQL."""
        raise NotImplementedError

    def count(self, sel: Selection, *, limit: int | None = None) -> int:
        where, params = self._where(sel)
        if limit is not None:
            params = [*params, limit + 1]
        with self._session(False) as db:
            row = db.execute(self._count_sql(where, limit is not None), params).fetchone()
        return int(row[0])

    def get(self, namespace: str, ids: Sequence[str]) -> list[Record]:
        with self._session(False) as db:
            rows = self._by_id(db, self._ALL, namespace, ids)
        found = {rec.id: rec for rec in map(self._record, rows)}
        return [found[i] for i in ids if i in found]

    def texts(self, namespace: str, ids: Sequence[str]) -> dict[str, str]:
        with self._session(False) as db:
            return {rid: text for rid, text in self._by_id(
                db, "SELECT r.id, r.text FROM records r", namespace, ids)}

    def signals(self, namespace: str, ids: Sequence[str]) -> list[Signals]:
        with self._session(False) as db:
            rows = self._by_id(db, "SELECT r.id, r.importance, r.created_at, "
                                   "r.last_accessed_at FROM records r", namespace, ids)
        found = {row[0]: Signals(*row) for row in rows}
        return [found[i] for i in ids if i in found]
