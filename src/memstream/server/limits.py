"""Per-key rate limits (a token bucket each, in this process or shared through Redis) and the
request size limit (an ASGI wrapper)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Protocol

from ..errors import MissingDependency, RateLimited

log = logging.getLogger("memstream.server")


class Limiter(Protocol):
    def check(self, caller: str) -> None:
        """Count one request of ``caller``; raise ``RateLimited`` when it is over the limit."""


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


# ARGV: bucket key, rate (tokens/s), burst. The bucket (tokens left, when) is refilled for the
# time since, on Redis's clock, then one token is taken if there is one. Returns {1 or 0, the
# tokens left} (as a string: Redis turns Lua numbers into integers).
_BUCKET_LUA = """
local key, rate, burst = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1e6
local state = redis.call('HMGET', key, 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', key, 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('EXPIRE', key, math.ceil(burst / rate) + 1)
return {allowed, tostring(tokens)}
"""


class SharedRateLimiter:
    """``RateLimiter`` with its buckets in Redis: every server that shares the Redis counts a
    key's requests together, so N servers allow the key ``rate``, not N × ``rate``. When Redis
    fails, each process counts on its own (logged) and tries Redis again after
    ``retry_interval`` seconds."""

    def __init__(self, rate: float, burst: int, url: str, *, prefix: str = "memstream:rate",
                 retry_interval: float = 30.0) -> None:
        try:
            import redis
        except ImportError as exc:
            raise MissingDependency("shared rate limits need: pip install 'memstream[redis]'"
                                    ) from exc
        self.rate, self.burst, self.prefix = rate, burst, prefix
        self.retry_interval = retry_interval
        self._r = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=1)
        self._errors = (redis.RedisError, OSError)
        self._script = self._r.register_script(_BUCKET_LUA)
        self._local = RateLimiter(rate, burst)
        self._retry_at = 0.0  # while Redis fails: when to try it again

    def check(self, caller: str) -> None:
        if self.rate <= 0:
            return
        if time.monotonic() >= self._retry_at:
            try:
                allowed, tokens = self._script(args=[f"{self.prefix}:{caller}", self.rate,
                                                     self.burst])
            except self._errors as exc:
                if self._retry_at == 0.0:
                    log.warning("rate limits: Redis failed (%s); each server counts on its own "
                                "until it is back", exc)
                self._retry_at = time.monotonic() + self.retry_interval
            else:
                if self._retry_at:
                    log.warning("rate limits: Redis is back; the servers count together again")
                self._retry_at = 0.0
                if not int(allowed):
                    raise RateLimited(f"over the limit of {self.rate:g} requests/s for this "
                                      "key; slow down and retry",
                                      retry_after=(1 - float(tokens)) / self.rate)
                return
        self._local.check(caller)


class BodyLimit:
    """ASGI middleware: refuse a request body over ``max_bytes`` with 413."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit():
            if int(length) > self.max_bytes:
                await _too_large(send, self.max_bytes)
                return
            await self.app(scope, receive, send)
            return
        # no length given (a chunked body): read it whole, up to the limit, then pass it on
        messages, seen = [], 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                await _too_large(send, self.max_bytes)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Any:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


async def _too_large(send: Any, limit: int) -> None:
    import json

    body = json.dumps({"error": {"type": "PayloadTooLarge", "status": 413, "message":
                                 f"the request body is over the limit of {limit} bytes; send "
                                 "less at a time"}}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
