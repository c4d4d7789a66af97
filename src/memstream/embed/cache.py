"""Embeddings cached by content hash in the store, so a text is embedded once per model.

A long record is embedded by its first ``PASSAGE_CHARS`` characters (cut at a word boundary):
the passage window. Its whole text stays stored and keyword-searchable; only its vector reads
the window. Measured on BEAM's chats (exchanges of 4,400 characters at the median), the
default model embeds 512-character windows at about 14 a second on 2 cores and whole
exchanges at under 1 a second, and the window keeps what a long record is about where it
usually says it: at its start (docs/embedders.md, "Long records").
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from .protocol import Embedder

#: how many characters of a record's text its vector reads (see the module docstring)
PASSAGE_CHARS = 512


def passage(text: str, limit: int = PASSAGE_CHARS) -> str:
    """The part of ``text`` that is embedded: all of it up to ``limit`` characters, else its
    first ``limit`` characters cut back to the last whitespace."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ", limit // 2)
    return cut[:space] if space > 0 else cut


class VectorCache(Protocol):
    """Where vectors are kept by model and content hash (a store's key-value part)."""

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    def cache_vectors(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None: ...


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def embed_documents_cached(store: VectorCache, embedder: Embedder, texts: Sequence[str]
                           ) -> np.ndarray:
    """Rows for the passages of ``texts``: from the cache where present, from the embedder
    otherwise."""
    texts = [passage(t) for t in texts]
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


def embed_queries_cached(store: VectorCache, embedder: Embedder, texts: Sequence[str]
                         ) -> np.ndarray:
    """Rows for ``texts`` embedded as queries (``Embedder.embed_query``: a model may embed a
    query otherwise than a passage; in one call with an embedder that has ``embed_queries``),
    from the cache where present; kept apart from the passages' vectors of the same texts."""
    hashes = [content_hash("\0query\0" + t) for t in texts]
    cached = store.cached_vectors(embedder.name, list(dict.fromkeys(hashes)))
    todo = {t: h for t, h in zip(texts, hashes, strict=True) if h not in cached}
    many = getattr(embedder, "embed_queries", None)  # several in one call, where it can
    rows = (list(many(list(todo))) if callable(many) and todo
            else [embedder.embed_query(t) for t in todo])
    new = list(zip(todo.values(), rows, strict=True))
    if new:
        store.cache_vectors(embedder.name, new)
        cached.update(new)
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.vstack([cached[h] for h in hashes]).astype(np.float32, copy=False)

