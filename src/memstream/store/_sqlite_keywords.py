"""Keyword search in the SQLite store: FTS5's BM25, rescaled to the statistics of what a search
selects (a mixin of ``sqlite.SQLiteStore``)."""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from .. import _json
from ..filters import Selection
from ._common import SELECTION_STATS
from ._sqlite_sql import selection_sql

_dumps = _json.dumps


MAX_DF_FLOOR = 2000  # keyword terms in more records than this (and than the ratio) are dropped
MAX_DF_RATIO = 0.02
LARGE_COUNT = 5000  # keyword statistics above this are reused for COUNT_TTL seconds
NS_COUNT_CAP = 2000  # a term's matches in a namespace are counted up to this, then estimated
COUNT_TTL = 60.0


class SQLiteKeywords:
    _counts: dict[tuple[str, str], tuple[int, int, float]]
    _generation: int

    # what the store provides (sqlite.SQLiteStore)
    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def keyword_search(self, sel: Selection, terms: Sequence[str], limit: int
                       ) -> list[tuple[str, float]]:
        """BM25 with the statistics of what the search selects. FTS5 ranks with the document
        frequencies of the whole table, so other namespaces, or other users of the same one,
        would shift the ranking; each term's FTS5 score is therefore rescaled by idf(in the
        selection) / idf(in the table), and a record's score is the sum over the terms it
        holds. A selection of more than ``SELECTION_STATS`` records uses its namespace's
        statistics instead (close enough, and cheaper to count). When no term needs rescaling
        (a selection of the namespace's statistics, in a namespace that is most of the table),
        one query of all the terms ranks by the exact sum, as the PostgreSQL store does."""
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
            if not 0 < in_sel <= SELECTION_STATS and 2 * in_ns >= total:
                # every term keeps FTS5's own weight: one query ranks by the whole BM25 sum
                rows = db.execute(sql, (" OR ".join(quoted), *params, limit)).fetchall()
                return [(rid, -score) for _, rid, score in rows]
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
        df = {t: min(cap + 1, self._count((f"\0df{cap}", t), lambda t=t: db.execute(
            "SELECT count(*) FROM (SELECT 1 FROM records_fts WHERE records_fts MATCH ? LIMIT ?)",
            (t, cap + 1)).fetchone()[0])) for t in quoted}
        kept = [t for t in quoted if df[t] <= cap]
        return kept or [min(quoted, key=lambda t: df[t])]


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


