"""An approximate (HNSW) vector index for a large namespace, persisted beside the database.

Exact search (``parts.vectors.VectorIndex``) is the source of truth and stays the answer for
namespaces up to ``ann_threshold`` vectors. Above it, the SQLite store also keeps an HNSW graph
(hnswlib: inner product over unit vectors, M=16, ef_construction=100, ef_search at
least 128 and twice the candidates asked for) whose labels are record
rowids. It follows the same change log as the exact index, so inserts, re-embeddings and
deletes of every process reach it; validity and selections are checked on its candidates.

The graph is saved in ``<database>.ann/`` with the log position it reflects, after it is built
and when the store closes; the next process loads it and replays the log from there instead of
rebuilding (minutes at 1M vectors). A missing, unreadable or foreign file is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("memstream.ann")

M, EF_CONSTRUCTION, EF_SEARCH = 16, 100, 128


def available() -> bool:
    try:
        import hnswlib  # noqa: F401
    except ImportError:
        return False
    return True


def file_for(folder: Path, namespace: str, dim: int) -> Path:
    return folder / f"{_digest(namespace)}-{dim}.hnsw"


def files_for(folder: Path, namespace: str) -> list[Path]:
    """Every saved graph of a namespace (one per vector size)."""
    return sorted(folder.glob(f"{_digest(namespace)}-*.hnsw")) if folder.is_dir() else []


def _digest(namespace: str) -> str:
    return hashlib.sha1(namespace.encode()).hexdigest()[:16]


class AnnIndex:
    """An HNSW graph over (rowid, unit vector) pairs; ``last_seq`` is the change-log position
    it reflects."""

    def __init__(self, dim: int, capacity: int, *, loaded: Any = None, last_seq: int = 0,
                 built_seq: int = 0, dirty: bool = False) -> None:
        """A new graph for ``capacity`` vectors, or the graph ``loaded`` from a file."""
        import hnswlib

        self.dim = dim
        self.last_seq = last_seq
        #: the change-log position of the vectors it was built or saved from
        self.built_seq = built_seq
        self.dirty = dirty
        if loaded is None:
            loaded = hnswlib.Index(space="ip", dim=dim)
            loaded.init_index(max_elements=max(capacity, 1024), ef_construction=EF_CONSTRUCTION,
                              M=M)
        self._index: Any = loaded
        self._index.set_ef(EF_SEARCH)

    @classmethod
    def build(cls, dim: int, rids: np.ndarray, mat: np.ndarray, last_seq: int) -> AnnIndex:
        graph = cls(dim, int(len(rids) * 1.25), last_seq=last_seq, built_seq=last_seq,
                    dirty=True)
        graph.upsert(rids, mat)  # on every core (hnswlib's default)
        return graph

    @classmethod
    def load(cls, path: Path, dim: int, namespace: str) -> AnnIndex | None:
        """The saved graph, or None when it is missing or does not match."""
        import hnswlib

        meta_path = path.with_suffix(".json")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if meta.get("namespace") != namespace or meta.get("dim") != dim:
                return None
            loaded = hnswlib.Index(space="ip", dim=dim)
            loaded.load_index(str(path), max_elements=int(meta["capacity"]))
            return cls(dim, 0, loaded=loaded, last_seq=int(meta["last_seq"]),
                       built_seq=int(meta.get("built_seq", 0)))
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            if path.exists() or meta_path.exists():
                log.warning("ignoring the saved vector index %s (%s); rebuilding it", path, exc)
            return None

    def save(self, path: Path, namespace: str) -> None:
        """Write the graph and its log position atomically (graph first, then the meta)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        self._index.save_index(str(tmp))
        os.replace(tmp, path)
        meta = {"namespace": namespace, "dim": self.dim, "last_seq": self.last_seq,
                "built_seq": self.built_seq,
                "capacity": int(self._index.get_max_elements())}
        tmp_meta = path.with_suffix(f".json.{os.getpid()}.tmp")
        tmp_meta.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(tmp_meta, path.with_suffix(".json"))
        self.dirty = False

    def __len__(self) -> int:
        return int(self._index.get_current_count())

    def upsert(self, rids: np.ndarray, mat: np.ndarray) -> None:
        """Add or replace vectors (a re-added deleted label comes back to life)."""
        if not len(rids):
            return
        need = len(self) + len(rids)
        if need > self._index.get_max_elements():
            self._index.resize_index(max(need, 2 * self._index.get_max_elements()))
        self._index.add_items(mat, rids.astype(np.int64))
        self.dirty = True

    def remove(self, rids: list[int]) -> None:
        for rid in rids:
            try:
                self._index.mark_deleted(int(rid))
                self.dirty = True
            except RuntimeError:  # never added, or already deleted
                pass

    def query(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, cosine) of about the ``k`` nearest vectors, best first."""
        k = min(k, len(self))
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        self._index.set_ef(max(EF_SEARCH, 2 * k))
        try:
            labels, dist = self._index.knn_query(vector, k=k, num_threads=1)
        except RuntimeError:  # fewer live elements than k (deletions): ask for what exists
            labels, dist = self._index.knn_query(vector, k=max(1, k // 2), num_threads=1)
        return labels[0].astype(np.int64), (1.0 - dist[0]).astype(np.float32)
