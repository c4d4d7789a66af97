"""Schemathesis hooks for the REST fuzz (loaded through SCHEMATHESIS_HOOKS): every error answer
has the documented body, {"error": {"type", "status", "message"}}, with the HTTP status."""

from __future__ import annotations

import json

import schemathesis


@schemathesis.check
def error_body_is_documented(ctx, response, case):  # type: ignore[no-untyped-def]
    if response.status_code < 400:
        return None
    body = json.loads(response.content)
    assert isinstance(body, dict) and "error" in body, (response.status_code, body)
    error = body["error"]
    assert set(error) == {"type", "status", "message"}, body
    assert error["status"] == response.status_code, body
    assert isinstance(error["type"], str) and error["message"], body
    return None
