"""The embedded default store: one SQLite file in WAL mode.

It holds the records, their history, an FTS5 keyword index kept in sync by triggers, float32
embeddings in the record rows and an embedding cache. Vector search is exact, with numpy over
the namespace's vectors (``_vectors.VectorIndex``). Several processes may write the same file:
writes are ``BEGIN IMMEDIATE`` transactions with a busy timeout, and each process replays the
others' vector changes from a log table.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
import sqlite3
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .. import _json
from .._types import HistoryEntry, Record
from ..errors import BackendUnavailable, Conflict, CorruptStore, InvalidInput, NotFound
from ..filters import Selection
from . import _ann
from ._ann import AnnIndex
from ._checkpoint import SOFT_BYTES, Checkpointer
from ._common import SELECTION_STATS, Selecting, diff, order_sql, plan_refresh
from ._sqlite_check import inspect_file
from ._sqlite_schema import COLUMNS, MIGRATIONS, SCHEMA_VERSION
from ._sqlite_sql import selection_sql
from ._vectors import OP_REMOVED, OP_VALID, VectorIndex, top_order
from .protocol import ApiKey, Patch, Signals, StoreStats

_SELECT = "SELECT " + ", ".join(f"r.{c}" for c in COLUMNS) + " FROM records r"
# In lookups by id, "+namespace" keeps SQLite on the unique id index: left to itself it may
# walk the namespace index, which costs a scan of the whole namespace (100 ms at 100k rows).
_CHUNK = 500  # parameters per IN (...) list, well under SQLite's limit
# rows per multi-row INSERT: 256 x 24 parameters, under the 32,766 of SQLite's default limit
_INSERT_ROWS = 256
_INSERT_SQL = (f"INSERT INTO records ({', '.join(COLUMNS)}, embedding, embed_model, "
               "needs_embedding, needs_rating) VALUES ")
_INSERT_ROW = "(" + ",".join("?" * (len(COLUMNS) + 4)) + ")"
_HISTORY_SQL = "INSERT INTO history(namespace, record_id, event, at, old, new) VALUES "
SMALL_SELECTION = 5000  # neighbours: up to this many records, one ordered read
MAX_DF_FLOOR = 2000  # keyword terms in more records than this (and than the ratio) are dropped
MAX_DF_RATIO = 0.02
CACHE_KIB = 64 * 1024  # the page cache of each connection, at most
MMAP_BYTES = 2**31 - 2**16  # of the file read through a memory map (SQLite's usual ceiling)
LARGE_COUNT = 5000  # keyword statistics above this are reused for COUNT_TTL seconds
NS_COUNT_CAP = 2000  # a term's matches in a namespace are counted up to this, then estimated
COUNT_TTL = 60.0
ANN_THRESHOLD = 50_000  # vectors in a namespace above which an HNSW graph serves searches
ANN_MAX_FETCH = 4096  # candidates asked of the graph before falling back to exact search
EXACT_SELECTION = 50_000  # a filtered search over at most this many records is exact


_dumps = _json.dumps


_FIELDS = operator.attrgetter(*COLUMNS)
_DATA, _METADATA, _PROVENANCE = (COLUMNS.index(c) for c in ("data", "metadata", "provenance"))


def _row_to_record(row: Sequence[Any]) -> Record:
    """A record from the values of COLUMNS (which are Record's first fields, in order)."""
    v = list(row)
    data, meta, prov = v[_DATA], v[_METADATA], v[_PROVENANCE]
    v[_DATA] = _json.loads(data) if data is not None else None
    v[_METADATA] = _json.loads(meta) if meta != "{}" else {}
    v[_PROVENANCE] = tuple(_json.loads(prov)) if prov != "[]" else ()
    return Record(*v)


def _record_row(r: Record) -> list[Any]:
    """The values of COLUMNS for a record (its JSON fields as text)."""
    row = list(_FIELDS(r))
    row[_DATA] = _dumps(r.data) if r.data is not None else None
    row[_METADATA] = _dumps(r.metadata) if r.metadata else "{}"
    row[_PROVENANCE] = _dumps(list(r.provenance)) if r.provenance else "[]"
    return row


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class SQLiteStore(Selecting):
    """See ``memstream.store.protocol.Store`` for the contract of each method."""

    _ALL = _SELECT

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0,
                 synchronous: str = "NORMAL", ann_threshold: int = ANN_THRESHOLD) -> None:
        self.path = str(path)
        self.ann_threshold = ann_threshold
        self.exact_selection = EXACT_SELECTION
        self._ann: dict[str, AnnIndex] = {}
        self._counts: dict[tuple[str, str], tuple[int, int, float]] = {}
        self._generation = 0  # bumped by every write of this process
        self._ann_warned = False
        self.url = "sqlite:///" + self.path if self.path != ":memory:" else ":memory:"
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise InvalidInput("synchronous must be one of OFF, NORMAL, FULL, EXTRA")
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise BackendUnavailable(
                    f"cannot open {self.path}: the folder {parent} does not exist; create it first"
                )
            inspect_file(self.path)  # before anything writes to it
        self._lock = threading.RLock()
        self._vectors: dict[str, VectorIndex] = {}
        self._closed = False
        try:
            self._db = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._open(busy_timeout)
            self._db.execute(f"PRAGMA synchronous = {synchronous.upper()}")
            # SQLite's default page cache is 2 MiB: past a few hundred thousand records every
            # index insert would read its pages back from the OS. Allocated as used.
            self._db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            # reads map the file instead of copying each page in with a system call: a read
            # of a hundred rows spread over a large file (an agent's steps) costs a third less
            self._db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            # the log is copied back by a thread of its own, not inside a commit
            self._checkpointer = None if self.path == ":memory:" else Checkpointer(self.path)
            if self._checkpointer is not None:
                self._db.execute("PRAGMA wal_autocheckpoint = 0")
                # a rewound log's file is cut back, so its size tells how long the log is
                self._db.execute(f"PRAGMA journal_size_limit = {SOFT_BYTES}")
        except sqlite3.DatabaseError as exc:
            self._db.close() if hasattr(self, "_db") else None
            raise self._map(exc) from exc

    # --- plumbing ----------------------------------------------------------------------------

    def _open(self, busy_timeout: float) -> None:
        """WAL mode and migrations. Switching a new file to WAL while another process creates
        it can fail at once with "locked" (SQLite does not wait there): retry until the busy
        timeout."""
        deadline = time.monotonic() + busy_timeout
        while True:
            try:
                mode = self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if self.path != ":memory:" and str(mode).lower() != "wal":
                    raise BackendUnavailable(f"cannot switch {self.path} to WAL mode ({mode})")
                self._migrate()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _map(self, exc: sqlite3.Error) -> Exception:
        msg = str(exc)
        if isinstance(exc, sqlite3.IntegrityError):
            return Conflict(f"the write conflicts with a stored record: {msg}")
        name = getattr(exc, "sqlite_errorname", None) or ""
        if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or msg.startswith("no such table") \
                or "disk image is malformed" in msg:
            return CorruptStore(
                f"{self.path} is damaged or is not a memstream database ({msg}); restore it from a "
                "backup or point memstream at another file"
            )
        if "locked" in msg or "busy" in msg:
            return BackendUnavailable(
                f"{self.path} stayed locked by another writer past the busy timeout; retry, or "
                "raise busy_timeout"
            )
        return BackendUnavailable(f"SQLite error on {self.path}: {msg}")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._check_open()
            self._generation += 1
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
                if self._checkpointer is not None:
                    self._checkpointer.after_commit(self._db)
            except sqlite3.Error as exc:
                raise self._map(exc) from exc

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._check_open()
            try:
                yield self._db
            except sqlite3.Error as exc:
                raise self._map(exc) from exc

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailable("this store is closed; open a new Memory")

    def _migrate(self) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("CREATE TABLE IF NOT EXISTS meta "
                       "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            current = int(row[0]) if row else 0
            if current == 0 and db.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT IN ('meta') "
                "AND name NOT LIKE 'sqlite_%'"
            ).fetchone()[0]:
                raise CorruptStore(
                    f"{self.path} is an SQLite database but not a memstream store; use another file"
                )
            if current > SCHEMA_VERSION:
                raise BackendUnavailable(
                    f"{self.path} has schema version {current}, newer than this memstream "
                    f"({SCHEMA_VERSION}); upgrade memstream"
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in _split_sql(MIGRATIONS[version]):
                    db.execute(statement)
                db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                           (str(version),))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # --- writes ------------------------------------------------------------------------------

    def insert(self, records: Sequence[Record], *, event: str = "add",
               model: str | None = None, rate: Collection[str] = (),
               history: bool = True, ann: bool = True, refresh: bool = False
               ) -> dict[str, Record]:
        if not records:
            return {}
        with self._write() as db:
            plan = None
            if refresh:
                plan = plan_refresh(records, lambda r: [_row_to_record(row) for row in db.execute(
                    # "+r.text": a plain comparison would keep SQLite off the head index
                    _SELECT + " WHERE r.namespace = ? AND substr(r.text, 1, 64) = ? "
                    "AND r.step IS NULL AND r.invalidated_at IS NULL AND +r.text = ?",
                    (r.namespace, r.text[:64], r.text))])
                records = plan.fresh
            for part in _chunks(records, _INSERT_ROWS):
                # one multi-row statement per part: far cheaper per row than executemany,
                # above all for the full-text index its trigger feeds
                rows = [v for r in part for v in (
                    *_record_row(r),
                    None if r.embedding is None else np.asarray(r.embedding, np.float32).tobytes(),
                    None if r.embedding is None else model,
                    0 if r.embedding is not None else 1,
                    1 if r.id in rate else 0)]
                db.execute(_INSERT_SQL + ",".join([_INSERT_ROW] * len(part)), rows)
                if history:
                    db.execute(_HISTORY_SQL + ",".join(["(?, ?, ?, ?, NULL, ?)"] * len(part)),
                               [v for r in part for v in (r.namespace, r.id, event,
                                                          r.created_at, _dumps(r.to_dict()))])
            if plan is None:
                return {}
            db.executemany("UPDATE records SET last_accessed_at = ?, access_count = ? "
                           "WHERE +namespace = ? AND id = ?",
                           [(r.last_accessed_at, r.access_count, r.namespace, r.id)
                            for r in plan.stored])
            db.executemany(_HISTORY_SQL + "(?, ?, ?, ?, ?, ?)",
                           [(e.namespace, e.record_id, e.event, e.at, _dumps(e.old),
                             _dumps(e.new)) for e in plan.entries])
            return plan.found

    def update(self, namespace: str, record_id: str, patch: Patch, *, at: float) -> Record:
        with self._write() as db:
            row = db.execute(_SELECT + " WHERE +r.namespace = ? AND r.id = ?",
                             (namespace, record_id)).fetchone()
            if row is None:
                raise NotFound(f"no record {record_id!r} in namespace {namespace!r}")
            before = _row_to_record(row)
            change = diff(before, patch)
            if change is None:
                return before
            sets = {k: (_dumps(list(v) if k == "provenance" else v)
                        if k in ("data", "metadata", "provenance") else v)
                    for k, v in change.fields.items()}
            sets["updated_at"] = at
            if change.requeue:
                sets.update(embedding=None, embed_model=None, needs_embedding=1,
                            embed_owner=None, embed_until=None)
            db.execute(
                f"UPDATE records SET {', '.join(f'{k} = ?' for k in sets)} WHERE rowid = "
                "(SELECT rowid FROM records WHERE +namespace = ? AND id = ?)",
                (*sets.values(), namespace, record_id))
            db.execute("INSERT INTO history(namespace, record_id, event, at, old, new) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (namespace, record_id, change.event, at, _dumps(change.old),
                        _dumps(change.new)))
            row = db.execute(_SELECT + " WHERE +r.namespace = ? AND r.id = ?",
                             (namespace, record_id)).fetchone()
        return _row_to_record(row)

    def delete(self, namespace: str, ids: Sequence[str], *, at: float) -> int:
        removed = 0
        with self._write() as db:
            for chunk in _chunks(list(ids)):
                q = ",".join("?" * len(chunk))
                rows = db.execute(_SELECT + f" WHERE +r.namespace = ? AND r.id IN ({q})",
                                  (namespace, *chunk)).fetchall()
                if not rows:
                    continue
                db.executemany(
                    "INSERT INTO history(namespace, record_id, event, at, old, new) "
                    "VALUES (?, ?, 'delete', ?, ?, NULL)",
                    [(namespace, row[0], at, _dumps(_row_to_record(row).to_dict()))
                     for row in rows])
                removed += db.execute(f"DELETE FROM records WHERE +namespace = ? AND id IN ({q})",
                                      (namespace, *chunk)).rowcount
        return removed

    def erase(self, namespace: str, ids: Sequence[str], *, at: float,
              cache_keys: Sequence[str] = ()) -> int:
        erased = 0
        with self._lock:
            self._check_open()
            self._db.execute("PRAGMA secure_delete = ON")  # freed bytes are zeroed
            try:
                with self._write() as db:
                    for chunk in _chunks(list(dict.fromkeys(ids))):
                        q = ",".join("?" * len(chunk))
                        known = {r[0] for r in db.execute(
                            f"SELECT id FROM records WHERE +namespace = ? AND id IN ({q}) UNION "
                            f"SELECT record_id FROM history WHERE namespace = ? AND record_id IN "
                            f"({q})", (namespace, *chunk, namespace, *chunk))}
                        db.execute(f"DELETE FROM records WHERE +namespace = ? AND id IN ({q})",
                                   (namespace, *chunk))
                        db.execute(f"DELETE FROM history WHERE namespace = ? AND record_id IN "
                                   f"({q})", (namespace, *chunk))
                        db.executemany("INSERT INTO history(namespace, record_id, event, at) "
                                       "VALUES (?, ?, 'erase', ?)",
                                       [(namespace, rid, at) for rid in sorted(known)])
                        erased += len(known)
                    for chunk in _chunks(list(dict.fromkeys(cache_keys))):
                        db.execute("DELETE FROM embedding_cache WHERE hash IN "
                                   f"({','.join('?' * len(chunk))})", chunk)
                    # the keyword index keeps deleted entries until its segments merge
                    db.execute("INSERT INTO records_fts(records_fts) VALUES ('optimize')")
                if self._checkpointer is not None:  # the log's copies of the old pages go too
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self._db.execute("PRAGMA secure_delete = OFF")
        self._drop_ann(namespace)
        return erased

    def history_ids(self, namespace: str, scope: Mapping[str, str]) -> list[str]:
        if not scope:
            return []
        where = " AND ".join(f"coalesce(json_extract(old, '$.{k}'), json_extract(new, '$.{k}'))"
                             " = ?" for k in scope)
        with self._read() as db:
            return [r[0] for r in db.execute(
                f"SELECT DISTINCT record_id FROM history WHERE namespace = ? AND {where}",
                (namespace, *scope.values()))]

    def touch(self, namespace: str, ids: Sequence[str], *, at: float) -> None:
        if not ids:
            return
        with self._write() as db:
            for chunk in _chunks(list(ids)):
                db.execute(
                    "UPDATE records SET last_accessed_at = max(last_accessed_at, ?), "
                    f"access_count = access_count + 1 WHERE +namespace = ? AND id IN "
                    f"({','.join('?' * len(chunk))})", (at, namespace, *chunk))

    def set_embeddings(self, namespace: str, items: Sequence[tuple[str, np.ndarray]],
                       model: str) -> None:
        if not items:
            return
        with self._write() as db:
            db.executemany(
                "UPDATE records SET embedding = ?, embed_model = ?, needs_embedding = 0 "
                "WHERE +namespace = ? AND id = ?",
                [(np.asarray(v, np.float32).tobytes(), model, namespace, rid) for rid, v in items])

    def cache_vectors(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        if not items:
            return
        with self._write() as db:
            db.executemany("INSERT OR IGNORE INTO embedding_cache VALUES (?, ?, ?)",
                           [(model, h, np.asarray(v, np.float32).tobytes()) for h, v in items])

    def clear_embeddings(self) -> int:
        """Mark every record as needing a new embedding (after a change of embedder)."""
        with self._write() as db:
            return db.execute("UPDATE records SET embedding = NULL, embed_model = NULL, "
                              "needs_embedding = 1, embed_owner = NULL, embed_until = NULL"
                              ).rowcount

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def reset(self) -> None:
        with self._write() as db:
            for table in ("records", "history", "vector_log", "embedding_cache"):
                db.execute(f"DELETE FROM {table}")
            db.execute("DELETE FROM meta WHERE key NOT IN ('schema_version')")
        self._vectors.clear()

    # --- reads -------------------------------------------------------------------------------

    def get(self, namespace: str, ids: Sequence[str]) -> list[Record]:
        found: dict[str, Record] = {}
        with self._read() as db:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                q = ",".join("?" * len(chunk))
                for row in db.execute(_SELECT + f" WHERE +r.namespace = ? AND r.id IN ({q})",
                                      (namespace, *chunk)):
                    rec = _row_to_record(row)
                    found[rec.id] = rec
        return [found[i] for i in ids if i in found]

    def texts(self, namespace: str, ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        with self._read() as db:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                q = ",".join("?" * len(chunk))
                out.update(db.execute(f"SELECT id, text FROM records WHERE +namespace = ? AND "
                                      f"id IN ({q})", (namespace, *chunk)))
        return out

    def taken(self, ids: Sequence[str]) -> set[str]:
        out: set[str] = set()
        with self._read() as db:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                q = ",".join("?" * len(chunk))
                out.update(r[0] for r in db.execute(f"SELECT id FROM records WHERE id IN ({q})",
                                                    chunk))
        return out

    def signals(self, namespace: str, ids: Sequence[str]) -> list[Signals]:
        found: dict[str, Signals] = {}
        with self._read() as db:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                q = ",".join("?" * len(chunk))
                for row in db.execute(
                    "SELECT id, importance, created_at, last_accessed_at FROM records "
                    f"WHERE +namespace = ? AND id IN ({q})", (namespace, *chunk)):
                    found[row[0]] = Signals(*row)
        return [found[i] for i in ids if i in found]

    def _record(self, row: Any) -> Record:
        return _row_to_record(row)

    def _selected(self, head: str, sel: Selection, limit: int | None, offset: int,
                  order: str) -> list[Any]:
        where, params = selection_sql(sel)
        sql = f"{head} WHERE {where} ORDER BY {order_sql(order)} LIMIT ? OFFSET ?"
        with self._read() as db:
            return db.execute(sql, (*params, -1 if limit is None else limit, offset)).fetchall()

    def count(self, sel: Selection, *, limit: int | None = None) -> int:
        where, params = selection_sql(sel)
        sql = f"SELECT count(*) FROM records r WHERE {where}"
        if limit is not None:  # stop counting early: "more than limit" is all the caller needs
            sql = f"SELECT count(*) FROM (SELECT 1 FROM records r WHERE {where} LIMIT ?)"
            params = [*params, limit + 1]
        with self._read() as db:
            return int(db.execute(sql, params).fetchone()[0])

    def history(self, namespace: str, record_id: str) -> list[HistoryEntry]:
        with self._read() as db:
            rows = db.execute("SELECT record_id, namespace, event, at, old, new FROM history "
                              "WHERE namespace = ? AND record_id = ? ORDER BY seq",
                              (namespace, record_id)).fetchall()
        return [HistoryEntry(r[0], r[1], r[2], r[3], json.loads(r[4]) if r[4] else None,
                             json.loads(r[5]) if r[5] else None) for r in rows]

    def keyword_search(self, sel: Selection, terms: Sequence[str], limit: int
                       ) -> list[tuple[str, float]]:
        """BM25 with the statistics of what the search selects. FTS5 ranks with the document
        frequencies of the whole table, so other namespaces, or other users of the same one,
        would shift the ranking; each term's FTS5 score is therefore rescaled by idf(in the
        selection) / idf(in the table), and a record's score is the sum over the terms it
        holds. A selection of more than ``SELECTION_STATS`` records uses its namespace's
        statistics instead (close enough, and cheaper to count)."""
        quoted = ['"' + t.replace('"', "") + '"' for t in terms if t.replace('"', "").strip()]
        if not quoted or limit <= 0:
            return []
        where, params = selection_sql(sel)
        sql = (f"SELECT r.rowid, r.id, bm25(records_fts) AS s FROM records_fts "
               f"JOIN records r ON r.rowid = records_fts.rowid "
               f"WHERE records_fts MATCH ? AND {where} ORDER BY s, r.rowid LIMIT ?")
        per_term = max(4 * limit, 200)
        scores: dict[int, float] = {}
        names: dict[int, str] = {}
        plain = sel == Selection(sel.namespace)
        with self._read() as db:
            quoted = self._rare_terms(db, quoted)
            block = db.execute("SELECT block FROM records_fts_data WHERE id = 1").fetchone()
            total = _varint(block[0]) if block else 0  # FTS5's own row count
            in_ns = self._count((sel.namespace, ""), lambda: db.execute(
                "SELECT count(*) FROM records WHERE namespace = ?",
                (sel.namespace,)).fetchone()[0])
            in_sel = 0 if plain else db.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM records r WHERE {where} LIMIT ?)",
                (*params, SELECTION_STATS + 1)).fetchone()[0]
            for term in quoted:
                rows = db.execute(sql, (term, *params, per_term)).fetchall()
                if not rows:
                    continue
                hits = self._count(("", term), lambda t=term: db.execute(
                    "SELECT count(*) FROM records_fts WHERE records_fts MATCH ?",
                    (t,)).fetchone()[0])
                weight = 1.0  # a namespace that is most of the table has its statistics
                if 0 < in_sel <= SELECTION_STATS:  # the selection's own statistics
                    in_term = len(rows) if len(rows) < per_term else db.execute(
                        "SELECT count(*) FROM records_fts JOIN records r ON r.rowid = "
                        f"records_fts.rowid WHERE records_fts MATCH ? AND {where}",
                        (term, *params)).fetchone()[0]
                    weight = _idf(in_sel, in_term) / _idf(total, hits)
                elif 2 * in_ns < total:
                    if plain and len(rows) < per_term:  # every match in the namespace is here
                        hits_ns = len(rows)
                    else:  # counted up to a cap; past it, the table's share is close enough
                        hits_ns = self._count((sel.namespace, term), lambda t=term: db.execute(
                            "SELECT count(*) FROM (SELECT 1 FROM records_fts JOIN records r ON "
                            "r.rowid = records_fts.rowid WHERE records_fts MATCH ? AND "
                            "r.namespace = ? LIMIT ?)",
                            (t, sel.namespace, NS_COUNT_CAP + 1)).fetchone()[0])
                        if hits_ns > NS_COUNT_CAP:
                            hits_ns = round(hits * in_ns / max(total, 1))
                    weight = _idf(in_ns, hits_ns) / _idf(total, hits)
                for rowid, rid, score in rows:
                    scores[rowid] = scores.get(rowid, 0.0) - score * weight
                    names[rowid] = rid
        best = sorted(scores, key=lambda r: (-scores[r], r))[:limit]
        return [(names[r], scores[r]) for r in best]

    def _count(self, key: tuple[str, str], compute: Any) -> int:
        """A count for keyword statistics: recounted after this process writes when it is
        small (cheap), reused for up to a minute when it is large (it then barely moves)."""
        now = time.monotonic()
        hit = self._counts.get(key)
        if hit is not None and (hit[1] == self._generation
                                or (hit[0] > LARGE_COUNT and now - hit[2] < COUNT_TTL)):
            return hit[0]
        value = int(compute())
        if len(self._counts) > 50_000:
            self._counts.clear()
        self._counts[key] = (value, self._generation, now)
        return value

    def _rare_terms(self, db: sqlite3.Connection, quoted: list[str]) -> list[str]:
        """Leave out terms found in more than ``max(MAX_DF_FLOOR, MAX_DF_RATIO * rows)``
        records. Such terms add almost nothing to BM25 (their IDF is near zero) but make the
        index rank every record that holds them; a store below the floor is never pruned. When
        every term is that common, the rarest one is kept."""
        if len(quoted) < 2:
            return quoted
        rows = db.execute("SELECT coalesce(max(rowid), 0) FROM records").fetchone()[0]
        cap = max(MAX_DF_FLOOR, int(MAX_DF_RATIO * rows))
        if rows <= cap:
            return quoted
        df = {t: db.execute("SELECT count(*) FROM (SELECT 1 FROM records_fts WHERE records_fts "
                            "MATCH ? LIMIT ?)", (t, cap + 1)).fetchone()[0] for t in quoted}
        kept = [t for t in quoted if df[t] <= cap]
        return kept or [min(quoted, key=lambda t: df[t])]

    def _vectors_by_key(self, sql: str, first: str, keys: Sequence[str]
                        ) -> dict[str, np.ndarray]:
        """Run ``sql`` (with ``{q}`` for the key placeholders) over chunks of keys and collect
        (key, float32 blob) rows."""
        out: dict[str, np.ndarray] = {}
        with self._read() as db:
            for chunk in _chunks(list(keys)):
                for key, blob in db.execute(sql.format(q=",".join("?" * len(chunk))),
                                            (first, *chunk)):
                    out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def neighbours(self, sel: Selection, ids: Sequence[str], *, before: int, after: int
                   ) -> dict[str, tuple[list[str], list[str]]]:
        where, params = selection_sql(sel)
        out: dict[str, tuple[list[str], list[str]]] = {}
        with self._read() as db:
            total = db.execute(  # the selection's size, up to the bound (from an index)
                f"SELECT count(*) FROM (SELECT 1 FROM records r WHERE {where} LIMIT ?)",
                (*params, SMALL_SELECTION + 1)).fetchone()[0]
            if total <= SMALL_SELECTION:  # read the whole stream once
                # sorted here: an ORDER BY would lead SQLite to walk the namespace in time
                # order (an index that needs no sort) instead of the selection's own index
                order = [r[1] for r in sorted(db.execute(
                    f"SELECT r.created_at, r.id FROM records r WHERE {where}", params))]
                pos = {rid: n for n, rid in enumerate(order)}
                for rid in dict.fromkeys(ids):
                    n = pos.get(rid)
                    if n is not None:
                        out[rid] = (order[max(0, n - before):n][::-1], order[n + 1:n + 1 + after])
                return out
            keys = {}
            for chunk in _chunks(list(dict.fromkeys(ids))):
                q = ",".join("?" * len(chunk))
                keys.update({r[0]: (r[1], r[0]) for r in db.execute(
                    f"SELECT id, created_at FROM records WHERE +namespace = ? AND id IN ({q})",
                    (sel.namespace, *chunk))})
            # row values keep both lookups an index range (an OR would walk the stream)
            sql = (f"SELECT * FROM (SELECT 0, r.id FROM records r WHERE {where} AND "
                   "(r.created_at, r.id) < (?, ?) ORDER BY r.created_at DESC, r.id DESC "
                   f"LIMIT ?) UNION ALL SELECT * FROM (SELECT 1, r.id FROM records r WHERE "
                   f"{where} AND (r.created_at, r.id) > (?, ?) ORDER BY r.created_at, r.id "
                   "LIMIT ?)")
            for rid, (at, _) in keys.items():
                rows = db.execute(sql, (*params, at, rid, before,
                                        *params, at, rid, after)).fetchall()
                out[rid] = ([i for side, i in rows if side == 0],
                            [i for side, i in rows if side == 1])
        return out

    def selection_vectors(self, sel: Selection) -> tuple[list[str], np.ndarray]:
        where, params = selection_sql(sel)
        with self._read() as db:
            rows = db.execute(f"SELECT r.id, r.embedding FROM records r WHERE {where} "
                              "AND r.embedding IS NOT NULL ORDER BY r.rowid", params).fetchall()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        dims = {len(blob) for _, blob in rows}
        if len(dims) > 1:  # vectors of several models: keep the most common size
            size = max(dims, key=lambda d: sum(1 for _, b in rows if len(b) == d))
            rows = [r for r in rows if len(r[1]) == size]
        mat = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
        return [r[0] for r in rows], mat.reshape(len(rows), -1)

    def embeddings(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self._vectors_by_key(
            "SELECT id, embedding FROM records WHERE +namespace = ? AND id IN ({q}) "
            "AND embedding IS NOT NULL", namespace, ids)

    def pending_ratings(self, limit: int) -> list[tuple[str, str, str, str]]:
        with self._read() as db:
            rows = db.execute("SELECT namespace, id, text, kind FROM records "
                              "WHERE needs_rating = 1 ORDER BY rowid LIMIT ?", (limit,)).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def set_rating(self, namespace: str, record_id: str, importance: float | None, *,
                   at: float) -> None:
        if importance is not None:
            try:
                self.update(namespace, record_id, Patch(importance=importance), at=at)
            except NotFound:
                return
        with self._write() as db:
            db.execute("UPDATE records SET needs_rating = 0 WHERE +namespace = ? AND id = ?",
                       (namespace, record_id))

    def pending_embeddings(self, limit: int, *, owner: str | None = None,
                           lease: float = 60.0) -> list[tuple[str, str, str]]:
        if owner is None:
            with self._read() as db:
                rows = db.execute("SELECT namespace, id, text FROM records WHERE "
                                  "needs_embedding = 1 ORDER BY rowid LIMIT ?",
                                  (limit,)).fetchall()
            return [(r[0], r[1], r[2]) for r in rows]
        now = time.time()
        with self._write() as db:
            rows = db.execute(
                "SELECT rowid, namespace, id, text FROM records WHERE needs_embedding = 1 AND "
                "(embed_until IS NULL OR embed_until <= ? OR embed_owner = ?) ORDER BY rowid "
                "LIMIT ?", (now, owner, limit)).fetchall()
            db.executemany("UPDATE records SET embed_owner = ?, embed_until = ? WHERE rowid = ?",
                           [(owner, now + lease, r[0]) for r in rows])
        return [(r[1], r[2], r[3]) for r in rows]

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        return self._vectors_by_key(
            "SELECT hash, vector FROM embedding_cache WHERE model = ? AND hash IN ({q})",
            model, hashes)

    def stats(self, namespace: str) -> StoreStats:
        with self._read() as db:
            total, valid, embedded, oldest, newest = db.execute(
                "SELECT count(*), count(*) FILTER (WHERE invalidated_at IS NULL), "
                "count(embedding), min(created_at), max(created_at) FROM records "
                "WHERE namespace = ?", (namespace,)).fetchone()
            kinds = dict(db.execute("SELECT kind, count(*) FROM records WHERE namespace = ? "
                                    "GROUP BY kind ORDER BY kind", (namespace,)).fetchall())
        return StoreStats(total, valid, embedded, kinds, oldest, newest)

    def namespaces(self) -> list[str]:
        with self._read() as db:
            return [r[0] for r in db.execute(
                "SELECT DISTINCT namespace FROM records ORDER BY namespace")]

    def put_key(self, key: ApiKey) -> None:
        with self._write() as db:
            db.execute("INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (key.id, key.hash, key.name, _dumps(list(key.namespaces)), key.role,
                        key.created_at, key.revoked_at))

    def _keys(self, where: str, params: tuple[Any, ...]) -> list[ApiKey]:
        with self._read() as db:
            rows = db.execute("SELECT id, hash, name, namespaces, role, created_at, revoked_at "
                              f"FROM api_keys {where}", params).fetchall()
        return [ApiKey(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6])
                for r in rows]

    def get_key(self, key_id: str) -> ApiKey | None:
        found = self._keys("WHERE id = ?", (key_id,))
        return found[0] if found else None

    def list_keys(self) -> list[ApiKey]:
        return self._keys("ORDER BY created_at, id", ())

    def revoke_key(self, key_id: str, *, at: float) -> bool:
        with self._write() as db:
            return db.execute("UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) "
                              "WHERE id = ?", (at, key_id)).rowcount > 0

    def records_page(self, namespace: str, after: str | None, limit: int
                     ) -> list[tuple[Record, str | None]]:
        with self._read() as db:
            rows = db.execute(
                _SELECT.replace(" FROM", ", r.embedding, r.embed_model FROM", 1)
                + " WHERE +r.namespace = ? AND r.id > ? ORDER BY r.id LIMIT ?",
                (namespace, after or "", limit)).fetchall()
        out = []
        for row in rows:
            rec = _row_to_record(row[:-2])
            if row[-2] is not None:
                rec = dataclasses.replace(rec, embedding=np.frombuffer(row[-2], np.float32))
            out.append((rec, row[-1]))
        return out

    def history_page(self, after: int, limit: int) -> list[tuple[int, HistoryEntry]]:
        with self._read() as db:
            rows = db.execute("SELECT seq, record_id, namespace, event, at, old, new FROM history "
                              "WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)).fetchall()
        return [(r[0], HistoryEntry(r[1], r[2], r[3], r[4], json.loads(r[5]) if r[5] else None,
                                    json.loads(r[6]) if r[6] else None)) for r in rows]

    def put_history(self, entries: Sequence[HistoryEntry]) -> None:
        with self._write() as db:
            db.executemany("INSERT INTO history(namespace, record_id, event, at, old, new) "
                           "VALUES (?, ?, ?, ?, ?, ?)",
                           [(e.namespace, e.record_id, e.event, e.at,
                             None if e.old is None else _dumps(e.old),
                             None if e.new is None else _dumps(e.new)) for e in entries])

    def meta_items(self) -> dict[str, str]:
        with self._read() as db:
            return dict(db.execute("SELECT key, value FROM meta WHERE key <> 'schema_version' "
                                   "ORDER BY key").fetchall())

    def get_meta(self, key: str) -> str | None:
        with self._read() as db:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    # --- vector search -----------------------------------------------------------------------

    def _index(self, db: sqlite3.Connection, namespace: str, dim: int) -> VectorIndex:
        """The namespace's vector index, brought up to date with the change log."""
        index = self._vectors.get(namespace)
        if index is None or index.dim != dim:
            index = VectorIndex(dim)
            self._vectors[namespace] = index
            db.execute("BEGIN")  # one snapshot for the log position and the rows
            try:
                index.last_seq = db.execute(
                    "SELECT coalesce(max(seq), 0) FROM vector_log").fetchone()[0]
                index.upsert(db.execute(
                    "SELECT rowid, embedding, invalidated_at IS NULL FROM records "
                    "WHERE namespace = ? AND embedding IS NOT NULL ORDER BY rowid", (namespace,)))
            finally:
                db.execute("COMMIT")
            return index
        # the log's end now: this namespace's changes up to it are replayed, and the position
        # moves there even when none are this namespace's, so that entries of other
        # namespaces (an agent's states, say) are read past once and not at every search
        top = db.execute("SELECT coalesce(max(seq), 0) FROM vector_log").fetchone()[0]
        changes = db.execute("SELECT rid, op FROM vector_log WHERE seq > ? AND seq <= ? "
                             "AND namespace = ? ORDER BY seq",
                             (index.last_seq, top, namespace)).fetchall()
        index.last_seq = max(index.last_seq, top)
        if not changes:
            return index
        final: dict[int, int] = dict(changes)
        index.remove(rid for rid, op in final.items() if op == OP_REMOVED)
        live = [rid for rid, op in final.items() if op != OP_REMOVED]
        for chunk in _chunks(live):
            index.upsert(db.execute(
                f"SELECT rowid, embedding, invalidated_at IS NULL FROM records WHERE rowid IN "
                f"({','.join('?' * len(chunk))}) AND embedding IS NOT NULL", chunk))
        gone = set(live) - set(index._pos)
        index.remove(gone)
        return index

    def vector_search(self, sel: Selection, vector: np.ndarray, limit: int
                      ) -> list[tuple[str, float]]:
        query = np.asarray(vector, dtype=np.float32).ravel()
        if limit <= 0:
            return []
        with self._read() as db:
            index = self._index(db, sel.namespace, query.shape[0])
            include_invalid = sel.include_invalid or sel.as_of is not None
            plain = Selection(sel.namespace, include_invalid=sel.include_invalid)
            ann = self._ann_index(db, sel.namespace, index)
            if ann is not None:
                return self._ann_top(db, sel, sel == plain, index, ann, query, limit)
            if not index.keeps_vectors:  # the graph no longer serves: exact search again
                self._vectors.pop(sel.namespace, None)
                index = self._index(db, sel.namespace, query.shape[0])
            rids, scores = index.scores(query, include_invalid=include_invalid)
            if sel == plain:
                order = top_order(rids, scores, limit)
                return self._ids_for(db, [(int(rids[i]), float(scores[i])) for i in order])
            return self._filtered_top(db, sel, rids, scores, limit)

    # --- the approximate index ---------------------------------------------------------------

    def _ann_path(self, namespace: str, dim: int) -> Path | None:
        if self.path == ":memory:":
            return None
        return _ann.file_for(Path(self.path + ".ann"), namespace, dim)

    def _drop_ann(self, namespace: str) -> None:
        """Forget the namespace's HNSW graph, in memory and on disk (a graph keeps the vectors
        of removed entries): it is built again, from what is stored, when next needed."""
        self._ann.pop(namespace, None)
        if self.path != ":memory:":
            for file in _ann.files_for(Path(self.path + ".ann"), namespace):
                file.unlink(missing_ok=True)

    def _ann_index(self, db: sqlite3.Connection, namespace: str, index: VectorIndex
                   ) -> AnnIndex | None:
        """The namespace's HNSW graph when it is large enough, in step with the change log."""
        if not self.ann_threshold or len(index) <= self.ann_threshold:
            return None
        if not _ann.available():
            if not self._ann_warned:
                self._ann_warned = True
                _ann.log.warning("namespace %r holds %d vectors: searches stay exact; pip "
                                 "install 'memstream[ann]' for an approximate index",
                                 namespace, len(index))
            return None
        ann = self._ann.get(namespace)
        path = self._ann_path(namespace, index.dim)
        if ann is None or ann.dim != index.dim:
            ann = AnnIndex.load(path, index.dim, namespace) if path is not None else None
            if ann is None or ann.last_seq > index.last_seq:
                if not index.keeps_vectors:  # build from a full exact index
                    self._vectors.pop(namespace, None)
                    index = self._index(db, namespace, index.dim)
                rids, mat = index.live()
                _ann.log.info("building the HNSW index of %r (%d vectors)", namespace, len(rids))
                ann = AnnIndex.build(index.dim, rids, mat, index.last_seq)
                if path is not None:
                    ann.save(path, namespace)
            self._ann[namespace] = ann
        if ann.last_seq < index.last_seq:  # replay what changed since the graph's position
            changes = db.execute(
                "SELECT rid, op FROM vector_log WHERE seq > ? AND seq <= ? AND namespace = ? "
                "ORDER BY seq", (ann.last_seq, index.last_seq, namespace)).fetchall()
            final = dict(changes)
            ann.remove([rid for rid, op in final.items() if op == OP_REMOVED])
            live = [rid for rid, op in final.items() if op != OP_REMOVED]
            ann.upsert(*self._stored_vectors(db, live, index.dim))
            ann.last_seq = index.last_seq
        index.drop_vectors()  # the graph holds them: ~1.5 GB less at a million 384-d vectors
        return ann

    def _stored_vectors(self, db: sqlite3.Connection, rowids: Sequence[int], dim: int
                        ) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, matrix) of these rows' stored embeddings of ``dim`` dimensions."""
        found: list[tuple[int, bytes]] = []
        for chunk in _chunks(list(rowids)):
            found += db.execute(f"SELECT rowid, embedding FROM records WHERE rowid IN "
                                f"({','.join('?' * len(chunk))}) AND embedding IS NOT NULL",
                                chunk).fetchall()
        found = [(r, b) for r, b in found if len(b) == 4 * dim]
        rids = np.array([r for r, _ in found], dtype=np.int64)
        mat = np.frombuffer(b"".join(b for _, b in found), dtype=np.float32).reshape(-1, dim)
        return rids, mat

    def _ann_top(self, db: sqlite3.Connection, sel: Selection, plain: bool, index: VectorIndex,
                 ann: AnnIndex, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """Candidates from the graph, widened until ``limit`` of them pass validity and the
        selection. A selection of at most ``exact_selection`` records (counted on its index)
        is scored exactly over its own rows instead, and so is one too narrow for the graph."""
        include_invalid = sel.include_invalid or sel.as_of is not None
        where, params = selection_sql(sel)
        cap = self.exact_selection
        narrow = not plain and self.count(sel, limit=cap) <= cap
        rids, sims = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        fetch = max(2 * limit, 100)
        while not narrow:
            rids, sims = ann.query(query, fetch)
            ok = index.admits(rids, include_invalid=include_invalid)
            rids, sims = rids[ok], sims[ok]
            if not plain and len(rids):
                allowed: set[int] = set()
                for sub in _chunks([int(r) for r in rids]):
                    allowed.update(r[0] for r in db.execute(
                        f"SELECT r.rowid FROM records r WHERE r.rowid IN "
                        f"({','.join('?' * len(sub))}) AND {where}", (*sub, *params)))
                keep = np.fromiter((int(r) in allowed for r in rids), dtype=bool,
                                   count=len(rids))
                rids, sims = rids[keep], sims[keep]
            if len(rids) >= limit or fetch >= min(ANN_MAX_FETCH, len(ann)):
                narrow = len(rids) < limit and not plain
                break
            fetch *= 4
        if narrow:  # exact over the selection's own rows, read with their stored vectors
            rows = [(r, b) for r, b in db.execute(
                f"SELECT r.rowid, r.embedding FROM records r WHERE {where} AND "
                "r.embedding IS NOT NULL", params) if len(b) == 4 * index.dim]
            rids = np.array([r for r, _ in rows], dtype=np.int64)
            mat = np.frombuffer(b"".join(b for _, b in rows),
                                dtype=np.float32).reshape(-1, index.dim)
            ok = index.admits(rids, include_invalid=include_invalid)
            rids, sims = rids[ok], mat[ok] @ query
        order = top_order(rids, sims, limit)
        return self._ids_for(db, [(int(rids[i]), float(sims[i])) for i in order])

    def _filtered_top(self, db: sqlite3.Connection, sel: Selection, rids: np.ndarray,
                      scores: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """Walk the best-scoring rows in growing chunks, keeping those the selection admits;
        when the selection is too narrow for that, ask SQL for its rows first."""
        where, params = selection_sql(sel)
        kept: list[tuple[int, float]] = []
        seen = 0
        chunk = max(4 * limit, 256)
        order = top_order(rids, scores, min(len(scores), 16 * chunk))
        while seen < len(order) and len(kept) < limit:
            part = order[seen : seen + chunk]
            seen += len(part)
            ok: set[int] = set()
            for sub in _chunks([int(rids[i]) for i in part]):
                ok.update(r[0] for r in db.execute(
                    f"SELECT r.rowid FROM records r WHERE r.rowid IN ({','.join('?' * len(sub))}) "
                    f"AND {where}", (*sub, *params)))
            kept.extend((int(rids[i]), float(scores[i])) for i in part if int(rids[i]) in ok)
            chunk *= 4
        if len(kept) < limit and seen < len(scores):
            allowed = np.fromiter((r[0] for r in db.execute(
                f"SELECT r.rowid FROM records r WHERE {where} AND r.embedding IS NOT NULL",
                params)), dtype=np.int64)
            mask = np.isin(rids, allowed)
            sub_rids, sub_scores = rids[mask], scores[mask]
            order2 = top_order(sub_rids, sub_scores, limit)
            kept = [(int(sub_rids[i]), float(sub_scores[i])) for i in order2]
        return self._ids_for(db, kept[:limit])

    def _ids_for(self, db: sqlite3.Connection, pairs: Sequence[tuple[int, float]]
                 ) -> list[tuple[str, float]]:
        names: dict[int, str] = {}
        for chunk in _chunks([p[0] for p in pairs]):
            names.update(db.execute(f"SELECT rowid, id FROM records WHERE rowid IN "
                                    f"({','.join('?' * len(chunk))})", chunk).fetchall())
        return [(names[rid], score) for rid, score in pairs if rid in names]

    def save_indexes(self) -> None:
        """Save every approximate index that changed since it was saved (also on close)."""
        with self._lock:
            for namespace, ann in self._ann.items():
                path = self._ann_path(namespace, ann.dim)
                if ann.dirty and path is not None:
                    try:
                        ann.save(path, namespace)
                    except OSError as exc:  # the next process rebuilds or replays
                        _ann.log.warning("could not save the vector index %s: %s", path, exc)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self.save_indexes()
                self._closed = True
                if self._checkpointer is not None:
                    self._checkpointer.close()
                self._db.close()
                self._vectors.clear()
                self._ann.clear()


def _varint(buf: bytes) -> int:
    """The SQLite varint at the start of ``buf`` (FTS5's row count is stored as one)."""
    value = 0
    for n, byte in enumerate(buf[:9]):
        if n == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            break
    return value


def _idf(rows: int, hits: int) -> float:
    """FTS5's bm25 idf: log((N - n + 0.5) / (n + 0.5)), at least 1e-6."""
    if rows <= 0:
        return 1e-6
    return max(1e-6, math.log((rows - hits + 0.5) / (hits + 0.5)))


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements (triggers contain ';' inside BEGIN ... END)."""
    out, buf = [], []
    for line in script.strip().splitlines():
        if line.startswith("--"):
            continue
        buf.append(line)
        joined = "\n".join(buf).strip()
        if joined.endswith(";") and sqlite3.complete_statement(joined):
            out.append(joined)
            buf = []
    if "\n".join(buf).strip():
        out.append("\n".join(buf))
    return out


__all__ = ["OP_VALID", "SQLiteStore"]
