"""The background enrichment worker: embeds records that were stored without a vector.

``add`` stores a record durably and keyword-searchable, marks it as needing an embedding and
wakes this worker. The worker takes pending records oldest first in batches, embeds them (with
the content-hash cache) and stores the vectors. Pending work lives in the database, not in
memory, so a crash loses none of it: the next start picks it up. ``flush`` waits until nothing
is pending.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict

import numpy as np

from .embed.cache import embed_documents_cached
from .embed.protocol import Embedder
from .errors import BackendUnavailable, MemstreamError
from .store.protocol import Store

log = logging.getLogger("memstream.worker")


class EmbeddingWorker:
    def __init__(self, store: Store, embedder: Embedder, *, batch_size: int = 64) -> None:
        self._store = store
        self._embedder = embedder
        self._batch = batch_size
        self._wake = threading.Condition()
        self._idle = threading.Event()
        self._stop = False
        self._kicked = True  # look for work left by an earlier run at start
        self._error: Exception | None = None
        self._failures = 0
        self._thread = threading.Thread(target=self._run, name="memstream-embed", daemon=True)
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
                self._failures = 0
                self._error = None
            except (MemstreamError, OSError, ValueError) as exc:
                self._failures += 1
                self._error = exc
                log.warning("background embedding failed (%s); retrying", exc)
                time.sleep(min(30.0, 0.5 * 2 ** min(self._failures, 6)))
                with self._wake:
                    self._kicked = True

    def step(self) -> bool:
        """Embed one batch; False when nothing was pending."""
        pending = self._store.pending_embeddings(self._batch)
        if not pending:
            return False
        vectors = embed_documents_cached(self._store, self._embedder, [t for _, _, t in pending])
        by_ns: dict[str, list[tuple[str, np.ndarray]]] = defaultdict(list)
        for (ns, rid, _), vec in zip(pending, vectors, strict=True):
            by_ns[ns].append((rid, vec))
        for ns, items in by_ns.items():
            self._store.set_embeddings(ns, items, self._embedder.name)
        return True

    def flush(self, timeout: float | None = None) -> None:
        """Wait until no record is pending (raise BackendUnavailable after ``timeout`` s)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self.notify()
        while True:
            if self._failures >= 3 and self._error is not None:
                raise BackendUnavailable(
                    f"background embedding keeps failing: {self._error}; the records are stored "
                    "and stay queued until the embedder works again"
                ) from self._error
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise BackendUnavailable(
                    f"background embedding did not finish within {timeout} s"
                    + (f"; last error: {self._error}" if self._error else "")
                )
            self._idle.wait(0.05 if remaining is None else min(0.05, remaining))
            if self._idle.is_set() and not self._store.pending_embeddings(1):
                return
            if self._idle.is_set():
                self.notify()

    def close(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify()
        self._thread.join(timeout=30)
