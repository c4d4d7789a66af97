"""Vector search in the SQLite store: exact with numpy over a namespace's vectors, or through an
HNSW graph above ``ann_threshold`` (a component of the store's ``indexes`` part)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...core import jsonio as _json
from ...filters import Selection
from ..parts.vectors import OP_REMOVED, VectorIndex, top_order
from . import ann as _ann
from .ann import AnnIndex
from .rows import chunks as _chunks
from .sql import selection_sql

if TYPE_CHECKING:
    from .store import SQLiteStore

_dumps = _json.dumps


ANN_THRESHOLD = 50_000  # vectors in a namespace above which an HNSW graph serves searches
ANN_MAX_FETCH = 4096  # candidates asked of the graph before falling back to exact search
EXACT_SELECTION = 50_000  # a filtered search over at most this many records is exact


#: meta key prefix: the change-log position of a namespace space's last erase; an HNSW graph
#: built before it holds erased vectors (a removed entry keeps its data), so it is rebuilt
#: and never saved
ERASED = "ann_erased:"


def vector_key(namespace: str, space: str) -> str:
    """What the vector indexes and their change log are kept by: a namespace's vectors of one
    space (the same expression as the log's triggers)."""
    return namespace if not space else f"{namespace}\x1f{space}"


def _split(key: str) -> tuple[str, str]:
    namespace, _, space = key.partition("\x1f")
    return namespace, space


class SQLiteVectors:
    """Vector search of a SQLite store, with the vector indexes it keeps in memory (one per
    namespace and space, exact or an HNSW graph)."""

    def __init__(self, store: SQLiteStore) -> None:
        self._s = store
        self._ann: dict[str, AnnIndex] = {}
        self._ann_warned = False
        self._vectors: dict[str, VectorIndex] = {}
        #: the indexes above: searches run beside writes and beside each other, so they are
        #: kept by a lock of their own (taken after a reading connection, never before)
        self._mutex = threading.RLock()

    def _index(self, db: sqlite3.Connection, namespace: str, dim: int) -> VectorIndex:
        """The vector index of a ``vector_key`` (a namespace's vectors of one space), brought
        up to date with the change log."""
        index = self._vectors.get(namespace)
        if index is None or index.dim != dim:
            index = VectorIndex(dim)
            self._vectors[namespace] = index
            db.execute("BEGIN")  # one snapshot for the log position and the rows
            try:
                index.last_seq = db.execute(
                    "SELECT coalesce(max(seq), 0) FROM vector_log").fetchone()[0]
                index.upsert(db.execute(
                    "SELECT rowid, embedding, invalidated_at IS NULL FROM records "
                    "WHERE namespace = ? AND space = ? AND embedding IS NOT NULL ORDER BY rowid",
                    _split(namespace)))
            finally:
                db.execute("COMMIT")
            return index
        # the log's end now: this namespace's changes up to it are replayed, and the position
        # moves there even when none are this namespace's, so that entries of other
        # namespaces (an agent's states, say) are read past once and not at every search
        top = db.execute("SELECT coalesce(max(seq), 0) FROM vector_log").fetchone()[0]
        changes = db.execute("SELECT rid, op FROM vector_log WHERE seq > ? AND seq <= ? "
                             "AND namespace = ? ORDER BY seq",
                             (index.last_seq, top, namespace)).fetchall()
        index.last_seq = max(index.last_seq, top)
        if not changes:
            return index
        final: dict[int, int] = dict(changes)
        index.remove(rid for rid, op in final.items() if op == OP_REMOVED)
        live = [rid for rid, op in final.items() if op != OP_REMOVED]
        for chunk in _chunks(live):
            index.upsert(db.execute(
                f"SELECT rowid, embedding, invalidated_at IS NULL FROM records WHERE rowid IN "
                f"({','.join('?' * len(chunk))}) AND embedding IS NOT NULL", chunk))
        gone = [rid for rid in live if rid not in index]
        index.remove(gone)
        return index

    def vector_search(self, sel: Selection, vector: np.ndarray, limit: int
                      ) -> list[tuple[str, float]]:
        query = np.asarray(vector, dtype=np.float32).ravel()
        if limit <= 0:
            return []
        space = sel.space or ""  # vectors are compared within one space
        key = vector_key(sel.namespace, space)
        with self._s.read() as db, self._mutex:
            index = self._index(db, key, query.shape[0])
            include_invalid = sel.include_invalid or sel.as_of is not None
            plain = Selection(sel.namespace, include_invalid=sel.include_invalid, space=space)
            ann = self._ann_index(db, key, index)
            if ann is not None:
                return self._ann_top(db, sel, sel == plain, index, ann, query, limit)
            if not index.keeps_vectors:  # the graph no longer serves: exact search again
                self._vectors.pop(key, None)
                index = self._index(db, key, query.shape[0])
            rids, scores = index.scores(query, include_invalid=include_invalid)
            if sel == plain:
                order = top_order(rids, scores, limit)
                return self._ids_for(db, [(int(rids[i]), float(scores[i])) for i in order])
            return self._filtered_top(db, sel, rids, scores, limit)

    # --- the approximate index ---------------------------------------------------------------

    def _ann_path(self, namespace: str, dim: int) -> Path | None:
        if self._s.path == ":memory:":
            return None
        return _ann.file_for(Path(self._s.path + ".ann"), namespace, dim)

    def drop_ann(self, namespace: str, spaces: Sequence[str] = ("",)) -> None:
        """Forget the namespace's HNSW graphs of these spaces, in memory and on disk (a graph
        keeps the vectors of removed entries): each is built again, from what is stored,
        when next needed."""
        with self._mutex:
            for space in spaces:
                key = vector_key(namespace, space)
                self._ann.pop(key, None)
                if self._s.path != ":memory:":
                    for file in _ann.files_for(Path(self._s.path + ".ann"), key):
                        file.unlink(missing_ok=True)

    def _ann_index(self, db: sqlite3.Connection, namespace: str, index: VectorIndex
                   ) -> AnnIndex | None:
        """The namespace's HNSW graph when it is large enough, in step with the change log."""
        if not self._s.ann_threshold or len(index) <= self._s.ann_threshold:
            return None
        if not _ann.available():
            if not self._ann_warned:
                self._ann_warned = True
                _ann.log.warning("namespace %r holds %d vectors: searches stay exact; pip "
                                 "install 'memstream[ann]' for an approximate index",
                                 namespace, len(index))
            return None
        ann = self._ann.get(namespace)
        path = self._ann_path(namespace, index.dim)
        if ann is not None and ann.built_seq < self._erased_at(db, namespace):
            ann = None  # built before an erase (in another process, maybe): built again
            self._ann.pop(namespace, None)
        if ann is None or ann.dim != index.dim:
            ann = AnnIndex.load(path, index.dim, namespace) if path is not None else None
            if ann is None or ann.last_seq > index.last_seq:
                if not index.keeps_vectors:  # build from a full exact index
                    self._vectors.pop(namespace, None)
                    index = self._index(db, namespace, index.dim)
                rids, mat = index.live()
                _ann.log.info("building the HNSW index of %r (%d vectors)", namespace, len(rids))
                ann = AnnIndex.build(index.dim, rids, mat, index.last_seq)
                if path is not None:
                    ann.save(path, namespace)
            self._ann[namespace] = ann
        if ann.last_seq < index.last_seq:  # replay what changed since the graph's position
            changes = db.execute(
                "SELECT rid, op FROM vector_log WHERE seq > ? AND seq <= ? AND namespace = ? "
                "ORDER BY seq", (ann.last_seq, index.last_seq, namespace)).fetchall()
            final = dict(changes)
            ann.remove([rid for rid, op in final.items() if op == OP_REMOVED])
            live = [rid for rid, op in final.items() if op != OP_REMOVED]
            ann.upsert(*self._stored_vectors(db, live, index.dim))
            ann.last_seq = index.last_seq
        index.drop_vectors()  # the graph holds them: ~1.5 GB less at a million 384-d vectors
        return ann

    def _stored_vectors(self, db: sqlite3.Connection, rowids: Sequence[int], dim: int
                        ) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, matrix) of these rows' stored embeddings of ``dim`` dimensions."""
        found: list[tuple[int, bytes]] = []
        for chunk in _chunks(list(rowids)):
            found += db.execute(f"SELECT rowid, embedding FROM records WHERE rowid IN "
                                f"({','.join('?' * len(chunk))}) AND embedding IS NOT NULL",
                                chunk).fetchall()
        found = [(r, b) for r, b in found if len(b) == 4 * dim]
        rids = np.array([r for r, _ in found], dtype=np.int64)
        mat = np.frombuffer(b"".join(b for _, b in found), dtype=np.float32).reshape(-1, dim)
        return rids, mat

    def _ann_top(self, db: sqlite3.Connection, sel: Selection, plain: bool, index: VectorIndex,
                 ann: AnnIndex, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """Candidates from the graph, widened until ``limit`` of them pass validity and the
        selection. A selection of at most ``exact_selection`` records (counted on its index)
        is scored exactly over its own rows instead, and so is one too narrow for the graph."""
        include_invalid = sel.include_invalid or sel.as_of is not None
        where, params = selection_sql(sel)
        cap = self._s.exact_selection
        narrow = not plain and self._s.records.count(sel, limit=cap) <= cap
        rids, sims = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        fetch = max(2 * limit, 100)
        while not narrow:
            rids, sims = ann.query(query, fetch)
            ok = index.admits(rids, include_invalid=include_invalid)
            rids, sims = rids[ok], sims[ok]
            if not plain and len(rids):
                allowed: set[int] = set()
                for sub in _chunks([int(r) for r in rids]):
                    allowed.update(r[0] for r in db.execute(
                        f"SELECT r.rowid FROM records r WHERE r.rowid IN "
                        f"({','.join('?' * len(sub))}) AND {where}", (*sub, *params)))
                keep = np.fromiter((int(r) in allowed for r in rids), dtype=bool,
                                   count=len(rids))
                rids, sims = rids[keep], sims[keep]
            if len(rids) >= limit or fetch >= min(ANN_MAX_FETCH, len(ann)):
                narrow = len(rids) < limit and not plain
                break
            fetch *= 4
        if narrow:  # exact over the selection's own rows, read with their stored vectors
            rows = [(r, b) for r, b in db.execute(
                f"SELECT r.rowid, r.embedding FROM records r WHERE {where} AND "
                "r.embedding IS NOT NULL", params) if len(b) == 4 * index.dim]
            rids = np.array([r for r, _ in rows], dtype=np.int64)
            mat = np.frombuffer(b"".join(b for _, b in rows),
                                dtype=np.float32).reshape(-1, index.dim)
            ok = index.admits(rids, include_invalid=include_invalid)
            rids, sims = rids[ok], mat[ok] @ query
        order = top_order(rids, sims, limit)
        return self._ids_for(db, [(int(rids[i]), float(sims[i])) for i in order])

    def _filtered_top(self, db: sqlite3.Connection, sel: Selection, rids: np.ndarray,
                      scores: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """Walk the best-scoring rows in growing chunks, keeping those the selection admits;
        when the selection is too narrow for that, ask SQL for its rows first."""
        where, params = selection_sql(sel)
        kept: list[tuple[int, float]] = []
        seen = 0
        chunk = max(4 * limit, 256)
        order = top_order(rids, scores, min(len(scores), 16 * chunk))
        while seen < len(order) and len(kept) < limit:
            part = order[seen : seen + chunk]
            seen += len(part)
            ok: set[int] = set()
            for sub in _chunks([int(rids[i]) for i in part]):
                ok.update(r[0] for r in db.execute(
                    f"SELECT r.rowid FROM records r WHERE r.rowid IN ({','.join('?' * len(sub))}) "
                    f"AND {where}", (*sub, *params)))
            kept.extend((int(rids[i]), float(scores[i])) for i in part if int(rids[i]) in ok)
            chunk *= 4
        if len(kept) < limit and seen < len(scores):
            allowed = np.fromiter((r[0] for r in db.execute(
                f"SELECT r.rowid FROM records r WHERE {where} AND r.embedding IS NOT NULL",
                params)), dtype=np.int64)
            mask = np.isin(rids, allowed)
            sub_rids, sub_scores = rids[mask], scores[mask]
            order2 = top_order(sub_rids, sub_scores, limit)
            kept = [(int(sub_rids[i]), float(sub_scores[i])) for i in order2]
        return self._ids_for(db, kept[:limit])

    def _ids_for(self, db: sqlite3.Connection, pairs: Sequence[tuple[int, float]]
                 ) -> list[tuple[str, float]]:
        names: dict[int, str] = {}
        for chunk in _chunks([p[0] for p in pairs]):
            names.update(db.execute(f"SELECT rowid, id FROM records WHERE rowid IN "
                                    f"({','.join('?' * len(chunk))})", chunk).fetchall())
        return [(names[rid], score) for rid, score in pairs if rid in names]

    def _erased_at(self, db: sqlite3.Connection, key: str) -> int:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (ERASED + key,)).fetchone()
        return int(row[0]) if row else 0

    def clear(self) -> None:
        """Forget the indexes held in memory (the store was reset or closed)."""
        with self._mutex:
            self._vectors.clear()
            self._ann.clear()

    def save_indexes(self) -> None:
        """Save every approximate index that changed since it was saved (also on close);
        one built before an erase is dropped instead (it holds the erased vectors)."""
        with self._s.lock, self._mutex:
            with self._s.read() as db:
                stale = [key for key, ann in self._ann.items()
                         if ann.built_seq < self._erased_at(db, key)]
            for key in stale:
                del self._ann[key]
            for namespace, ann in self._ann.items():
                path = self._ann_path(namespace, ann.dim)
                if ann.dirty and path is not None:
                    try:
                        ann.save(path, namespace)
                    except OSError as exc:  # the next process rebuilds or replays
                        _ann.log.warning("could not save the vector index %s: %s", path, exc)

