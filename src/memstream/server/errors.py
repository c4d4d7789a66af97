"""The one table from memstream errors to HTTP status codes (and the JSON error body that every
route and the MCP tools share). Most specific class first."""

from __future__ import annotations

from typing import Any

from ..errors import (
    BackendUnavailable,
    Conflict,
    EmbeddingError,
    InvalidInput,
    LLMError,
    MemstreamError,
    MissingDependency,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ScopeViolation,
    Unauthenticated,
    UnsupportedMediaType,
)

HTTP_STATUS: list[tuple[type[MemstreamError], int]] = [
    (Unauthenticated, 401),
    (ScopeViolation, 403),
    (NotFound, 404),
    (Conflict, 409),
    (PayloadTooLarge, 413),
    (UnsupportedMediaType, 415),
    (InvalidInput, 422),
    (RateLimited, 429),
    (EmbeddingError, 502),
    (LLMError, 502),
    (BackendUnavailable, 503),
    (MissingDependency, 503),
    (MemstreamError, 500),
]


def status_for(exc: MemstreamError) -> int:
    return next(code for cls, code in HTTP_STATUS if isinstance(exc, cls))


def error_body(exc: MemstreamError) -> dict[str, Any]:
    return {"error": {"type": type(exc).__name__, "status": status_for(exc),
                      "message": str(exc)}}
