"""The PostgreSQL store's ``indexes`` part: full-text statistics and scores (its tsvector
index) and pgvector's search (an HNSW index per dimension)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...filters import Selection
from ..parts.indexes import Indexes
from ..protocol import TermStats
from .rows import from_db as _from_db
from .rows import scalar as _scalar
from .rows import vec as _vec
from .sql import selection_sql

if TYPE_CHECKING:
    from .store import PostgresStore

__all__ = ["PgIndexes"]


class PgIndexes(Indexes):
    """Keyword and vector search of a PostgreSQL store, and its stored vectors."""

    _s: PostgresStore

    def term_stats(self, sel: Selection, terms: Sequence[str], *, selection_up_to: int,
                   cap: Callable[[int], int]) -> TermStats:
        where, params = selection_sql(sel)
        ns = sel.namespace
        # the namespace's records of the selection's vector space
        ns_where = "namespace = %s" + ("" if sel.space is None else " AND space = %s")
        ns_params = (ns,) if sel.space is None else (ns, sel.space)
        with self._s.conn(write=False) as cur:
            in_ns = self._s.cached((ns, f"\x01{sel.space}"), lambda: _scalar(
                cur, f"SELECT count(*) FROM records WHERE {ns_where}", ns_params))
            in_sel = None if sel == Selection(ns, space=sel.space) else _scalar(
                cur, f"SELECT count(*) FROM (SELECT 1 FROM records r WHERE {where} LIMIT %s) t",
                (*params, selection_up_to + 1))
            own = in_sel is not None and in_sel <= selection_up_to
            records = int(in_sel) if own and in_sel is not None else in_ns
            upto = cap(records) + 1
            if own:
                matches = {w: int(_scalar(
                    cur, f"SELECT count(*) FROM (SELECT 1 FROM records r WHERE {where} AND "
                    "r.tsv @@ plainto_tsquery('english', %s) LIMIT %s) t", (*params, w, upto)))
                    for w in terms}
            else:
                matches = {w: self._s.cached(
                    (f"{ns}\0{sel.space}\0{upto}", w), lambda w=w: _scalar(
                    cur, f"SELECT count(*) FROM (SELECT 1 FROM records WHERE {ns_where} AND "
                    "tsv @@ plainto_tsquery('english', %s) LIMIT %s) t", (*ns_params, w, upto)))
                    for w in terms}
        return TermStats(records, matches, own)

    def keyword_scores(self, sel: Selection, weighted: Sequence[tuple[str, float]], limit: int
                       ) -> list[tuple[str, float]]:
        """The weighted sum of ``ts_rank`` (normalised by the log of the record's length),
        in one query."""
        terms = [(w, x) for t, x in weighted if (w := t.replace('"', " ").strip())]
        if not terms or limit <= 0:
            return []
        where, params = selection_sql(sel)
        score = " + ".join("%s * ts_rank(r.tsv, plainto_tsquery('english', %s), 1)"
                           for _ in terms)
        match = " || ".join("plainto_tsquery('english', %s)" for _ in terms)
        score_params = [x for w, weight in terms for x in (weight, w)]
        with self._s.conn(write=False) as cur:
            rows = cur.execute(
                f"SELECT r.id, {score} AS s FROM records r WHERE r.tsv @@ ({match}) AND {where} "
                "ORDER BY s DESC, r.seq LIMIT %s",
                (*score_params, *(w for w, _ in terms), *params, limit)).fetchall()
        return [(rid, float(s)) for rid, s in rows]

    def vector_search(self, sel: Selection, vector: np.ndarray, limit: int
                      ) -> list[tuple[str, float]]:
        query = _vec(vector)
        if limit <= 0:
            return []
        dim = int(query.shape[0])
        where, params = selection_sql(sel)
        distance = f"(r.embedding::vector({dim}) <=> %s::vector({dim}))"
        with self._s.conn(write=True) as cur:  # a transaction, for the SET LOCALs
            cur.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(1000, 2 * limit))}")
            cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = cur.execute(
                f"SELECT r.id, r.seq, 1 - {distance} FROM records r WHERE {where} "
                f"AND vector_dims(r.embedding) = {dim} ORDER BY {distance} LIMIT %s",
                (query, *params, query, limit)).fetchall()
        rows.sort(key=lambda row: (-row[2], row[1]))  # relaxed order: settle it exactly
        return [(rid, float(score)) for rid, _, score in rows]

    def selection_vectors(self, sel: Selection) -> tuple[list[str], np.ndarray]:
        where, params = selection_sql(sel)
        with self._s.conn(write=False) as cur:
            rows = cur.execute(f"SELECT r.id, r.embedding FROM records r WHERE {where} "
                               "AND r.embedding IS NOT NULL ORDER BY r.seq", params,
                               binary=True).fetchall()  # pgvector's text form: 28 µs a row
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        vectors = [(rid, _from_db(v)) for rid, v in rows]
        dims = [len(v) for _, v in vectors]
        if len(set(dims)) > 1:  # vectors of several models: keep the most common size
            size = max(set(dims), key=dims.count)
            vectors = [r for r in vectors if len(r[1]) == size]
        return [r[0] for r in vectors], np.vstack([r[1] for r in vectors])

    def embeddings(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not ids:
            return {}
        with self._s.conn(write=False) as cur:
            rows = cur.execute("SELECT id, embedding FROM records WHERE namespace = %s AND "
                               "id = ANY(%s) AND embedding IS NOT NULL",
                               (namespace, list(ids)), binary=True).fetchall()
        return {rid: _from_db(v) for rid, v in rows}

    def set_embeddings(self, namespace: str, items: Sequence[tuple[str, np.ndarray]],
                       model: str) -> None:
        if not items:
            return
        vectors = [(rid, _vec(v)) for rid, v in items]
        self._s.ensure_vector_index({len(v) for _, v in vectors})
        with self._s.conn(write=True) as cur:
            cur.executemany(
                "UPDATE records SET embedding = %s, embed_model = %s, needs_embedding = false "
                "WHERE namespace = %s AND id = %s",
                [(v, model, namespace, rid) for rid, v in sorted(vectors, key=lambda x: x[0])])
