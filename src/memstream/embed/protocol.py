"""What an embedder is, and the checks every vector passes before memstream stores it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import EmbeddingError

__all__ = ["CheckedEmbedder", "Embedder", "calibrated_similarity", "unit_rows"]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into vectors. ``name`` identifies the model and its version: vectors of two
    different names are never compared. Vectors come back as float32 rows."""

    name: str
    dim: int
    # An embedder may also set ``similarity_floor``: the cosine of unrelated texts, below which
    # similarity counts as zero (see ``calibrated_similarity``).

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, for texts that will be stored and searched."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One vector for a search query (some models embed queries differently)."""
        ...


def unit_rows(vectors: object, *, count: int, dim: int, source: str) -> np.ndarray:
    """Check shape and values of an embedder's output and scale each row to unit length."""
    try:
        arr = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source} returned something that is not a list of vectors") from exc
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.shape != (count, dim):
        raise EmbeddingError(
            f"{source} returned vectors of shape {arr.shape}, expected ({count}, {dim}); check "
            "that the configured model and dimension match"
        )
    if not np.isfinite(arr).all():
        raise EmbeddingError(f"{source} returned NaN or infinite values")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if (norms == 0).any():
        raise EmbeddingError(f"{source} returned an all-zero vector")
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


class CheckedEmbedder:
    """A user's embedder whose every output is checked (shape, NaN, all-zero rows) and scaled
    to unit length, as the vector index and the cosine-based stages assume. The built-in
    embedders do this themselves."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.dim: int = inner.dim
        floor = getattr(inner, "similarity_floor", None)
        if floor is not None:
            self.similarity_floor = float(floor)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        return unit_rows(self.inner.embed_documents(texts), count=len(texts), dim=self.dim,
                         source=self.name)

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = unit_rows(self.inner.embed_query(text), count=1, dim=self.dim,
                                    source=self.name)[0]
        return row


def calibrated_similarity(cosine: float, embedder: object) -> float:
    """Cosine rescaled by the embedder's ``similarity_floor`` (0 when it has none): unrelated
    texts near 0, near-identical ones near 1, whatever the model's natural cosine range."""
    floor = float(getattr(embedder, "similarity_floor", 0.0))
    return max(0.0, (cosine - floor) / (1.0 - floor)) if floor < 1 else cosine
