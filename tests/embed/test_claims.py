"""Several processes' background workers share one queue without embedding a record twice."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import ClassVar

import numpy as np

from memstream import Config, Memory


class CountingEmbedder:
    """A deterministic embedder that counts every text it embeds (slow enough that two
    workers are busy at the same time)."""

    name, dim = "counting-test-model", 8
    seen: ClassVar[Counter[str]] = Counter()
    lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        time.sleep(0.01)
        with self.lock:
            self.seen.update(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, hash(t) % self.dim] = 1.0
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def test_two_workers_embed_each_record_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    CountingEmbedder.seen.clear()
    # no reflections and no comparison (which embeds the background sentences once per
    # process): only the notes get embedded
    quiet = Config(reflection_threshold=0, find_changes=False)
    a = Memory(path, embedder=CountingEmbedder(), config=quiet)
    b = Memory(path, embedder=CountingEmbedder(), config=quiet)
    try:
        texts = [f"note number {i}" for i in range(120)]
        for i, t in enumerate(texts):  # both processes take writes, both workers run
            (a if i % 2 else b).add(t)
        a.flush(timeout=60)
        b.flush(timeout=60)
        assert a.store.queues.pending_embeddings(10) == []
        assert set(CountingEmbedder.seen) == set(texts)
        assert max(CountingEmbedder.seen.values()) == 1  # nothing embedded twice
        assert len(a.get_all(limit=None)) == 120
    finally:
        a.close()
        b.close()
