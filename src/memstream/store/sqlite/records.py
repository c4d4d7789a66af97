"""The records part of the SQLite store: its deletes, erasure, touches and id lookups
(``parts.records.Records`` has the rest)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ...filters import Selection
from ..parts.records import Records, count_sql
from ..protocol import SCRUB_PENDING
from .checkpoint import truncate_log
from .rows import SELECT as _SELECT
from .rows import chunks as _chunks
from .rows import row_to_record as _row_to_record
from .sql import selection_sql
from .vector import ERASED, vector_key

if TYPE_CHECKING:
    from .store import SQLiteStore


class SQLiteRecords(Records):
    """See ``protocol.RecordStore``."""

    _s: SQLiteStore

    def count(self, sel: Selection, *, limit: int | None = None) -> int:
        """Capped counts (``limit``) are what a search asks several times over (is the
        selection small enough for exact vector search, for its own keyword statistics, for
        context smoothing?): one is remembered until the file changes, and serves any cap it
        answers exactly."""
        if limit is None:
            return super().count(sel)
        where, params = selection_sql(sel)
        key = (where, tuple(params))
        with self._s.read() as db:
            # taken before the count: a write committed meanwhile changes one of them. The
            # number is the connection's own (the reading one, or the writing one in a write)
            version = (id(db), db.execute("PRAGMA data_version").fetchall()[0][0])
            generation = self._s.generation
            hit = self._s.capped.get(key)
            if hit is not None and hit[2:] == (generation, version):
                value, asked = hit[0], hit[1]
                if value <= asked:  # the exact count
                    return min(value, limit + 1)
                if limit <= asked:  # more than asked, so more than limit
                    return limit + 1
            value = int(db.execute(count_sql(self._s.PLACEHOLDER, where, True), (*params, limit + 1)
                                   ).fetchone()[0])
        if len(self._s.capped) > 1000:
            self._s.capped.clear()
        self._s.capped[key] = (value, limit, generation, version)
        return value

    def delete(self, namespace: str, ids: Sequence[str], *, at: float) -> int:
        removed = 0
        with self._s.write() as db:
            for chunk in _chunks(list(ids)):
                q = ",".join("?" * len(chunk))
                rows = db.execute(_SELECT + f" WHERE +r.namespace = ? AND r.id IN ({q})",
                                  (namespace, *chunk)).fetchall()
                if not rows:
                    continue
                gone = [_row_to_record(row) for row in rows]
                self.write_history(db, [(namespace, r.id, "delete", at, r.to_dict(), None)
                                         for r in gone])
                self._s.event_log.log(db, self._s.event_log.change_rows("delete", gone))
                self._s.entity_graph.unlink(db, namespace, chunk)
                removed += db.execute(f"DELETE FROM records WHERE +namespace = ? AND id IN ({q})",
                                      (namespace, *chunk)).rowcount
        return removed

    def erase(self, namespace: str, ids: Sequence[str], *, at: float,
              cache_keys: Sequence[str] = ()) -> int:
        erased = 0
        spaces = {""}
        with self._s.lock:
            self._s.check_open()
            self._s.db.execute("PRAGMA secure_delete = ON")  # freed bytes are zeroed
            try:
                with self._s.write() as db:
                    for chunk in _chunks(list(dict.fromkeys(ids))):
                        q = ",".join("?" * len(chunk))
                        known = {r[0] for r in db.execute(
                            f"SELECT id FROM records WHERE +namespace = ? AND id IN ({q}) UNION "
                            f"SELECT record_id FROM history WHERE namespace = ? AND record_id IN "
                            f"({q})", (namespace, *chunk, namespace, *chunk))}
                        gone = [_row_to_record(row) for row in db.execute(
                            _SELECT + f" WHERE +r.namespace = ? AND r.id IN ({q})",
                            (namespace, *chunk))]
                        spaces.update(r.space for r in gone)
                        self._s.event_log.log(db, self._s.event_log.change_rows("erase", gone))
                        self._s.event_log.scrub(db, namespace, sorted(known))
                        self._s.entity_graph.unlink(db, namespace, chunk)
                        db.execute(f"DELETE FROM records WHERE +namespace = ? AND id IN ({q})",
                                   (namespace, *chunk))
                        db.execute(f"DELETE FROM history WHERE namespace = ? AND record_id IN "
                                   f"({q})", (namespace, *chunk))
                        db.executemany("INSERT INTO history(namespace, record_id, event, at) "
                                       "VALUES (?, ?, 'erase', ?)",
                                       [(namespace, rid, at) for rid in sorted(known)])
                        erased += len(known)
                    # another process's graph of these vectors still holds the erased ones:
                    # it must be rebuilt, never saved again (``sqlite.vector.ERASED``)
                    for space in spaces:
                        db.execute("INSERT OR REPLACE INTO meta VALUES (?, (SELECT "
                                   "coalesce(max(seq), 0) FROM vector_log))",
                                   (ERASED + vector_key(namespace, space),))
                    for chunk in _chunks(list(dict.fromkeys(cache_keys))):
                        db.execute("DELETE FROM embedding_cache WHERE hash IN "
                                   f"({','.join('?' * len(chunk))})", chunk)
                    # the keyword index keeps deleted entries until its segments merge
                    db.execute("INSERT INTO records_fts(records_fts) VALUES ('optimize')")
                    if self._s.checkpointer is not None:  # until the log is truncated
                        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                                   (SCRUB_PENDING, json.dumps({"since": at})))
                if self._s.checkpointer is not None:  # the log's copies of the old pages go too
                    if truncate_log(self._s.db, restore_ms=self._s.busy_ms):
                        with self._s.write() as db:
                            db.execute("DELETE FROM meta WHERE key = ?", (SCRUB_PENDING,))
                    else:  # a reader needs the log: the checkpoint thread finishes it
                        self._s.checkpointer.scrub_later()
            finally:
                self._s.db.execute("PRAGMA secure_delete = OFF")
        self._s.index_part.vectors.drop_ann(namespace, sorted(spaces))
        return erased

    def history_ids(self, namespace: str, scope: Mapping[str, str]) -> list[str]:
        if not scope:
            return []
        where = " AND ".join(f"coalesce(json_extract(old, '$.{k}'), json_extract(new, '$.{k}'))"
                             " = ?" for k in scope)
        with self._s.read() as db:
            return [r[0] for r in db.execute(
                f"SELECT DISTINCT record_id FROM history WHERE namespace = ? AND {where}",
                (namespace, *scope.values()))]

    def touch(self, namespace: str, ids: Sequence[str], *, at: float) -> None:
        """A search's touch never waits for another thread's write: it is left to that
        writer, which applies it as it lets the write lock go. The touch is queued before
        the lock is tried again, so either this thread or a holder that lets go after it
        applies it."""
        if not ids:
            return
        lock = self._s.lock
        if not lock.held():
            self._s.touches.append((namespace, list(ids), at))
            if lock.try_enter():  # nobody writes: applied now, on leaving
                lock.__exit__()
            return
        self.touch_now(namespace, ids, at=at)

    def touch_now(self, namespace: str, ids: Sequence[str], *, at: float) -> None:
        with self._s.write() as db:
            for chunk in _chunks(list(ids)):
                db.execute(
                    "UPDATE records SET last_accessed_at = max(last_accessed_at, ?), "
                    f"access_count = access_count + 1 WHERE +namespace = ? AND id IN "
                    f"({','.join('?' * len(chunk))})", (at, namespace, *chunk))
            self._s.event_log.log(db, self._s.event_log.touch_rows(namespace, ids))

    def taken(self, ids: Sequence[str]) -> set[str]:
        out: set[str] = set()
        with self._s.read() as db:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                q = ",".join("?" * len(chunk))
                out.update(r[0] for r in db.execute(f"SELECT id FROM records WHERE id IN ({q})",
                                                    chunk))
        return out
