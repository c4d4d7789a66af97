"""A store's ``kv`` part (``protocol.KeyValue``): meta values and the embedding cache, the same
SQL on every backend (only the placeholder differs), over the store's connection."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .backend import Backend

__all__ = ["KeyValues"]

#: hashes per ``IN (...)`` list, well under SQLite's limit of bound parameters
CHUNK = 500


class KeyValues:
    """Meta values (``meta``) and vectors cached by model and content hash
    (``embedding_cache``)."""

    def __init__(self, backend: Backend) -> None:
        self._session = backend.session
        self._ph = backend.PLACEHOLDER
        self._lock = backend.ROW_LOCK

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        keys = list(dict.fromkeys(hashes))
        if not keys:
            return out
        with self._session(False) as db:
            for start in range(0, len(keys), CHUNK):
                part = keys[start:start + CHUNK]
                rows = db.execute(
                    f"SELECT hash, vector FROM embedding_cache WHERE model = {self._ph} AND "
                    f"hash IN ({', '.join([self._ph] * len(part))})", (model, *part)).fetchall()
                out.update((h, np.frombuffer(bytes(blob), dtype=np.float32)) for h, blob in rows)
        return out

    def cache_vectors(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Keep vectors (the first one stored under a hash stays); in hash order, so that two
        writers never wait on each other's rows in turn."""
        if not items:
            return
        ph = self._ph
        with self._session(True) as db:
            db.executemany(f"INSERT INTO embedding_cache VALUES ({ph}, {ph}, {ph}) "
                           "ON CONFLICT DO NOTHING",
                           [(model, h, np.asarray(v, np.float32).tobytes())
                            for h, v in sorted(items, key=lambda item: item[0])])

    def meta_items(self) -> dict[str, str]:
        with self._session(False) as db:
            return dict(db.execute("SELECT key, value FROM meta WHERE key <> 'schema_version' "
                                   "ORDER BY key").fetchall())

    def get_meta(self, key: str) -> str | None:
        with self._session(False) as db:
            row = db.execute(f"SELECT value FROM meta WHERE key = {self._ph}", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        ph = self._ph
        with self._session(True) as db:
            db.execute(f"INSERT INTO meta VALUES ({ph}, {ph}) ON CONFLICT (key) DO UPDATE "
                       "SET value = excluded.value", (key, value))

    def update_meta(self, keys: Sequence[str],
                    change: Callable[[dict[str, str | None]], Mapping[str, str]]) -> None:
        """Read, change and write some values in one transaction, locked meanwhile (no other
        writer, of this process or another, changes them between the read and the write):
        ``change`` gets each key's stored value (None: none) and returns the values to write
        (the keys it leaves out stay as they are)."""
        ph = self._ph
        keys = sorted(set(keys))  # always locked in one order: two writers never wait in turn
        with self._session(True) as db:
            if self._lock:  # a row to lock for each key, made when there is none yet
                db.executemany(f"INSERT INTO meta VALUES ({ph}, {ph}) ON CONFLICT (key) DO "
                               "NOTHING", [(k, "") for k in keys])
            rows = dict(db.execute(
                f"SELECT key, value FROM meta WHERE key IN ({', '.join([ph] * len(keys))}) "
                f"ORDER BY key{self._lock}", keys).fetchall())
            new = change({k: None if rows.get(k) in (None, "") else str(rows[k]) for k in keys})
            db.executemany(f"INSERT INTO meta VALUES ({ph}, {ph}) ON CONFLICT (key) DO UPDATE "
                           "SET value = excluded.value", sorted(new.items()))
