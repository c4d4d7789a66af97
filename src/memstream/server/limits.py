"""Per-key rate limits (a token bucket each) and the request size limit (an ASGI wrapper)."""

from __future__ import annotations

import threading
import time
from typing import Any

from ..errors import PayloadTooLarge, RateLimited


class RateLimiter:
    """``rate`` requests per second on average, bursts up to ``burst``, per caller."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, caller: str) -> None:
        if self.rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(caller, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            if tokens < 1:
                self._buckets[caller] = (tokens, now)
                raise RateLimited(f"over the limit of {self.rate:g} requests/s for this key; "
                                  "slow down and retry", retry_after=(1 - tokens) / self.rate)
            self._buckets[caller] = (tokens - 1, now)


class BodyLimit:
    """ASGI middleware: refuse a request body over ``max_bytes`` with 413."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await _too_large(send, self.max_bytes)
            return
        seen = 0

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise PayloadTooLarge(f"the request body is over {self.max_bytes} bytes")
            return message

        await self.app(scope, counted, send)


async def _too_large(send: Any, limit: int) -> None:
    import json

    body = json.dumps({"error": {"type": "PayloadTooLarge", "status": 413, "message":
                                 f"the request body is over the limit of {limit} bytes; send "
                                 "less at a time"}}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
