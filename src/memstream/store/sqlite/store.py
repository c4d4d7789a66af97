"""The embedded default store: one SQLite file in WAL mode.

It holds the records, their history, an FTS5 keyword index kept in sync by triggers, float32
embeddings in the record rows and an embedding cache. Vector search is exact, with numpy over
the namespace's vectors (``parts.vectors.VectorIndex``). Several processes may write the same file:
writes are ``BEGIN IMMEDIATE`` transactions with a busy timeout, and each process replays the
others' vector changes from a log table.

A process writes through one connection (one write at a time, under the store's write lock)
and reads through it too when the writes before a read end within ``READ_WAIT_S``; beside a
longer write, a read goes through one of a few connections that only read
(``sqlite.conn.ReadPool``), which in WAL mode see the last committed state: a search never
waits for another tenant's long write. A read made inside a write (the same thread holds the
write lock) sees the write's own changes. An in-memory store (``:memory:``) is one
connection, which reads and writes in turn.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..._types import Record
from ...core import jsonio as _json
from ...errors import BackendUnavailable, Conflict, CorruptStore, InvalidInput
from ...filters import Selection
from ..parts.bundle import Bundle
from ..parts.common import order_sql
from ..parts.events import EventLog
from ..parts.graph import Graph
from ..parts.kv import KeyValues
from ..parts.vectors import OP_VALID
from ..protocol import SCRUB_PENDING, StoreStats
from .admin import SQLiteKeys, SQLiteQueues, SQLiteTransfer
from .check import inspect_file
from .checkpoint import SOFT_BYTES, Checkpointer
from .conn import READ_WAIT_S, OwnedLock, ReadPool
from .indexes import SQLiteIndexes
from .records import SQLiteRecords
from .rows import SELECT as _SELECT
from .rows import chunks as _chunks
from .rows import record_row as _record_row
from .rows import row_to_record as _row_to_record
from .schema import COLUMNS, GRAPH_VERSION, MIGRATIONS, SCHEMA_VERSION
from .sql import selection_sql
from .vector import ANN_THRESHOLD, EXACT_SELECTION

log = logging.getLogger("memstream.store")

# In lookups by id, "+namespace" keeps SQLite on the unique id index: left to itself it may
# walk the namespace index, which costs a scan of the whole namespace (100 ms at 100k rows).
# rows per multi-row INSERT: 256 x 25 parameters, under the 32,766 of SQLite's default limit
_INSERT_ROWS = 256
_INSERT_SQL = (f"INSERT INTO records ({', '.join(COLUMNS)}, embedding, embed_model, "
               "needs_embedding, needs_rating) VALUES ")
_INSERT_ROW = "(" + ",".join("?" * (len(COLUMNS) + 4)) + ")"
_HISTORY_SQL = "INSERT INTO history(namespace, record_id, event, at, old, new) VALUES "
CACHE_KIB = 64 * 1024  # the page cache of each connection, at most
MMAP_BYTES = 2**31 - 2**16  # of the file read through a memory map (SQLite's usual ceiling)


_dumps = _json.dumps


class SQLiteStore(Bundle):
    """See ``memstream.store.protocol.Store`` for the contract of each method."""

    ALL = _SELECT
    NS_BY_ID = "+namespace"
    PLACEHOLDER = "?"
    ROW_LOCK = ""  # BEGIN IMMEDIATE: one writer at a time

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0,
                 synchronous: str = "NORMAL", ann_threshold: int = ANN_THRESHOLD) -> None:
        self.path = str(path)
        self.busy_ms = int(busy_timeout * 1000)
        self.event_log = EventLog(self)
        self._kv = KeyValues(self)
        self.entity_graph = Graph(self)
        self._queues = SQLiteQueues(self)
        self._transfer = SQLiteTransfer(self)
        #: the API keys (not part of ``Store``: the server reaches them through ``keys_of``)
        self.keys = SQLiteKeys(self)
        self.ann_threshold = ann_threshold
        self.exact_selection = EXACT_SELECTION
        self.generation = 0  # bumped by every write of this process
        self.grown = 0  # bumped by every insert of this process (see _sqlite_keywords._span)
        #: capped counts of selections, valid while neither this process nor another writes
        self.capped: dict[tuple[str, tuple[Any, ...]],
                           tuple[int, int, int, tuple[int, int]]] = {}
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
        #: touches that came while another thread was writing (``sqlite.records.touch``):
        #: applied by the writer as it lets the lock go
        self.touches: list[tuple[str, list[str], float]] = []
        #: the writes (and the writing connection)
        self.lock = OwnedLock(self._touch_later, lambda: bool(self.touches))
        self._readers: ReadPool | None = None  # the connections that read (none in memory)
        self.index_part: SQLiteIndexes = SQLiteIndexes(self)
        self._records = self._own_records = SQLiteRecords(self)
        self._closed = False
        try:
            self.db = self._connect(busy_timeout)
            self._open(busy_timeout)
            self.db.execute(f"PRAGMA synchronous = {synchronous.upper()}")
            # the log is copied back by a thread of its own, not inside a commit
            self.checkpointer = None if self.path == ":memory:" else Checkpointer(self.path)
            if self.checkpointer is not None:
                self.db.execute("PRAGMA wal_autocheckpoint = 0")
                # a rewound log's file is cut back, so its size tells how long the log is
                self.db.execute(f"PRAGMA journal_size_limit = {SOFT_BYTES}")
                # the connections reads take beside a long write (``query_only``: none writes)
                self._readers = ReadPool(lambda: self._connect(busy_timeout, "query_only = 1"))
                if self._kv.get_meta(SCRUB_PENDING):  # an erase whose log a reader kept: finish it
                    self.checkpointer.scrub_later()
        except sqlite3.DatabaseError as exc:
            self.db.close() if hasattr(self, "_db") else None
            raise self._map(exc) from exc

    # --- plumbing ----------------------------------------------------------------------------

    def _connect(self, busy_timeout: float, *pragmas: str) -> sqlite3.Connection:
        """A connection to the file with the settings every one of the store's has, and
        ``pragmas``: SQLite's default page cache is 2 MiB, and past a few hundred thousand
        records every index insert would read its pages back from the OS (``CACHE_KIB``,
        allocated as used); reads map the file instead of copying each page in with a system
        call, so a read of a hundred rows spread over a large file (an agent's steps) costs a
        third less (``MMAP_BYTES``)."""
        db = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None,
                             check_same_thread=False)
        try:
            for pragma in (f"busy_timeout = {int(busy_timeout * 1000)}",
                           f"cache_size = -{CACHE_KIB}", f"mmap_size = {MMAP_BYTES}", *pragmas):
                db.execute(f"PRAGMA {pragma}").fetchall()
        except sqlite3.Error:
            db.close()
            raise
        return db

    def _open(self, busy_timeout: float) -> None:
        """WAL mode and migrations. Switching a new file to WAL while another process creates
        it can fail at once with "locked" (SQLite does not wait there): retry until the busy
        timeout."""
        deadline = time.monotonic() + busy_timeout
        while True:
            try:
                mode = self.db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
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
    def write(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            self.check_open()
            self.generation += 1
            try:
                self.db.execute("BEGIN IMMEDIATE")
                try:
                    yield self.db
                except BaseException:
                    self.db.execute("ROLLBACK")
                    raise
                self.db.execute("COMMIT")
                if self.checkpointer is not None:
                    self.checkpointer.after_commit(self.db)
            except sqlite3.Error as exc:
                raise self._map(exc) from exc
            finally:
                # again once it is over: a count a read took during the write (of the state
                # before it, or of the write's own rows) is stamped with the number before
                self.generation += 1

    def session(self, write: bool) -> AbstractContextManager[sqlite3.Connection]:
        return self.write() if write else self.read()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The writing connection when this thread writes (it sees the write's own changes),
        for an in-memory store, and when it is free within ``READ_WAIT_S`` (its cache is
        warm); beside a longer write, a reading connection, which sees the last commit."""
        readers = self._readers
        if readers is None or self.lock.held():
            self.lock.__enter__()
        elif readers.held() or not self.lock.try_enter(READ_WAIT_S):
            self.check_open()
            with readers.lend() as db:
                try:
                    yield db
                except sqlite3.Error as exc:
                    raise self._map(exc) from exc
            return
        try:  # the lock is held once here, whichever way it was taken
            self.check_open()
            try:
                yield self.db
            except sqlite3.Error as exc:
                raise self._map(exc) from exc
        finally:
            self.lock.__exit__()

    def _touch_later(self) -> None:
        """Apply the touches searches left while this thread was writing (it holds the lock
        and is about to let it go)."""
        while self.touches and not self._closed:
            namespace, ids, at = self.touches.pop(0)
            try:
                self._own_records.touch_now(namespace, ids, at=at)
            except Exception:  # recency is best effort: a failed touch never fails the write
                log.exception("deferred touch of %d records failed", len(ids))

    def check_open(self) -> None:
        if self._closed:
            raise BackendUnavailable("this store is closed; open a new Memory")

    def before_insert(self, records: Sequence[Record], ann: bool) -> None:
        """Nothing to prepare: SQLite's vector indexes follow the log (``sqlite.vector``)."""

    def serialise_events(self, db: Any) -> None:
        """Events are numbered in commit order already: one writer at a time."""

    def events_copied(self, db: Any) -> None:
        """AUTOINCREMENT numbers the next event above the copied ones by itself."""

    # --- the dialect of the records part (``parts.records.Records``) ------------------------------

    def to_json(self, value: Any) -> str | None:
        return None if value is None else _dumps(value)

    def from_json(self, value: Any) -> Any:
        return json.loads(value) if value else None

    def field(self, name: str, value: Any) -> Any:
        if name == "provenance":
            return _dumps(list(value))
        return _dumps(value) if name in ("data", "metadata") else value

    def where(self, sel: Selection) -> tuple[str, list[Any]]:
        return selection_sql(sel)

    def by_id(self, db: Any, head: str, namespace: str, ids: Sequence[str]) -> list[Any]:
        rows: list[Any] = []
        for chunk in _chunks(list(dict.fromkeys(ids))):
            rows.extend(db.execute(f"{head} WHERE +r.namespace = ? AND r.id IN "
                                   f"({','.join('?' * len(chunk))})",
                                   (namespace, *chunk)).fetchall())
        return rows

    def for_update(self, db: Any, namespace: str, record_id: str) -> Record | None:
        # one writer at a time: the transaction's IMMEDIATE lock is the row lock
        rows = self.by_id(db, _SELECT, namespace, [record_id])
        return _row_to_record(rows[0]) if rows else None

    def rewrite(self, db: Any, namespace: str, record_id: str, sets: dict[str, Any]
                 ) -> Record:
        db.execute(f"UPDATE records SET {', '.join(f'{k} = ?' for k in sets)} WHERE rowid = "
                   "(SELECT rowid FROM records WHERE +namespace = ? AND id = ?)",
                   (*sets.values(), namespace, record_id))
        return _row_to_record(self.by_id(db, _SELECT, namespace, [record_id])[0])

    def stream(self, db: Any, where: str, params: Sequence[Any]) -> list[str]:
        # sorted here: an ORDER BY would lead SQLite to walk the namespace in time order (an
        # index that needs no sort) instead of the selection's own index
        return [r[1] for r in sorted(db.execute(
            f"SELECT r.created_at, r.id FROM records r WHERE {where}", params))]

    def _migrate(self) -> None:
        db = self.db
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
                if version == GRAPH_VERSION:  # link the records written before the graph
                    self.entity_graph.backfill(db, _SELECT, _row_to_record)
                db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                           (str(version),))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # --- writes ------------------------------------------------------------------------------

    def repeats(self, db: Any, records: Sequence[Record]) -> Callable[[Record], list[Record]]:
        # one writer at a time: the IMMEDIATE transaction already holds the write lock
        return lambda r: [_row_to_record(row) for row in db.execute(
            # "+r.text": a plain comparison would keep SQLite off the head index
            _SELECT + " WHERE r.namespace = ? AND substr(r.text, 1, 64) = ? "
            "AND r.step IS NULL AND r.invalidated_at IS NULL AND +r.text = ?",
            (r.namespace, r.text[:64], r.text))]

    def insert_rows(self, db: Any, records: Sequence[Record], *, event: str,
                     model: str | None, rate: Collection[str], history: bool) -> None:
        self.grown += 1
        for part in _chunks(records, _INSERT_ROWS):
            # one multi-row statement per part: far cheaper per row than executemany, above
            # all for the full-text index its trigger feeds
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

    def reset(self) -> None:
        with self.write() as db:
            for table in ("records", "history", "vector_log", "embedding_cache", "events",
                          "entities", "entity_mentions", "entity_relations"):
                db.execute(f"DELETE FROM {table}")
            db.execute("DELETE FROM meta WHERE key NOT IN ('schema_version')")
        self.index_part.vectors.clear()

    # --- reads -------------------------------------------------------------------------------

    record = staticmethod(_row_to_record)

    def selected(self, head: str, sel: Selection, limit: int | None, offset: int,
                  order: str) -> list[Any]:
        where, params = selection_sql(sel)
        sql = f"{head} WHERE {where} ORDER BY {order_sql(order)} LIMIT ? OFFSET ?"
        with self.read() as db:
            return db.execute(sql, (*params, -1 if limit is None else limit, offset)).fetchall()

    def stats(self, namespace: str) -> StoreStats:
        with self.read() as db:
            total, valid, embedded, oldest, newest = db.execute(
                "SELECT count(*), count(*) FILTER (WHERE invalidated_at IS NULL), "
                "count(embedding), min(created_at), max(created_at) FROM records "
                "WHERE namespace = ?", (namespace,)).fetchone()
            kinds = dict(db.execute("SELECT kind, count(*) FROM records WHERE namespace = ? "
                                    "GROUP BY kind ORDER BY kind", (namespace,)).fetchall())
        return StoreStats(total, valid, embedded, kinds, oldest, newest)

    def namespaces(self) -> list[str]:
        with self.read() as db:
            return [r[0] for r in db.execute(
                "SELECT DISTINCT namespace FROM records ORDER BY namespace")]

    def close(self) -> None:
        with self.lock:
            if self._closed:
                return
            self._touch_later()
            self.index_part.vectors.save_indexes()
            self._closed = True
            if self.checkpointer is not None:
                self.checkpointer.close()
            self.db.close()
            self.index_part.vectors.clear()
        if self._readers is not None:  # after the reads in hand (never under the write lock)
            self._readers.close()


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
