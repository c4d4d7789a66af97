"""The one exception tree of memstream.

::

    MemstreamError                      root: catch this to catch everything memstream raises
    ├── InvalidInput (ValueError)       the caller passed something unusable; nothing was stored
    │   ├── InvalidFilter               a filter expression is malformed or uses an unknown operator
    │   └── UnsupportedMediaType        a request body that is not JSON (the server's boundary)
    ├── NotFound (KeyError)             no record with that id in that namespace
    ├── Conflict                        the write clashes with the stored state
    ├── ScopeViolation (PermissionError) the caller may not read or write there
    ├── Unauthenticated                 no API key, or one that is unknown or revoked
    ├── RateLimited                     too many requests for this key; retry later
    ├── PayloadTooLarge                 the request body is over the server's limit
    ├── BackendUnavailable              the store or a remote service cannot be reached or opened
    │   └── CorruptStore                the database file is damaged or is not a memstream store
    ├── MissingDependency (ImportError)  an optional extra is not installed; the message names it
    ├── EmbeddingError                  the embedder failed or returned unusable vectors
    └── LLMError                        the language model refused or answered unusably

Every interface (CLI exit codes, HTTP status, MCP errors) maps these classes in one table, never
by message text. Lower-level errors are raised from (``raise X(...) from exc``) at the boundary.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailable",
    "Conflict",
    "CorruptStore",
    "EmbeddingError",
    "InvalidFilter",
    "InvalidInput",
    "LLMError",
    "MemstreamError",
    "MissingDependency",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "ScopeViolation",
    "Unauthenticated",
    "UnsupportedMediaType",
]


class MemstreamError(Exception):
    """Root of every error memstream raises on purpose."""


class InvalidInput(MemstreamError, ValueError):
    """The caller passed something unusable. The message names the field and the fix."""


class InvalidFilter(InvalidInput):
    """A filter expression is malformed or uses an unknown operator."""


class UnsupportedMediaType(InvalidInput):
    """A request body is not of a type the server reads (it must say it is JSON)."""


class NotFound(MemstreamError, KeyError):
    """No record with that id exists in that namespace."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep messages readable
        return str(self.args[0]) if self.args else "not found"


class Conflict(MemstreamError):
    """The write clashes with what is stored (for example a duplicate id)."""


class ScopeViolation(MemstreamError, PermissionError):
    """The caller may not read or write in that namespace or scope."""


class BackendUnavailable(MemstreamError):
    """The store or a remote service cannot be reached or opened."""


class CorruptStore(BackendUnavailable):
    """The database file is damaged or is not a memstream store."""


class MissingDependency(MemstreamError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class EmbeddingError(MemstreamError):
    """The embedder failed or returned vectors that cannot be used."""


class LLMError(MemstreamError):
    """The language model refused the request or answered with something unusable."""


class Unauthenticated(MemstreamError):
    """No API key was given, or it is unknown or revoked."""


class RateLimited(MemstreamError):
    """Too many requests for this key in a short time."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PayloadTooLarge(MemstreamError):
    """The request body is larger than the server accepts."""
