"""Keyword statistics and raw BM25 scores in the SQLite store, from FTS5 (a component of its
``indexes`` part); the ranking policy is ``retrieval.keywords``'s."""

from __future__ import annotations

import dataclasses
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ...filters import Selection
from ..protocol import TermStats
from .sql import selection_sql

if TYPE_CHECKING:
    from .store import SQLiteStore

#: weights this close (relatively) to FTS5's own idf are taken as FTS5's: one query ranks all
#: the terms at once instead of one query per term
SAME_WEIGHT = 0.02
#: a selection of at most this many records gets exact keyword scores on every path (see
#: ``keyword_scores``)
EXACT_KEYWORDS = 5000
#: SQLite 3.35 or later (each term's scores are materialized on their own)
_MATERIALIZED = sqlite3.sqlite_version_info >= (3, 35)
LARGE_COUNT = 5000  # keyword statistics above this are reused for COUNT_TTL seconds
COUNT_TTL = 60.0


class SQLiteKeywords:
    """Keyword statistics and raw BM25 scores of a SQLite store, with the counts and rowid
    spans it keeps between searches (valid until this process or another writes)."""

    def __init__(self, store: SQLiteStore) -> None:
        self._s = store
        self._counts: dict[tuple[str, str], tuple[int, tuple[int, tuple[int, int]], float]] = {}
        #: per thread, the connection and its ``PRAGMA data_version`` in the current read
        #: snapshot (another connection's commit changes it; each has its own numbers)
        self._snap = threading.local()
        self._spans: dict[tuple[str, str | None], tuple[int, int, int, tuple[int, int]]] = {}

    def term_stats(self, sel: Selection, terms: Sequence[str], *, selection_up_to: int,
                   cap: Callable[[int], int]) -> TermStats:
        """A term is first counted among the records whose rowids lie in the span of its
        namespace (``_span``): one read of the keyword index, no join. Held by more than
        ``cap(rows of the whole index)`` of them, it is reported over the cap without being
        counted in the selection (counting it would read all those entries, as PostgreSQL's
        planner would, SQLite has no cheap way to count a common term within a user). A
        namespace written in one stretch owns every rowid of its span: there that first count
        is the namespace's own, and other namespaces never shift it."""
        asked = sel
        with self._snapshot(sel) as (db, sel):
            where, params = selection_sql(sel)
            plain = sel == Selection(sel.namespace, space=sel.space)
            # the namespace's records of the selection's vector space (an agent's states are
            # not the text memories' statistics)
            ns_where = "r.namespace = ?" + ("" if sel.space is None else " AND r.space = ?")
            ns_params = [sel.namespace] + ([] if sel.space is None else [sel.space])
            in_ns = self._count((sel.namespace, f"\x01{sel.space}"), lambda: db.execute(
                f"SELECT count(*) FROM records r WHERE {ns_where}", ns_params).fetchone()[0])
            in_sel = None if plain else self._s.records.count(asked, limit=selection_up_to)
            own = in_sel is not None and in_sel <= selection_up_to
            records = in_sel if own and in_sel is not None else in_ns
            if not own:
                where, params = ns_where, ns_params
            upto = cap(records) + 1
            scope = f"\0{upto}\0{where}\0{params!r}"  # counts cached per selection and cap
            block = db.execute("SELECT block FROM records_fts_data WHERE id = 1").fetchone()
            total = _varint(block[0]) if block else 0  # FTS5's own row count
            everywhere = cap(total) + 1
            whole = not own and records == total  # the namespace is the whole index
            lo, hi = self._span(db, sel.namespace, sel.space)
            # the namespace holds every rowid of its span: a count in the span is its own
            packed = not own and hi - lo + 1 == in_ns
            # CROSS JOIN: the keyword index leads; led by the namespace or scope index, SQLite
            # would probe the keyword index once per record (seconds at 100,000)
            sql = ("SELECT count(*) FROM (SELECT 1 FROM records_fts CROSS JOIN records r ON "
                   "r.rowid = records_fts.rowid WHERE records_fts MATCH ? AND "
                   f"records_fts.rowid BETWEEN ? AND ? AND {where} LIMIT ?)")
            matches: dict[str, int] = {}
            for term in terms:
                quoted = _quote(term)
                if quoted is None:
                    continue
                stored = self._count((f"\0df{everywhere}\0{lo}:{hi}", quoted),
                                     lambda q=quoted: db.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM records_fts WHERE records_fts MATCH ? "
                    "AND rowid BETWEEN ? AND ? LIMIT ?)", (q, lo, hi, everywhere)
                ).fetchone()[0])
                if stored >= everywhere:
                    matches[term] = upto
                    continue
                if whole:  # the count of the whole index, which keyword_scores reads again
                    self._counts.setdefault(("", quoted), (
                        stored, (self._s.generation, self._snap.version), time.monotonic()))
                if whole or packed:
                    matches[term] = stored
                    continue

                def count(q: str = quoted) -> int:
                    return int(db.execute(sql, (q, lo, hi, *params, upto)).fetchone()[0])
                matches[term] = self._count((scope, quoted), count)
        return TermStats(records, matches, own)

    def keyword_scores(self, sel: Selection, weighted: Sequence[tuple[str, float]], limit: int
                       ) -> list[tuple[str, float]]:
        """FTS5 ranks by BM25 with the idf of the whole table; each term's FTS5 score is
        divided by that idf and multiplied by the weight asked. When every weight is within
        ``SAME_WEIGHT`` of the table's own idf (a namespace that is nearly the whole table),
        one query of all the terms ranks by the sum. Otherwise each term is scored alone and
        the scores are added: over the whole selection when it holds at most
        ``EXACT_KEYWORDS`` records (in one query), else over each term's best ``max(4 *
        limit, 200)`` records (a record missing from a term's list then lacks that term's
        score)."""
        terms = [(q, w) for t, w in weighted if (q := _quote(t)) is not None]
        if not terms or limit <= 0:
            return []
        asked = sel
        with self._snapshot(sel) as (db, sel):
            where, params = selection_sql(sel)
            # the span of the namespace bounds the read of a term held mostly elsewhere
            span = self._span(db, sel.namespace, sel.space)
            match = (f"SELECT r.rowid AS rid, r.id AS id, bm25(records_fts) AS s FROM "
                     f"records_fts JOIN records r ON r.rowid = records_fts.rowid "
                     f"WHERE records_fts MATCH ? AND records_fts.rowid BETWEEN ? AND ? "
                     f"AND {where}")
            block = db.execute("SELECT block FROM records_fts_data WHERE id = 1").fetchone()
            total = _varint(block[0]) if block else 0  # FTS5's own row count
            ratio = [w / _idf(total, self._count(("", q), lambda q=q: db.execute(
                "SELECT count(*) FROM records_fts WHERE records_fts MATCH ?",
                (q,)).fetchone()[0])) for q, w in terms]
            if all(abs(r - 1.0) <= SAME_WEIGHT for r in ratio):
                rows = db.execute(match + " ORDER BY s, rid LIMIT ?", (
                    " OR ".join(q for q, _ in terms), *span, *params, limit)).fetchall()
                return [(rid, -score) for _, rid, score in rows]
            exact = _MATERIALIZED and \
                self._s.records.count(asked, limit=EXACT_KEYWORDS) <= EXACT_KEYWORDS
            if exact:
                # each term's scores materialized on their own (bm25 needs its own MATCH)
                each = match.replace("bm25(records_fts) AS s", "bm25(records_fts) * ? AS s"
                                     ).replace(" JOIN ", " CROSS JOIN ")  # the keyword index leads
                ctes = ", ".join(f"t{n} AS MATERIALIZED ({each})" for n in range(len(terms)))
                union = " UNION ALL ".join(f"SELECT * FROM t{n}" for n in range(len(terms)))
                rows = db.execute(
                    f"WITH {ctes} SELECT rid, id, sum(s) AS t FROM ({union}) "
                    "GROUP BY rid ORDER BY t, rid LIMIT ?",
                    [*(v for (q, _), r in zip(terms, ratio, strict=True)
                       for v in (r, q, *span, *params)), limit]).fetchall()
                return [(rid, -score) for _, rid, score in rows]
            scores: dict[int, float] = {}
            names: dict[int, str] = {}
            per_term = max(4 * limit, 200)
            for (q, _), r in zip(terms, ratio, strict=True):
                for rowid, rid, score in db.execute(match + " ORDER BY s, rid LIMIT ?",
                                                    (q, *span, *params, per_term)).fetchall():
                    scores[rowid] = scores.get(rowid, 0.0) - score * r
                    names[rowid] = rid
        best = sorted(scores, key=lambda r: (-scores[r], r))[:limit]
        return [(names[r], scores[r]) for r in best]

    @contextmanager
    def _snapshot(self, sel: Selection) -> Iterator[tuple[sqlite3.Connection, Selection]]:
        """One read snapshot, with the selection's test of the text space dropped when its
        namespace holds no record of a named space: the test then excludes nothing, and costs
        a read of the last column of every record a keyword matches."""
        with self._s.read() as db:
            own = not db.in_transaction
            if own:
                db.execute("BEGIN")
            try:
                self._snap.version = (id(db),
                                      db.execute("PRAGMA data_version").fetchall()[0][0])
                if sel.space == "" and db.execute(
                        "SELECT 1 FROM records WHERE namespace = ? AND space > '' LIMIT 1",
                        (sel.namespace,)).fetchone() is None:
                    sel = dataclasses.replace(sel, space=None)
                yield db, sel
            finally:
                if own:
                    db.execute("COMMIT")

    def _span(self, db: sqlite3.Connection, namespace: str, space: str | None
              ) -> tuple[int, int]:
        """The smallest and the largest rowid of the namespace's records (of ``space``; None:
        of every space); (1, 0) when it has none. Rowids never move and a new record takes one
        above every other, so the span holds all the namespace's records until the next
        insert: it is kept until this process inserts (``_grown``) or another connection
        commits (``PRAGMA data_version``)."""
        version: tuple[int, int] = self._snap.version
        hit = self._spans.get((namespace, space))
        if hit is not None and hit[2:] == (self._s.grown, version):
            return hit[0], hit[1]
        where = "namespace = ?" + ("" if space is None else " AND space = ?")
        lo, hi = db.execute(f"SELECT min(rowid), max(rowid) FROM records WHERE {where}",
                            [namespace] + ([] if space is None else [space])).fetchone()
        span = (1, 0) if lo is None else (int(lo), int(hi))
        if len(self._spans) > 10_000:
            self._spans.clear()
        self._spans[(namespace, space)] = (*span, self._s.grown, version)
        return span

    def _count(self, key: tuple[str, str], compute: Any) -> int:
        """A count for keyword statistics: recounted after a write (by this process or, seen
        through ``PRAGMA data_version``, by another) when it is small (cheap), reused for up to
        a minute when it is large (it then barely moves)."""
        now = time.monotonic()
        stamp = (self._s.generation, self._snap.version)
        hit = self._counts.get(key)
        if hit is not None and (hit[1] == stamp
                                or (hit[0] > LARGE_COUNT and now - hit[2] < COUNT_TTL)):
            return hit[0]
        value = int(compute())
        if len(self._counts) > 50_000:
            self._counts.clear()
        self._counts[key] = (value, stamp, now)
        return value


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


def _quote(term: str) -> str | None:
    """A plain word as an FTS5 phrase (None when nothing is left of it)."""
    word = term.replace('"', "").strip()
    return f'"{word}"' if word else None


def _idf(rows: int, hits: int) -> float:
    """FTS5's bm25 idf: log((N - n + 0.5) / (n + 0.5)), at least 1e-6. A large count is
    reused for a while (``COUNT_TTL``): after an erase it may pass the rows left."""
    if rows <= 0:
        return 1e-6
    hits = min(max(hits, 0), rows)
    return max(1e-6, math.log((rows - hits + 0.5) / (hits + 0.5)))


