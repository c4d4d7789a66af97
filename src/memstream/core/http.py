"""One small JSON-over-HTTP POST with timeouts and retries, for the remote services a user
configures (embeddings, chat). Standard library only; no request is made unless configured."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from ..errors import BackendUnavailable, MemstreamError


class RemoteRefused(MemstreamError):
    """The service answered with a client error (4xx other than 429): retrying will not help."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


def post_json(url: str, body: dict[str, Any], *, api_key: str | None = None,
              timeout: float = 30.0, retries: int = 2, what: str = "the service") -> Any:
    """POST ``body`` as JSON and return the decoded answer.

    Retries with exponential backoff on network errors, timeouts, 429 and 5xx. Raises
    RemoteRefused on other 4xx answers and BackendUnavailable when every attempt failed or the
    answer is not JSON.
    """
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    last: Exception | None = None
    for attempt in range(retries + 1):
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as resp:
                raw = resp.read()
            try:
                return json.loads(raw)
            except json.JSONDecodeError as exc:
                raise BackendUnavailable(f"{what} at {url} answered with invalid JSON") from exc
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            exc.close()
            if exc.code < 500 and exc.code != 429:
                raise RemoteRefused(exc.code, detail) from exc
            last = exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            last = exc
        if attempt < retries:
            time.sleep(0.2 * 2**attempt)
    raise BackendUnavailable(f"{what} at {url} did not answer ({last})") from last
