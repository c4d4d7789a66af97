"""The background enrichment worker: the slow work that ``add`` never waits for.

``add`` stores a record durably and keyword-searchable, marks what it still needs (an
embedding; an LLM importance rating when an LLM is configured) and wakes this worker. The
worker claims queued records oldest first in batches (a lease in the database, so that the
workers of several processes never embed the same record twice), embeds them (with the
content-hash cache), rates them, and then calls ``after`` (the engine's automatic reflection
and consolidation). The queues live in the database, not in memory, so a crash loses none of
the work: the next start picks it up. ``flush`` waits until nothing is queued.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from .. import tracing
from ..embed.cache import embed_documents_cached
from ..embed.protocol import Embedder
from ..errors import BackendUnavailable, MemstreamError
from ..store.protocol import KeyValue, SearchIndexes, WorkQueues

log = logging.getLogger("memstream.worker")

#: Seconds a worker's claim on queued records lasts (renewed with each batch it takes); a
#: crashed worker's records go to another after this.
CLAIM_LEASE = 60.0

#: (text, kind) -> importance in [0, 1]; raises MemstreamError or OSError when it cannot.
Rater = Callable[[str, str], float]


class EnrichmentWorker:
    def __init__(self, queues: WorkQueues, indexes: SearchIndexes, kv: KeyValue,
                 embedder: Embedder | None, *, rater: Rater | None = None,
                 after: Callable[[], None] | None = None, clock: Callable[[], float] = time.time,
                 batch_size: int = 16) -> None:
        self._queues, self._indexes, self._kv = queues, indexes, kv
        self._embedder = embedder
        self._rater = rater
        self._after = after
        self._clock = clock
        self._batch = batch_size
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._wake = threading.Condition()
        self._idle = threading.Event()
        self._stop = False
        self._kicked = True  # look for work left by an earlier run at start
        self._error: Exception | None = None
        self._failures = 0
        self._thread = threading.Thread(target=self._run, name="memstream-enrich", daemon=True)
        self._thread.start()

    def notify(self) -> None:
        with self._wake:
            self._kicked = True
            self._idle.clear()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._kicked and not self._stop:
                    self._idle.set()
                    self._wake.wait()
                if self._stop:
                    self._idle.set()
                    return
                self._kicked = False
            try:
                while not self._stop and self.step():
                    pass
                if self._after is not None and not self._stop:
                    self._after()
                self._failures = 0
                self._error = None
            except (MemstreamError, OSError, ValueError) as exc:
                self._failures += 1
                self._error = exc
                log.warning("background enrichment failed (%s); retrying", exc)
                time.sleep(min(30.0, 0.5 * 2 ** min(self._failures, 6)))
                with self._wake:
                    self._kicked = True

    @tracing.traced("memstream.enrich")
    def step(self) -> bool:
        """One batch of embeddings and one of ratings; False when nothing was queued."""
        did = False
        if self._embedder is not None:
            pending = self._queues.pending_embeddings(self._batch, owner=self._owner,
                                                            lease=CLAIM_LEASE)
            if pending:
                did = True
                vectors = embed_documents_cached(self._kv, self._embedder,
                                                 [t for _, _, t in pending])
                by_ns: dict[str, list[tuple[str, np.ndarray]]] = defaultdict(list)
                for (ns, rid, _), vec in zip(pending, vectors, strict=True):
                    by_ns[ns].append((rid, vec))
                for ns, items in by_ns.items():
                    self._indexes.set_embeddings(ns, items, self._embedder.name)
        for ns, rid, text, kind in self._queues.pending_ratings(8):
            did = True
            rating: float | None
            try:
                rating = self._rater(text, kind) if self._rater is not None else None
            except (MemstreamError, OSError, ValueError) as exc:
                log.warning("importance rating failed (%s); keeping the offline value", exc)
                rating = None
            self._queues.set_rating(ns, rid, rating, at=self._clock())
        return did

    def _pending(self) -> bool:
        embedding = self._embedder is not None and bool(self._queues.pending_embeddings(1))
        return embedding or bool(self._queues.pending_ratings(1))

    def flush(self, timeout: float | None = None) -> None:
        """Wait until nothing is queued (raise BackendUnavailable after ``timeout`` s)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self.notify()
        while True:
            if self._failures >= 3 and self._error is not None:
                raise BackendUnavailable(
                    f"background enrichment keeps failing: {self._error}; the records are stored "
                    "and stay queued until it works again"
                ) from self._error
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise BackendUnavailable(
                    f"background enrichment did not finish within {timeout} s"
                    + (f"; last error: {self._error}" if self._error else "")
                )
            self._idle.wait(0.05 if remaining is None else min(0.05, remaining))
            if self._idle.is_set() and not self._pending():
                return
            if self._idle.is_set():
                self.notify()

    def close(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify()
        self._thread.join(timeout=30)
