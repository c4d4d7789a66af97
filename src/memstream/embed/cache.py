"""Embeddings cached by content hash in the store, so a text is embedded once per model."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ..store.protocol import Store
from .protocol import Embedder


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def embed_documents_cached(store: Store, embedder: Embedder, texts: Sequence[str]
                           ) -> np.ndarray:
    """Rows for ``texts``: from the cache where present, from the embedder otherwise."""
    hashes = [content_hash(t) for t in texts]
    cached = store.cached_vectors(embedder.name, list(dict.fromkeys(hashes)))
    todo = list(dict.fromkeys(h for h in hashes if h not in cached))
    if todo:
        first = {h: t for t, h in zip(texts, hashes, strict=True)}
        fresh = embedder.embed_documents([first[h] for h in todo])
        new = list(zip(todo, fresh, strict=True))
        store.cache_vectors(embedder.name, new)
        cached.update(new)
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.vstack([cached[h] for h in hashes]).astype(np.float32, copy=False)
