"""The records part of the PostgreSQL store: its deletes, erasure, touches and id
lookups (``parts.records.Records`` has the rest)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..parts.records import Records
from .rows import row_to_record as _row_to_record
from .schema import COLUMNS

if TYPE_CHECKING:
    from .store import PostgresStore


class PgRecords(Records):
    """See ``protocol.RecordStore``."""

    _s: PostgresStore

    def delete(self, namespace: str, ids: Sequence[str], *, at: float) -> int:
        if not ids:
            return 0
        with self._s.conn(write=True) as cur:
            self._s.entity_graph.unlink(cur, namespace, sorted(set(ids)))
            rows = cur.execute(
                "DELETE FROM records r WHERE r.namespace = %s AND r.id = ANY(%s) RETURNING "
                + ", ".join(f"r.{c}" for c in COLUMNS),
                (namespace, sorted(set(ids)))).fetchall()
            gone = [_row_to_record(row) for row in rows]
            self.write_history(cur, [(namespace, r.id, "delete", at, r.to_dict(), None)
                                      for r in gone])
            self._s.event_log.log(cur, self._s.event_log.change_rows("delete", gone))
        return len(rows)

    def erase(self, namespace: str, ids: Sequence[str], *, at: float,
              cache_keys: Sequence[str] = ()) -> int:
        if not ids:
            return 0
        unique = sorted(set(ids))
        with self._s.conn(write=True) as cur:
            known = sorted({r[0] for r in cur.execute(
                "SELECT id FROM records WHERE namespace = %s AND id = ANY(%s) UNION "
                "SELECT record_id FROM history WHERE namespace = %s AND record_id = ANY(%s)",
                (namespace, unique, namespace, unique)).fetchall()})
            self._s.entity_graph.unlink(cur, namespace, unique)
            gone = cur.execute("DELETE FROM records r WHERE r.namespace = %s AND r.id = ANY(%s) "
                               "RETURNING " + ", ".join(f"r.{c}" for c in COLUMNS),
                               (namespace, unique)).fetchall()
            events = self._s.event_log
            events.log(cur, events.change_rows("erase", map(_row_to_record, gone)))
            self._s.event_log.scrub(cur, namespace, known)
            cur.execute("DELETE FROM history WHERE namespace = %s AND record_id = ANY(%s)",
                        (namespace, unique))
            if known:
                cur.executemany("INSERT INTO history(namespace, record_id, event, at) "
                                "VALUES (%s, %s, 'erase', %s)", [(namespace, i, at) for i in known])
            if cache_keys:
                cur.execute("DELETE FROM embedding_cache WHERE hash = ANY(%s)",
                            (sorted(set(cache_keys)),))
        with self._s.conn(write=False) as cur:  # outside a transaction: VACUUM may run there
            cur.execute("VACUUM records, history, embedding_cache, events, entities, "
                        "entity_mentions, entity_relations")
        return len(known)

    def history_ids(self, namespace: str, scope: Mapping[str, str]) -> list[str]:
        if not scope:
            return []
        where = " AND ".join(f"coalesce(old->>'{k}', new->>'{k}') = %s" for k in scope)
        with self._s.conn(write=False) as cur:
            return [r[0] for r in cur.execute(
                f"SELECT DISTINCT record_id FROM history WHERE namespace = %s AND {where}",
                (namespace, *scope.values())).fetchall()]

    def touch(self, namespace: str, ids: Sequence[str], *, at: float) -> None:
        if not ids:
            return
        with self._s.conn(write=True) as cur:  # rows locked in id order: no deadlocks
            cur.execute("UPDATE records SET last_accessed_at = greatest(last_accessed_at, %s), "
                        "access_count = access_count + 1 WHERE id IN (SELECT id FROM records "
                        "WHERE namespace = %s AND id = ANY(%s) ORDER BY id FOR UPDATE)",
                        (at, namespace, list(ids)))
            self._s.event_log.log(cur, self._s.event_log.touch_rows(namespace, ids))

    def taken(self, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        with self._s.conn(write=False) as cur:
            rows = cur.execute("SELECT id FROM records WHERE id = ANY(%s)",
                               (list(dict.fromkeys(ids)),)).fetchall()
        return {row[0] for row in rows}
