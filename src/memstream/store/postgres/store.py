"""The PostgreSQL store: for several processes or machines sharing one memory.

Records, history, keys and the embedding cache live in ordinary tables; keyword search uses a
stored ``tsvector`` (English stemming) with a GIN index, ranked by ``ts_rank`` weighted with
each term's rarity (an IDF, as BM25 does); vector search uses pgvector's HNSW index (cosine)
with iterative scans, so filters narrow the results without losing them. Filters compile to
SQL (``postgres.sql``). Every write is one transaction; a connection pool (psycopg 3) serves the
threads of a process. Select it with a URL: ``Memory("postgresql://user@host/db")``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from ..._types import Record
from ...errors import BackendUnavailable, Conflict, InvalidInput
from ...filters import Selection
from ..parts.bundle import Bundle
from ..parts.common import order_sql
from ..parts.events import EventLog
from ..parts.graph import Graph
from ..parts.kv import KeyValues
from ..protocol import StoreStats
from .admin import PgKeys, PgQueues, PgTransfer
from .indexes import PgIndexes
from .records import PgRecords
from .rows import SELECT as _SELECT
from .rows import jsonb as _jsonb
from .rows import record_row as _record_row
from .rows import row_to_record as _row_to_record
from .rows import scalar as _scalar
from .rows import vec as _vec
from .schema import (
    COLUMNS,
    EVENTS_LOCK,
    GRAPH_VERSION,
    LOCK_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    vector_index_sql,
)
from .sql import selection_sql

STATS_TTL = 60.0  # seconds a namespace size or a term's document frequency is reused


class PostgresStore(Bundle):
    """See ``memstream.store.protocol.Store`` for the contract of each method."""

    ALL = _SELECT
    NS_BY_ID = "namespace"
    PLACEHOLDER = "%s"
    ROW_LOCK = " FOR UPDATE"
    #: PostgreSQL text and jsonb cannot hold a NUL character (migrate checks a source first)
    holds_nul = False

    def __init__(self, url: str, *, busy_timeout: float = 30.0, synchronous: str = "NORMAL",
                 pool_size: int = 8, ann_threshold: int = 0) -> None:
        """``ann_threshold`` is accepted for symmetry with SQLite and not used: pgvector's
        HNSW index serves every search."""
        self.url = url
        self.event_log = EventLog(self)
        self._kv = KeyValues(self)
        self.entity_graph = Graph(self)
        self._queues = PgQueues(self)
        self._transfer = PgTransfer(self)
        #: the API keys (not part of ``Store``: the server reaches them through ``keys_of``)
        self.keys = PgKeys(self)
        self.index_part = PgIndexes(self)
        self._records = PgRecords(self)
        self._display = url.split("@")[-1]  # never the password
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise InvalidInput("synchronous must be one of OFF, NORMAL, FULL, EXTRA")
        self._commit = "off" if synchronous.upper() == "OFF" else "on"
        self._closed = False
        self._indexed_dims: set[int] = set()
        self._stats: dict[tuple[str, str], tuple[float, int]] = {}
        self.lock = threading.Lock()
        try:
            with psycopg.connect(url, connect_timeout=max(1, int(busy_timeout))) as conn:
                self._migrate(conn)
        except psycopg.OperationalError as exc:
            raise BackendUnavailable(f"cannot reach PostgreSQL at {self._display}: {exc}; check "
                                     "the URL and that the server runs") from exc
        self._pool = ConnectionPool(url, min_size=1, max_size=pool_size, timeout=busy_timeout,
                                    configure=self._configure, open=True,
                                    kwargs={"autocommit": True})

    # --- plumbing ----------------------------------------------------------------------------

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        register_vector(conn)
        conn.execute(f"SET synchronous_commit = {self._commit}")

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_ID,))
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, "
                         "value text NOT NULL)")
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            current = int(row[0]) if row else 0
            if current > SCHEMA_VERSION:
                raise BackendUnavailable(
                    f"the database at {self._display} has schema version {current}, newer than "
                    f"this memstream ({SCHEMA_VERSION}); upgrade memstream")
            if current == 0 and _scalar(conn, "SELECT to_regclass('records') IS NOT NULL"):
                raise BackendUnavailable(
                    f"the database at {self._display} has a 'records' table that memstream did "
                    "not make; use another database (or schema)")
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    conn.execute(statement)
                if version == GRAPH_VERSION:  # link the records written before the graph
                    self.entity_graph.backfill(conn, _SELECT, _row_to_record)
                conn.execute("INSERT INTO meta VALUES ('schema_version', %s) ON CONFLICT (key) "
                             "DO UPDATE SET value = excluded.value", (str(version),))
        with conn.cursor() as cur:
            cur.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'records' AND "
                        "indexname LIKE 'records_vec_%%'")
            self._indexed_dims = {int(r[0].rsplit("_", 1)[1]) for r in cur.fetchall()}

    def _map(self, exc: Exception) -> Exception:
        if isinstance(exc, pg_errors.UniqueViolation):
            return Conflict(f"the write conflicts with a stored record: {exc}")
        if isinstance(exc, pg_errors.DataError | pg_errors.UntranslatableCharacter):
            return InvalidInput(f"PostgreSQL refused a value ({exc}); text and JSON may not "
                                "contain NUL characters, numbers must fit in 64 bits")
        if isinstance(exc, PoolTimeout):
            return BackendUnavailable(f"no free connection to {self._display} within the busy "
                                      "timeout; raise pool_size or busy_timeout")
        if isinstance(exc, psycopg.OperationalError):
            return BackendUnavailable(f"PostgreSQL at {self._display} failed: {exc}; retry")
        return BackendUnavailable(f"PostgreSQL error on {self._display}: {exc}")

    @contextmanager
    def conn(self, write: bool) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor; with ``write``, inside one transaction (retried once on a deadlock)."""
        if self._closed:
            raise BackendUnavailable("this store is closed; open a new Memory")
        try:
            with self._pool.connection() as conn:
                if write:
                    with conn.transaction(), conn.cursor() as cur:
                        yield cur
                else:
                    with conn.cursor() as cur:
                        yield cur
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._map(exc) from exc

    def session(self, write: bool) -> AbstractContextManager[psycopg.Cursor[Any]]:
        return self.conn(write)

    # --- the dialect of the records part (``parts.records.Records``) ------------------------------

    def to_json(self, value: Any) -> Any:
        return _jsonb(value)

    def from_json(self, value: Any) -> Any:
        return value  # psycopg reads jsonb as Python values

    def field(self, name: str, value: Any) -> Any:
        if name == "provenance":
            return list(value)
        return _jsonb(value) if name in ("data", "metadata") else value

    def where(self, sel: Selection) -> tuple[str, list[Any]]:
        return selection_sql(sel)

    def by_id(self, db: Any, head: str, namespace: str, ids: Sequence[str]) -> list[Any]:
        if not ids:
            return []
        return list(db.execute(f"{head} WHERE r.namespace = %s AND r.id = ANY(%s)",
                               (namespace, list(dict.fromkeys(ids)))).fetchall())

    def for_update(self, db: Any, namespace: str, record_id: str) -> Record | None:
        row = db.execute(_SELECT + " WHERE r.namespace = %s AND r.id = %s FOR UPDATE",
                         (namespace, record_id)).fetchone()
        return _row_to_record(row) if row else None

    def rewrite(self, db: Any, namespace: str, record_id: str, sets: dict[str, Any]
                 ) -> Record:
        row = db.execute(f"UPDATE records r SET {', '.join(f'{k} = %s' for k in sets)} "
                         "WHERE r.namespace = %s AND r.id = %s RETURNING "
                         + ", ".join(f"r.{c}" for c in COLUMNS),
                         (*sets.values(), namespace, record_id)).fetchone()
        return _row_to_record(row)

    def stream(self, db: Any, where: str, params: Sequence[Any]) -> list[str]:
        return [r[0] for r in db.execute(
            f"SELECT r.id FROM records r WHERE {where} ORDER BY r.created_at, r.id", params)]

    def serialise_events(self, db: Any) -> None:
        db.execute("SELECT pg_advisory_xact_lock(%s)", (EVENTS_LOCK,))

    def events_copied(self, db: Any) -> None:
        db.execute("SELECT setval(pg_get_serial_sequence('events', 'seq'), "
                   "(SELECT max(seq) FROM events))")

    def ensure_vector_index(self, dims: Collection[int]) -> None:
        """Make the HNSW index for each new dimension (once, under the advisory lock)."""
        for dim in set(dims) - self._indexed_dims:
            with self.conn(write=True) as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_ID,))
                cur.execute(vector_index_sql(int(dim)))
            self._indexed_dims.add(dim)

    # --- writes ------------------------------------------------------------------------------

    def before_insert(self, records: Sequence[Record], ann: bool) -> None:
        if ann:
            self.ensure_vector_index({len(_vec(r.embedding)) for r in records
                                       if r.embedding is not None})

    def repeats(self, db: Any, records: Sequence[Record]) -> Callable[[Record], list[Record]]:
        # one writer at a time per namespace checks for repeats, so two adds of the same text
        # at once make one record
        for ns in sorted({r.namespace for r in records}):
            db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_ID, ns))
        return lambda r: [_row_to_record(row) for row in db.execute(
            _SELECT + " WHERE r.namespace = %s AND md5(r.text) = md5(%s) "
            "AND r.step IS NULL AND r.invalidated_at IS NULL AND r.text = %s",
            (r.namespace, r.text, r.text)).fetchall()]

    def insert_rows(self, db: Any, records: Sequence[Record], *, event: str,
                     model: str | None, rate: Collection[str], history: bool) -> None:
        rows = [[*_record_row(r),
                 None if r.embedding is None else _vec(r.embedding),
                 None if r.embedding is None else model,
                 r.embedding is None, r.id in rate] for r in records]
        db.executemany(f"INSERT INTO records ({', '.join(COLUMNS)}, embedding, embed_model, "
                       "needs_embedding, needs_rating) VALUES "
                       f"({', '.join(['%s'] * (len(COLUMNS) + 4))})", rows)
        if history:
            self._records.write_history(db, [(r.namespace, r.id, event, r.created_at, None,
                                               r.to_dict()) for r in records])

    def reset(self) -> None:
        with self.conn(write=True) as cur:
            cur.execute("TRUNCATE records, history, embedding_cache, events, entities, "
                        "entity_mentions, entity_relations")
            cur.execute("DELETE FROM meta WHERE key <> 'schema_version'")
        self._stats.clear()

    # --- reads -------------------------------------------------------------------------------

    record = staticmethod(_row_to_record)

    def selected(self, head: str, sel: Selection, limit: int | None, offset: int,
                  order: str) -> list[Any]:
        where, params = selection_sql(sel)
        with self.conn(write=False) as cur:
            return list(cur.execute(f"{head} WHERE {where} ORDER BY {order_sql(order)} "
                                    "LIMIT %s OFFSET %s", (*params, limit, offset)).fetchall())

    def cached(self, key: tuple[str, str], compute: Any) -> int:
        """A namespace size or term frequency, reused for ``STATS_TTL`` seconds (zero is never
        kept: a term nobody used may appear with the next record)."""
        now = time.monotonic()
        with self.lock:
            hit = self._stats.get(key)
        if hit is not None and now - hit[0] < STATS_TTL:
            return hit[1]
        value = int(compute())
        with self.lock:
            if len(self._stats) > 10_000:
                self._stats.clear()
            if value:
                self._stats[key] = (now, value)
        return value

    def stats(self, namespace: str) -> StoreStats:
        with self.conn(write=False) as cur:
            row = cur.execute(
                "SELECT count(*), count(*) FILTER (WHERE invalidated_at IS NULL), "
                "count(embedding), min(created_at), max(created_at) FROM records "
                "WHERE namespace = %s", (namespace,)).fetchone()
            assert row is not None
            total, valid, embedded, oldest, newest = row
            kinds = dict(cur.execute("SELECT kind, count(*) FROM records WHERE namespace = %s "
                                     "GROUP BY kind ORDER BY kind", (namespace,)).fetchall())
        return StoreStats(total, valid, embedded, kinds, oldest, newest)

    def namespaces(self) -> list[str]:
        with self.conn(write=False) as cur:
            return [r[0] for r in cur.execute(
                "SELECT DISTINCT namespace FROM records ORDER BY namespace").fetchall()]

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pool.close()


__all__ = ["PostgresStore"]
