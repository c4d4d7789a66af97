"""The PostgreSQL store's parts that are not its records or indexes: its work queues
(embeddings, ratings), its pages for ``migrate`` and its API keys (each an object over the
store's connection: ``postgres.PostgresStore`` makes them)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from ..._types import HistoryEntry, Record
from ..parts.common import Keys
from ..parts.queues import Queues
from ..parts.transfer import Copying
from ..protocol import ApiKey
from .rows import SELECT as _SELECT
from .rows import from_db as _from_db
from .rows import jsonb as _jsonb
from .rows import row_to_record as _row_to_record


class PgQueues(Queues):
    """The queues of a PostgreSQL store: its records in insertion order (seq); a claim skips
    rows another worker is claiming."""

    def pending_ratings(self, limit: int) -> list[tuple[str, str, str, str]]:
        with self._session(False) as cur:
            rows = cur.execute("SELECT namespace, id, text, kind FROM records WHERE needs_rating "
                               "ORDER BY seq LIMIT %s", (limit,)).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def _rated(self, namespace: str, record_id: str) -> None:
        with self._session(True) as cur:
            cur.execute("UPDATE records SET needs_rating = false WHERE namespace = %s AND id = %s",
                        (namespace, record_id))

    def pending_embeddings(self, limit: int, *, owner: str | None = None,
                           lease: float = 60.0) -> list[tuple[str, str, str]]:
        if owner is None:
            with self._session(False) as cur:
                rows = cur.execute("SELECT namespace, id, text FROM records WHERE "
                                   "needs_embedding ORDER BY seq LIMIT %s", (limit,)).fetchall()
            return [(r[0], r[1], r[2]) for r in rows]
        now = time.time()
        with self._session(True) as cur:  # rows another worker is claiming are skipped
            rows = cur.execute(
                "UPDATE records r SET embed_owner = %s, embed_until = %s FROM (SELECT id FROM "
                "records WHERE needs_embedding AND (embed_until IS NULL OR embed_until <= %s "
                "OR embed_owner = %s) ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED) c "
                "WHERE r.id = c.id RETURNING r.seq, r.namespace, r.id, r.text",
                (owner, now + lease, now, owner, limit)).fetchall()
        return [(r[1], r[2], r[3]) for r in sorted(rows)]


class PgTransfer(Copying):
    """A PostgreSQL store's pages."""

    def records_page(self, namespace: str, after: str | None, limit: int
                     ) -> list[tuple[Record, str | None]]:
        with self._session(False) as cur:
            rows = cur.execute(
                _SELECT.replace(" FROM", ", r.embedding, r.embed_model FROM", 1)
                + " WHERE r.namespace = %s AND r.id > %s ORDER BY r.id LIMIT %s",
                (namespace, after or "", limit), binary=True).fetchall()
        out = []
        for row in rows:
            rec = _row_to_record(row[:-2])
            if row[-2] is not None:
                rec = dataclasses.replace(rec, embedding=_from_db(row[-2]))
            out.append((rec, row[-1]))
        return out

    def history_page(self, after: int, limit: int) -> list[tuple[int, HistoryEntry]]:
        with self._session(False) as cur:
            rows = cur.execute("SELECT seq, record_id, namespace, event, at, old, new FROM "
                               "history WHERE seq > %s ORDER BY seq LIMIT %s",
                               (after, limit)).fetchall()
        return [(r[0], HistoryEntry(*r[1:])) for r in rows]

    def put_history(self, entries: Sequence[HistoryEntry]) -> None:
        if not entries:
            return
        with self._session(True) as cur:
            cur.executemany("INSERT INTO history(namespace, record_id, event, at, old, new) "
                            "VALUES (%s, %s, %s, %s, %s, %s)",
                            [(e.namespace, e.record_id, e.event, e.at, _jsonb(e.old),
                              _jsonb(e.new)) for e in entries])


class PgKeys(Keys):
    """The API keys of a PostgreSQL store (``api_keys``)."""

    def put_key(self, key: ApiKey) -> None:
        with self._session(True) as cur:
            cur.execute("INSERT INTO api_keys VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        (key.id, key.hash, key.name, list(key.namespaces), key.role,
                         key.created_at, key.revoked_at))

    def _keys(self, where: str, params: tuple[Any, ...]) -> list[ApiKey]:
        with self._session(False) as cur:
            rows = cur.execute("SELECT id, hash, name, namespaces, role, created_at, "
                               f"revoked_at FROM api_keys {where}", params).fetchall()
        return [ApiKey(r[0], r[1], r[2], tuple(r[3]), r[4], r[5], r[6]) for r in rows]

    def revoke_key(self, key_id: str, *, at: float) -> bool:
        with self._session(True) as cur:
            cur.execute("UPDATE api_keys SET revoked_at = coalesce(revoked_at, %s) WHERE id = %s",
                        (at, key_id))
            return bool(cur.rowcount > 0)
