"""The one table from errors to HTTP status, checked for every class of the tree."""

from __future__ import annotations

import memstream.errors as e
from memstream.server.errors import HTTP_STATUS, error_body, status_for


def test_every_error_class_has_its_status():
    expected = {
        e.Unauthenticated: 401, e.ScopeViolation: 403, e.NotFound: 404, e.Conflict: 409,
        e.PayloadTooLarge: 413, e.InvalidInput: 422, e.InvalidFilter: 422,
        e.UnsupportedMediaType: 415,
        e.RateLimited: 429, e.EmbeddingError: 502, e.LLMError: 502,
        e.BackendUnavailable: 503, e.CorruptStore: 503, e.MissingDependency: 503,
        e.MemstreamError: 500,
    }
    for cls, status in expected.items():
        exc = cls("x", 1.0) if cls is e.RateLimited else cls("x")
        assert status_for(exc) == status, cls
    tree = {obj for obj in vars(e).values()
            if isinstance(obj, type) and issubclass(obj, e.MemstreamError)}
    assert tree == set(expected)  # a new error class must be placed in the table
    assert {cls for cls, _ in HTTP_STATUS} <= tree


def test_error_body_shape():
    assert error_body(e.NotFound("no record 'x'")) == {
        "error": {"type": "NotFound", "status": 404, "message": "no record 'x'"}}
