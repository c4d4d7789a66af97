"""Embeddings from a remote OpenAI-compatible endpoint (``POST {base_url}/embeddings``).

Configured by arguments or by ``MEMSTREAM_EMBED_URL``, ``MEMSTREAM_EMBED_MODEL``,
``MEMSTREAM_EMBED_KEY`` and ``MEMSTREAM_EMBED_DIM`` (read in ``memstream.config``). Network access
happens only when the user configures this embedder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.http import RemoteRefused, post_json
from ..errors import BackendUnavailable, EmbeddingError, InvalidInput
from .protocol import unit_rows


class OpenAIEmbedder:
    """Any server that speaks the OpenAI embeddings protocol (OpenAI, vLLM, Ollama, TEI...)."""

    def __init__(self, *, base_url: str, model: str, dim: int, api_key: str | None = None,
                 timeout: float = 30.0, retries: int = 2, batch_size: int = 64,
                 query_prefix: str = "", document_prefix: str = "") -> None:
        if not base_url.startswith(("http://", "https://")):
            raise InvalidInput(f"embedding base URL must start with http:// or https://, got "
                               f"{base_url!r}")
        if dim <= 0:
            raise InvalidInput("the remote embedder needs its vector dimension (dim > 0)")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.dim = dim
        self.name = f"openai:{model}@{self.base_url}"
        self._key = api_key
        self.timeout = timeout
        self.retries = retries
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix

    def _post(self, inputs: list[str]) -> Any:
        try:
            return post_json(self.base_url + "/embeddings",
                             {"model": self.model, "input": inputs}, api_key=self._key,
                             timeout=self.timeout, retries=self.retries,
                             what="the embedding endpoint")
        except RemoteRefused as exc:
            raise EmbeddingError(
                f"{self.base_url} refused the embedding request ({exc.status}): {exc.detail}"
            ) from exc
        except BackendUnavailable as exc:
            raise BackendUnavailable(
                f"{exc}; check MEMSTREAM_EMBED_URL and that the server runs") from exc

    def _embed(self, texts: list[str]) -> np.ndarray:
        rows: list[Any] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            answer = self._post(batch)
            try:
                items = sorted(answer["data"], key=lambda d: d["index"])
                rows.extend(item["embedding"] for item in items)
            except (KeyError, TypeError) as exc:
                raise EmbeddingError(
                    f"{self.base_url} answered without the 'data[].embedding' field"
                ) from exc
        return unit_rows(rows, count=len(texts), dim=self.dim, source=self.name)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed([self.document_prefix + t for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        out: np.ndarray = self._embed([self.query_prefix + text])[0]
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Several queries in as few requests as ``embed_documents`` makes (the fixed
        questions a search reads the past with: ``retrieval.past``)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed([self.query_prefix + t for t in texts])
