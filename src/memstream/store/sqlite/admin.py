"""The SQLite store's parts that are not its records or indexes: its work queues (embeddings,
ratings), its pages for ``migrate`` and its API keys (each an object over the store's
connection: ``sqlite.SQLiteStore`` makes them)."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._types import HistoryEntry, Record
from ...core import jsonio as _json
from ..parts.common import Keys
from ..parts.queues import Queues
from ..parts.transfer import Copying
from ..protocol import ApiKey
from .rows import SELECT as _SELECT
from .rows import row_to_record as _row_to_record

_dumps = _json.dumps


class SQLiteQueues(Queues):
    """The queues of a SQLite store: its records in insertion order (rowid)."""

    def pending_ratings(self, limit: int) -> list[tuple[str, str, str, str]]:
        with self._session(False) as db:
            rows = db.execute("SELECT namespace, id, text, kind FROM records "
                              "WHERE needs_rating = 1 ORDER BY rowid LIMIT ?", (limit,)).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def _rated(self, namespace: str, record_id: str) -> None:
        with self._session(True) as db:
            db.execute("UPDATE records SET needs_rating = 0 WHERE +namespace = ? AND id = ?",
                       (namespace, record_id))

    def pending_embeddings(self, limit: int, *, owner: str | None = None,
                           lease: float = 60.0) -> list[tuple[str, str, str]]:
        if owner is None:
            with self._session(False) as db:
                rows = db.execute("SELECT namespace, id, text FROM records WHERE "
                                  "needs_embedding = 1 ORDER BY rowid LIMIT ?",
                                  (limit,)).fetchall()
            return [(r[0], r[1], r[2]) for r in rows]
        now = time.time()
        with self._session(True) as db:
            rows = db.execute(
                "SELECT rowid, namespace, id, text FROM records WHERE needs_embedding = 1 AND "
                "(embed_until IS NULL OR embed_until <= ? OR embed_owner = ?) ORDER BY rowid "
                "LIMIT ?", (now, owner, limit)).fetchall()
            db.executemany("UPDATE records SET embed_owner = ?, embed_until = ? WHERE rowid = ?",
                           [(owner, now + lease, r[0]) for r in rows])
        return [(r[1], r[2], r[3]) for r in rows]


class SQLiteTransfer(Copying):
    """A SQLite store's pages."""

    def records_page(self, namespace: str, after: str | None, limit: int
                     ) -> list[tuple[Record, str | None]]:
        with self._session(False) as db:
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
        with self._session(False) as db:
            rows = db.execute("SELECT seq, record_id, namespace, event, at, old, new FROM history "
                              "WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)).fetchall()
        return [(r[0], HistoryEntry(r[1], r[2], r[3], r[4], json.loads(r[5]) if r[5] else None,
                                    json.loads(r[6]) if r[6] else None)) for r in rows]

    def put_history(self, entries: Sequence[HistoryEntry]) -> None:
        with self._session(True) as db:
            db.executemany("INSERT INTO history(namespace, record_id, event, at, old, new) "
                           "VALUES (?, ?, ?, ?, ?, ?)",
                           [(e.namespace, e.record_id, e.event, e.at,
                             None if e.old is None else _dumps(e.old),
                             None if e.new is None else _dumps(e.new)) for e in entries])


class SQLiteKeys(Keys):
    """The API keys of a SQLite store (``api_keys``)."""

    def put_key(self, key: ApiKey) -> None:
        with self._session(True) as db:
            db.execute("INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (key.id, key.hash, key.name, _dumps(list(key.namespaces)), key.role,
                        key.created_at, key.revoked_at))

    def _keys(self, where: str, params: tuple[Any, ...]) -> list[ApiKey]:
        with self._session(False) as db:
            rows = db.execute("SELECT id, hash, name, namespaces, role, created_at, revoked_at "
                              f"FROM api_keys {where}", params).fetchall()
        return [ApiKey(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6])
                for r in rows]

    def revoke_key(self, key_id: str, *, at: float) -> bool:
        with self._session(True) as db:
            return bool(db.execute("UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) "
                                   "WHERE id = ?", (at, key_id)).rowcount > 0)
