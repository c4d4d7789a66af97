"""The checkpointer's three tables, in the memory's own database (SQLite or PostgreSQL). The
store's migrations make them (``schema``); a checkpointer given a database of its own makes
them there with the same statements.

One small connection wrapper per dialect: statements are written once with ``?`` placeholders
and the same ``ON CONFLICT`` upserts, which both databases understand; only the column types
and the placeholder differ. Each ``transaction()`` commits or rolls back as a whole, so a
checkpoint and its channel values are stored together or not at all.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from ...errors import BackendUnavailable, MissingDependency
from .. import parse_url

__all__ = ["TABLES", "Tables", "existing_tables", "open_tables", "schema"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lg_checkpoints (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL,
    parent_id TEXT, run_id TEXT, type TEXT NOT NULL, checkpoint {blob} NOT NULL,
    metadata_type TEXT NOT NULL, metadata {blob} NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));
CREATE INDEX IF NOT EXISTS lg_checkpoints_run ON lg_checkpoints (run_id);
CREATE TABLE IF NOT EXISTS lg_blobs (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, channel TEXT NOT NULL,
    version TEXT NOT NULL, type TEXT NOT NULL, blob {blob},
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version));
CREATE TABLE IF NOT EXISTS lg_writes (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT NOT NULL,
    blob {blob}, task_path TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx))
"""


def schema(blob: str) -> list[str]:
    """The statements that make the three tables (``blob``: the dialect's binary type). A
    store's migrations run them (``sqlite.schema``, ``postgres.schema``); the checkpointer runs
    them too, for a database of its own that no store migrated."""
    return [s.strip() for s in _SCHEMA.format(blob=blob).split(";") if s.strip()]


#: each table, its key (the order a copy reads it in) and its columns
TABLES: dict[str, tuple[str, str]] = {
    "lg_checkpoints": ("thread_id, checkpoint_ns, checkpoint_id",
                       "thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, "
                       "checkpoint, metadata_type, metadata"),
    "lg_blobs": ("thread_id, checkpoint_ns, channel, version",
                 "thread_id, checkpoint_ns, channel, version, type, blob"),
    "lg_writes": ("thread_id, checkpoint_ns, checkpoint_id, task_id, idx",
                  "thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob, "
                  "task_path"),
}


class Cursor(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Tables(Protocol):
    url: str

    def transaction(self) -> Any:
        """A context manager giving a cursor; commits on success, rolls back on error."""

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def scrub(self) -> None:
        """After a delete: no copy of the deleted rows stays in the database's files (SQLite:
        the write-ahead log is folded in and truncated; PostgreSQL: VACUUM)."""

    def close(self) -> None: ...


class _Connection:
    """What both dialects share: one connection behind a lock, and how a delete is scrubbed."""

    SCRUB = ""
    _db: Any
    _lock: threading.RLock

    def scrub(self) -> None:
        with self._lock:
            self._db.execute(self.SCRUB)

    def close(self) -> None:
        with self._lock:
            self._db.close()


class _SQLite(_Connection):
    SCRUB = "PRAGMA wal_checkpoint(TRUNCATE)"

    def __init__(self, path: str) -> None:
        self.url = path
        try:
            self._db = sqlite3.connect(path, timeout=30.0, isolation_level=None,
                                       check_same_thread=False)
            if path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            # a checkpoint acknowledged to LangGraph survives a crash of the process or machine
            self._db.execute("PRAGMA synchronous=FULL")
            # a deleted thread leaves no bytes behind: freed pages are zeroed (see ``scrub``)
            self._db.execute("PRAGMA secure_delete=ON")
            self._db.executescript(_SCHEMA.format(blob="BLOB"))
        except sqlite3.Error as exc:
            raise BackendUnavailable(f"cannot open the checkpoint tables in {path}: {exc}") \
                from exc
        self._lock = threading.RLock()

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self._db.execute(sql, tuple(params)).fetchall())



class _PgCursor:
    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._cur.execute(sql.replace("?", "%s"), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any:
        return self._cur.executemany(sql.replace("?", "%s"), [tuple(r) for r in rows])

    def fetchall(self) -> list[Any]:
        return list(self._cur.fetchall())


class _Postgres(_Connection):
    SCRUB = "VACUUM lg_checkpoints, lg_blobs, lg_writes"

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise MissingDependency("checkpoints on PostgreSQL need: pip install "
                                    "'memstream[postgres]'") from exc
        self.url = url
        try:
            self._db = psycopg.connect(url, autocommit=True)
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(7324011)")  # one creator at once
                for statement in _SCHEMA.format(blob="BYTEA").split(";"):
                    self._db.execute(statement)
        except psycopg.Error as exc:
            raise BackendUnavailable(f"cannot open the checkpoint tables in "
                                     f"{url.split('@')[-1]}: {exc}") from exc
        self._lock = threading.RLock()

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        with self._lock, self._db.transaction(), self._db.cursor() as cur:
            yield _PgCursor(cur)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            rows = self._db.execute(sql.replace("?", "%s"), tuple(params)).fetchall()
            return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                    for row in rows]



def open_tables(url: str | Path) -> Tables:
    """The checkpoint tables in the database a memstream store URL names (created if need be)."""
    scheme, target = parse_url(url)  # the stores' own reading of a URL
    return _SQLite(target) if scheme == "sqlite" else _Postgres(target)


def existing_tables(url: str | Path) -> Tables | None:
    """The checkpoint tables of a store when it has them (every store migrated since they
    joined the migrations; before, only one a LangGraph checkpointer had used), else None;
    never creates them."""
    scheme, path = parse_url(url)
    if scheme != "sqlite":
        import psycopg

        with psycopg.connect(path, autocommit=True) as db:
            row = db.execute("SELECT to_regclass('lg_checkpoints')").fetchone()
        return _Postgres(path) if row and row[0] else None
    if path == ":memory:" or not Path(path).exists():
        return None
    from ..sqlite.check import connect_read_only  # the SQLite store's schema imports this

    lite = connect_read_only(path)  # a path with "?" or "#" in it is quoted
    try:
        found = lite.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                           "name = 'lg_checkpoints'").fetchone()
    finally:
        lite.close()
    return _SQLite(path) if found else None
