"""The vectors a search needs besides the store's: the query's own (cached, computed in a
thread while the keyword index answers), the embedded background sentences
(``retrieval.relevance.BACKGROUND``) against which a small namespace's relevance is measured,
and the direction that tells a question about the past (``retrieval.past``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..core.names import extract, without
from ..embed import Embedder
from ..embed.cache import embed_documents_cached, embed_queries_cached
from ..filters import Selection
from ..retrieval.past import EVENTS, NOW, PAST, Past
from ..retrieval.relevance import BACKGROUND
from ..store import Store
from ..store.protocol import KeyValue
from .nulls import null_rows

__all__ = ["QueryVectors", "Soon", "embed_ahead", "readings", "unnamed"]

#: a query's vector, or a callable that waits for it (``QueryVectors.soon``)
Soon = np.ndarray | Callable[[], np.ndarray | None] | None
#: queries whose vectors are kept (the cache is emptied when it grows past this)
CACHED = 1024


class QueryVectors:
    """One Memory's query vectors and background rows (None everywhere without an embedder)."""

    def __init__(self, embedder: Embedder | None, kv: KeyValue) -> None:
        self._embedder = embedder
        self._kv = kv
        self._cache: dict[str, np.ndarray] = {}
        self._rows: dict[tuple[bool | str, ...], np.ndarray] = {}  # (as queries, *texts)
        self._lock = threading.Lock()
        self._rows_lock = threading.Lock()
        self._thread: ThreadPoolExecutor | None = None
        self._past: Past | None = None

    def background(self) -> np.ndarray | None:
        """The embedded background sentences (once; cached in the store)."""
        return self.rows(BACKGROUND)

    def rows(self, texts: tuple[str, ...], *, queries: bool = False) -> np.ndarray | None:
        """A fixed set of sentences (``BACKGROUND``, ``cognition.changes.CHATTER``; as queries,
        ``cognition.kinds.DESCRIBED``) embedded once and kept (and cached in the store)."""
        if self._embedder is None:
            return None
        rows = self._rows.get((queries, *texts))
        if rows is None:  # embedded outside the engine's lock, so adds never wait for it; once:
            with self._rows_lock:  # twenty first searches at once embed it one time
                rows = self._rows.get((queries, *texts))
                if rows is None:
                    embed = embed_queries_cached if queries else embed_documents_cached
                    rows = embed(self._kv, self._embedder, list(texts))
                    self._rows[(queries, *texts)] = rows
        return rows

    def past(self) -> Past | None:
        """What tells a question about the past in this embedder's space: shipped for the
        default embedder, else ``PAST``, ``NOW`` and ``EVENTS`` embedded as queries once (and
        cached in the store)."""
        if self._embedder is None:
            return None
        if self._past is None:
            with self._rows_lock:
                if self._past is None:
                    self._past = Past.shipped(self._embedder.name) or Past.between(
                        embed_queries_cached(self._kv, self._embedder, NOW + EVENTS),
                        embed_queries_cached(self._kv, self._embedder, PAST))
        return self._past

    def vector(self, query: str) -> np.ndarray | None:
        if self._embedder is None:
            return None
        with self._lock:
            cached = self._cache.get(query)
        if cached is None:
            cached = self._embedder.embed_query(query)
            with self._lock:
                if len(self._cache) > CACHED:
                    self._cache.clear()
                self._cache[query] = cached
        return cached

    def soon(self, query: str) -> Soon:
        """The query's vector, or (when it must be computed) a callable that waits for it: the
        model runs in a thread while the keyword index answers."""
        if self._embedder is None:
            return None
        with self._lock:
            cached = self._cache.get(query)
            if cached is not None:
                return cached
            if self._thread is None:  # as many as the embedder runs side by side
                workers = int(getattr(self._embedder, "query_workers", 1))
                self._thread = ThreadPoolExecutor(workers, "memstream-query")
            future = self._thread.submit(self.vector, query)
        return future.result

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=True)


#: a person the store keeps notes about is named in this many of them at least
SUBJECT_MENTIONS = 2


def unnamed(store: Store, sel: Selection, query: str, background: np.ndarray | None
            ) -> str | None:
    """The query without the people it names whom the store keeps notes about (confirmed
    entities of kind person, of the selection's user, named in ``SUBJECT_MENTIONS`` notes at
    least), in a store of separate notes; None when it names none, or the store is a
    conversation (whose turns name who speaks: "Caroline: ...").

    A store's notes about someone mostly do not name them ("Weigh-in: 164.8 lb" in a coach's
    notes on Renee), so a name in the query pulls its vector toward the few notes that do
    ("Renee's follow-up is now Friday") and away from the answer. A search then reads a note
    that names nobody both ways and keeps the better reading, each against the namespace's
    null, and every other note by the query alone (``stages.calibrated``), so a note that
    names the person loses nothing (docs/retrieval.md, "People a query names")."""
    keys = {m.key: m.name for m in extract(query)}
    if not keys:
        return None
    owners = None if sel.user_id is None else [sel.user_id]
    known = [e.key for e in store.graph.find(sel.namespace, owners, list(keys))
             if e.kind == "person" and e.confirmed and e.mentions >= SUBJECT_MENTIONS]
    people = [name for key, name in keys.items()
              if any(k == key or k.startswith(key + " ") for k in known)]
    rest = without(query, people) if people else query
    if not rest or rest == query:
        return None
    null = null_rows(store, sel, background)
    return None if null is None or null.conversation else rest


def readings(vectors: QueryVectors, store: Store, sel: Selection, query: str
             ) -> tuple[Soon, Soon]:
    """What a search of ``query`` without a vector of its own reads: the query's vector and,
    where it names people the store keeps notes about, that of ``unnamed``'s query (else
    None), each computed side by side while the keyword index answers (``soon``)."""
    whole = vectors.soon(query)  # computed while the store is read for the names
    rest = unnamed(store, sel, query, vectors.background())
    return whole, vectors.soon(rest) if rest else None


def embed_ahead(vectors: QueryVectors, store: Store, sel: Selection, query: str) -> None:
    """Embed ``readings`` into the cache, so that the search that follows reads them at once
    (the benches time the search apart)."""
    for vector in readings(vectors, store, sel, query):
        if callable(vector):
            vector()
