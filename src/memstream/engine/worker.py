"""The background enrichment worker: the slow work that ``add`` never waits for.

``add`` stores a record durably and keyword-searchable, marks what it still needs (an
embedding; an LLM importance rating when an LLM is configured) and wakes this worker. The
worker claims queued records oldest first in batches (a lease in the database, so that the
workers of several processes never embed the same record twice), embeds them (with the
content-hash cache), rates them, and then calls ``after`` (the engine's automatic reflection
and consolidation). The queues live in the database, not in memory, so a crash loses none of
the work: the next start picks it up. ``flush`` waits until nothing is queued.

Two bounds keep short-lived processes right (one process per request, as LangGraph runs them):
a search whose namespace holds records still waiting for their vectors embeds them first, in
its own thread, when at most ``CATCH_UP`` records wait in the whole store (``catch_up``); and a
process that exits without ``close()`` stops its worker before the interpreter shuts thread
pools down: the batch in hand is finished (at most ``EXIT_WAIT`` seconds), the rest stays
queued for the next process, and nothing prints a traceback.
"""

from __future__ import annotations

import concurrent.futures.thread  # noqa: F401  (its exit hook must run after ours: see _at_exit)
import contextlib
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import tracing
from ..embed.cache import embed_documents_cached
from ..embed.protocol import Embedder
from ..errors import BackendUnavailable, MemstreamError
from ..store.protocol import KeyValue, SearchIndexes, WorkQueues

log = logging.getLogger("memstream.worker")

#: Seconds a worker's claim on queued records lasts (renewed with each batch it takes); a
#: crashed worker's records go to another after this.
CLAIM_LEASE = 60.0

#: A search embeds its namespace's waiting records itself when at most this many records of
#: the store wait for their vectors (a few: one batch of the default model, tens of ms each).
CATCH_UP = 32

#: Seconds an exiting process gives its worker to finish the batch in hand.
EXIT_WAIT = 10.0

#: (text, kind) -> importance in [0, 1]; raises MemstreamError or OSError when it cannot.
Rater = Callable[[str, str], float]

_running: weakref.WeakSet[EnrichmentWorker] = weakref.WeakSet()
_hooked = threading.Lock()
_hook: list[bool] = []


def _at_exit() -> None:
    """Stop every running worker before the interpreter stops accepting work in thread pools
    (the model's own pool included): registered with ``threading._register_atexit`` after
    ``concurrent.futures``' own hook, so that it runs before it."""
    for worker in list(_running):
        worker.stop(EXIT_WAIT)


def _hook_exit() -> None:
    with _hooked:
        if not _hook:
            try:
                threading._register_atexit(_at_exit)  # type: ignore[attr-defined]
            except RuntimeError:  # the interpreter is already shutting down
                return
            _hook.append(True)


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
        self._embedding = threading.Lock()  # one embedding batch at a time: worker or search
        self._embedded: list[tuple[str, str]] = []  # (namespace, id) since take_embedded()
        self._thread = threading.Thread(target=self._run, name="memstream-enrich", daemon=True)
        _hook_exit()
        _running.add(self)
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
            except Exception as exc:  # the thread outlives any failure: flush() waits on it
                self._failures += 1
                self._error = exc
                if isinstance(exc, (MemstreamError, OSError, ValueError)):
                    log.warning("background enrichment failed (%s); retrying", exc)
                else:  # a bug: said with its traceback, and retried like the rest
                    log.exception("background enrichment failed unexpectedly; retrying")
                time.sleep(min(30.0, 0.5 * 2 ** min(self._failures, 6)))
                with self._wake:
                    self._kicked = True

    @tracing.traced("memstream.enrich")
    def step(self) -> bool:
        """One batch of embeddings and one of ratings; False when nothing was queued."""
        did = False
        if self._embedder is not None:
            with self._embedding:
                pending = self._queues.pending_embeddings(self._batch, owner=self._owner,
                                                          lease=CLAIM_LEASE)
                self._embed(pending)
            did = bool(pending)
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

    def _embed(self, pending: list[tuple[str, str, str]]) -> None:
        """Vectors for (namespace, id, text) records, through the content-hash cache."""
        if not pending or self._embedder is None:
            return
        vectors = embed_documents_cached(self._kv, self._embedder, [t for _, _, t in pending])
        by_ns: dict[str, list[tuple[str, np.ndarray]]] = defaultdict(list)
        for (ns, rid, _), vec in zip(pending, vectors, strict=True):
            by_ns[ns].append((rid, vec))
        for ns, items in by_ns.items():
            self._indexes.set_embeddings(ns, items, self._embedder.name)
        self._embedded.extend((ns, rid) for ns, rid, _ in pending)

    def take_embedded(self) -> list[tuple[str, str]]:
        """The (namespace, id) of the records embedded since the last call (the engine
        compares them with older records: engine.changes)."""
        with self._embedding:
            taken, self._embedded = self._embedded, []
        return taken

    def give_back(self, taken: list[tuple[str, str]]) -> None:
        """Records taken whose comparison failed: taken again, first, next time."""
        with self._embedding:
            self._embedded = [*taken, *self._embedded]

    def paused(self) -> contextlib.AbstractContextManager[Any]:
        """No embedding batch runs while this is held (an erase holds it: no vector of an
        erased text is being made, and cached, as it goes)."""
        return self._embedding

    def catch_up(self, namespace: str, bound: int = CATCH_UP) -> int:
        """Embed now, in the caller's thread, the records of ``namespace`` that still wait for
        their vectors, when at most ``bound`` records of the store wait (claimed by any worker,
        of this process or of one that has exited); returns how many it embedded. A search
        calls it first, so that what the last process wrote ranks by meaning, not by keywords
        only. More waiting than ``bound``: nothing here (the worker is on it); a failure is
        logged and the search goes on with what is embedded."""
        if self._embedder is None:
            return 0
        try:
            waiting = self._queues.pending_embeddings(bound + 1)
            if len(waiting) > bound or not any(ns == namespace for ns, _, _ in waiting):
                return 0
            with self._embedding:  # what the worker finished meanwhile is not done twice
                todo = [p for p in self._queues.pending_embeddings(bound + 1)
                        if p[0] == namespace]
                self._embed(todo)
            return len(todo)
        except (MemstreamError, OSError, ValueError) as exc:
            log.warning("embedding waiting records before a search failed (%s); searching "
                        "with what is embedded", exc)
            return 0

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

    def stopping(self) -> bool:
        """Whether the worker was asked to stop: long steps of ``after`` end at their next
        batch (the kinds of names: ``kinds.read_kinds``)."""
        return self._stop

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the batch in hand (waiting at most ``timeout`` s); what is still queued
        stays in the database for the next worker."""
        with self._wake:
            self._stop = True
            self._wake.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=timeout)
        _running.discard(self)

    def close(self) -> None:
        self.stop()
