"""A store's ``records`` part (``protocol.RecordStore``): what is the same on every backend
(inserts, updates with their history and events, reads by id and by selection, counts) is
here (``Records``), over the backend's dialect (how it binds JSON, fetches rows by id, locks a
row, runs a selection: the store's ``_by_id``, ``_for_update``, ``_rewrite``, ...); deletes,
erasure and touches are the backend's subclass's (``sqlite.records.SQLiteRecords``,
``postgres.records.PgRecords``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, Protocol

from ..._types import HistoryEntry, Record, Signals
from ...filters import Selection
from ..protocol import Patch
from .backend import Backend
from .common import Refresh, change_of, plan_refresh
from .events import EventLog
from .graph import Graph

__all__ = ["Records", "RecordsHost", "count_sql"]

_HISTORY = "INSERT INTO history(namespace, record_id, event, at, old, new) VALUES "


def count_sql(placeholder: str, where: str, limit: bool) -> str:
    """The count of a selection's records; with ``limit``, up to a bound (the last parameter):
    "more than the bound" is all such a caller needs, and the count stops there."""
    if not limit:
        return f"SELECT count(*) FROM records r WHERE {where}"
    return (f"SELECT count(*) FROM (SELECT 1 FROM records r WHERE {where} "
            f"LIMIT {placeholder}) t")


class RecordsHost(Backend, Protocol):
    """What ``Records`` needs of its store: the dialect's SQL pieces (``ALL``, the select of
    every column; ``NS_BY_ID``, the namespace column as a look-up by id reads it), how it binds
    JSON and fields, reads rows by id, locks and rewrites a row, runs a selection, writes new
    rows; and the event log and entity graph a write records into."""

    ALL: str
    NS_BY_ID: str
    event_log: EventLog
    entity_graph: Graph

    def to_json(self, value: Any) -> Any: ...

    def from_json(self, value: Any) -> Any: ...

    def field(self, name: str, value: Any) -> Any: ...

    def where(self, sel: Selection) -> tuple[str, list[Any]]: ...

    def by_id(self, db: Any, head: str, namespace: str, ids: Sequence[str]) -> list[Any]: ...

    def for_update(self, db: Any, namespace: str, record_id: str) -> Record | None: ...

    def rewrite(self, db: Any, namespace: str, record_id: str, sets: dict[str, Any]
                ) -> Record: ...

    def record(self, row: Any) -> Record: ...

    def repeats(self, db: Any, records: Sequence[Record]) -> Callable[[Record], list[Record]]:
        ...

    def before_insert(self, records: Sequence[Record], ann: bool) -> None: ...

    def insert_rows(self, db: Any, records: Sequence[Record], *, event: str,
                    model: str | None, rate: Collection[str], history: bool) -> None: ...

    def selected(self, head: str, sel: Selection, limit: int | None, offset: int,
                 order: str) -> list[Any]: ...


class Records:
    """The records of a store; a backend adds ``delete``, ``erase``, ``history_ids``,
    ``touch`` and ``taken``."""

    def __init__(self, store: RecordsHost) -> None:
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

    def write_history(self, db: Any, entries: Iterable[tuple[str, str, str, float, Any, Any]]
                       ) -> None:
        """Add history entries, each ``(namespace, record_id, event, at, old, new)`` with old
        and new as JSON values (None is NULL)."""
        rows = [(ns, rid, event, at, self._s.to_json(old), self._s.to_json(new))
                for ns, rid, event, at, old, new in entries]
        if rows:
            db.executemany(_HISTORY + f"({', '.join([self._s.PLACEHOLDER] * 6)})", rows)

    def _write_entries(self, db: Any, entries: Iterable[HistoryEntry]) -> None:
        self.write_history(db, [(e.namespace, e.record_id, e.event, e.at, e.old, e.new)
                                 for e in entries])

    def insert(self, records: Sequence[Record], *, event: str = "add",
               model: str | None = None, rate: Collection[str] = (),
               history: bool = True, ann: bool = True, refresh: bool = False,
               link: bool = True) -> dict[str, Record]:
        if not records:
            return {}
        self._s.before_insert(records, ann)
        with self._s.session(True) as db:
            plan = plan_refresh(records, self._s.repeats(db, records)) if refresh else None
            fresh = records if plan is None else plan.fresh
            if fresh:
                self._s.insert_rows(db, fresh, event=event, model=model, rate=rate,
                                  history=history)
                if link:
                    self._s.entity_graph.link(db, fresh)
                self._s.event_log.log(db, self._s.event_log.change_rows(event, fresh))
            return {} if plan is None else self._apply_refresh(db, plan)

    def _apply_refresh(self, db: Any, plan: Refresh) -> dict[str, Record]:
        """Write what ``insert(refresh=True)`` found repeated: the stored records' new last
        access and count, their history entries and events."""
        ph = self._s.PLACEHOLDER
        self._s.event_log.log(db, self._s.event_log.change_rows("refresh", plan.stored))
        if plan.stored:
            db.executemany(f"UPDATE records SET last_accessed_at = {ph}, access_count = {ph} "
                           f"WHERE {self._s.NS_BY_ID} = {ph} AND id = {ph}",
                           [(r.last_accessed_at, r.access_count, r.namespace, r.id)
                            for r in plan.stored])
        self._write_entries(db, plan.entries)
        return plan.found

    def update(self, namespace: str, record_id: str, patch: Patch, *, at: float) -> Record:
        with self._s.session(True) as db:
            before, change = change_of(self._s.for_update(db, namespace, record_id), namespace,
                                       record_id, patch)
            if change is None:
                return before
            sets = {k: self._s.field(k, v) for k, v in change.fields.items()}
            sets["updated_at"] = at
            if change.requeue and before.space == "":  # a named space's vector is its owner's
                sets.update(embedding=None, embed_model=None, needs_embedding=True,
                            embed_owner=None, embed_until=None)
            after: Record = self._s.rewrite(db, namespace, record_id, sets)
            if "text" in change.fields:
                self._s.entity_graph.relink(db, after)
            self.write_history(db, [(namespace, record_id, change.event, at, change.old,
                                      change.new)])
            self._s.event_log.log(db, self._s.event_log.change_rows(
                change.event, [before], fields=sorted(change.new),
                superseded_by=change.fields.get("superseded_by"), text=change.fields.get("text")))
        return after

    def history(self, namespace: str, record_id: str) -> list[HistoryEntry]:
        ph = self._s.PLACEHOLDER
        with self._s.session(False) as db:
            rows = db.execute("SELECT record_id, namespace, event, at, old, new FROM history "
                              f"WHERE namespace = {ph} AND record_id = {ph} ORDER BY seq",
                              (namespace, record_id)).fetchall()
        load = self._s.from_json
        return [HistoryEntry(r[0], r[1], r[2], r[3], load(r[4]), load(r[5])) for r in rows]

    def count(self, sel: Selection, *, limit: int | None = None) -> int:
        where, params = self._s.where(sel)
        if limit is not None:
            params = [*params, limit + 1]
        with self._s.session(False) as db:
            row = db.execute(count_sql(self._s.PLACEHOLDER, where, limit is not None),
                             params).fetchone()
        return int(row[0])

    def get(self, namespace: str, ids: Sequence[str]) -> list[Record]:
        with self._s.session(False) as db:
            rows = self._s.by_id(db, self._s.ALL, namespace, ids)
        found = {rec.id: rec for rec in map(self._s.record, rows)}
        return [found[i] for i in ids if i in found]

    def texts(self, namespace: str, ids: Sequence[str]) -> dict[str, str]:
        with self._s.session(False) as db:
            return {rid: text for rid, text in self._s.by_id(
                db, "SELECT r.id, r.text FROM records r", namespace, ids)}

    def signals(self, namespace: str, ids: Sequence[str]) -> list[Signals]:
        with self._s.session(False) as db:
            rows = self._s.by_id(db, "SELECT r.id, r.importance, r.created_at, "
                                   "r.last_accessed_at FROM records r", namespace, ids)
        found = {row[0]: Signals(*row) for row in rows}
        return [found[i] for i in ids if i in found]

    def select(self, sel: Selection, *, limit: int | None = None, offset: int = 0,
               order: str = "created") -> list[Record]:
        return [self._s.record(row) for row in self._s.selected(self._s.ALL, sel, limit, offset,
                                                            order)]

    def select_ids(self, sel: Selection, *, limit: int | None = None, offset: int = 0,
                   order: str = "created") -> list[str]:
        return [row[0] for row in self._s.selected("SELECT r.id FROM records r", sel, limit,
                                                 offset, order)]
