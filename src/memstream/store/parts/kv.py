"""A store's ``kv`` part (``protocol.KeyValue``): meta values and the embedding cache, the same
SQL on every backend (only the placeholder differs), over the store's connection."""

from __future__ import annotations

from collections.abc import Sequence

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
