"""The SQLite store's ``indexes`` part: keyword search (``sqlite.keywords``), vector search
(``sqlite.vector``) and the vectors stored in the record rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..._types import TermStats
from ...filters import Selection
from ..parts.indexes import Indexes
from .keywords import SQLiteKeywords
from .rows import chunks as _chunks
from .sql import selection_sql
from .vector import SQLiteVectors

if TYPE_CHECKING:
    from .store import SQLiteStore

__all__ = ["SQLiteIndexes"]


class SQLiteIndexes(Indexes):
    """FTS5 statistics and BM25 scores, numpy or HNSW vector search, stored vectors."""

    _s: SQLiteStore

    def __init__(self, store: SQLiteStore) -> None:
        super().__init__(store)
        self._keywords = SQLiteKeywords(store)
        #: the vector indexes held in memory (the store saves them on close, drops them on an
        #: erase)
        self.vectors = SQLiteVectors(store)

    def term_stats(self, sel: Selection, terms: Sequence[str], *, selection_up_to: int,
                   cap: Callable[[int], int]) -> TermStats:
        return self._keywords.term_stats(sel, terms, selection_up_to=selection_up_to, cap=cap)

    def keyword_scores(self, sel: Selection, weighted: Sequence[tuple[str, float]], limit: int
                       ) -> list[tuple[str, float]]:
        return self._keywords.keyword_scores(sel, weighted, limit)

    def vector_search(self, sel: Selection, vector: np.ndarray, limit: int
                      ) -> list[tuple[str, float]]:
        return self.vectors.vector_search(sel, vector, limit)

    def _vectors_by_key(self, sql: str, first: str, keys: Sequence[str]
                        ) -> dict[str, np.ndarray]:
        """Run ``sql`` (with ``{q}`` for the key placeholders) over chunks of keys and collect
        (key, float32 blob) rows."""
        out: dict[str, np.ndarray] = {}
        with self._s.read() as db:
            for chunk in _chunks(list(keys)):
                for key, blob in db.execute(sql.format(q=",".join("?" * len(chunk))),
                                            (first, *chunk)):
                    out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def selection_vectors(self, sel: Selection) -> tuple[list[str], np.ndarray]:
        where, params = selection_sql(sel)
        with self._s.read() as db:
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

    def set_embeddings(self, namespace: str, items: Sequence[tuple[str, np.ndarray]],
                       model: str) -> None:
        if not items:
            return
        with self._s.write() as db:
            db.executemany(
                "UPDATE records SET embedding = ?, embed_model = ?, needs_embedding = 0 "
                "WHERE +namespace = ? AND id = ?",
                [(np.asarray(v, np.float32).tobytes(), model, namespace, rid) for rid, v in items])
