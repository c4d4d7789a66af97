"""Rate limits shared through Redis by several servers, and what happens when Redis fails."""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import pytest

from memstream import RateLimited
from memstream.server.limits import SharedRateLimiter

from ..redis_server import REDIS_URL, RedisRelay, drop_prefix
from .conftest import start, stop


def test_two_servers_sharing_redis_count_a_key_together(tmp_path: Path, redis_prefix: str):
    """Two server processes over one database and one Redis: a key gets its burst once, not
    once per server (each alone would allow it 2, so 4 together)."""
    db = tmp_path / "shared.db"
    one = start(db, "--rate", "1", "--redis", REDIS_URL, keys={"k": (["team"], "admin")})
    two = start(db, "--rate", "1", "--redis", REDIS_URL)
    try:
        key = one.keys["k"]
        clients = [s.client() for s in (one, two)]
        for c in clients:
            c.headers["Authorization"] = f"Bearer {key}"
        began = time.monotonic()
        codes = [clients[n % 2].get("/v1/stats", params={"namespace": "team"}).status_code
                 for n in range(10)]
        elapsed = time.monotonic() - began
        assert set(codes) == {200, 429}
        assert codes.count(200) <= 2 + math.ceil(elapsed)  # the burst, then 1/s refill
        assert 429 in codes[0::2] and 429 in codes[1::2]  # both servers refuse
        for c in clients:
            c.close()
    finally:
        stop(one)
        stop(two)
        drop_prefix("memstream:rate")


def test_each_process_counts_alone_while_redis_fails(redis_relay: RedisRelay, redis_prefix: str,
                                                     caplog: pytest.LogCaptureFixture):
    def limiter() -> SharedRateLimiter:
        return SharedRateLimiter(1, 2, redis_relay.url, prefix=redis_prefix,
                                 retry_interval=0.3)

    first, second = limiter(), limiter()  # two processes
    first.check("key")
    first.check("key")
    with pytest.raises(RateLimited) as refused:
        second.check("key")  # the burst was spent through the other one
    assert 0 < refused.value.retry_after <= 1
    redis_relay.cut()
    with caplog.at_level(logging.WARNING, "memstream.server"):
        second.check("key")  # its own bucket now: full
        second.check("key")
        with pytest.raises(RateLimited):
            second.check("key")
        assert "each server counts on its own" in caplog.text
        redis_relay.start()
        time.sleep(0.4)
        with pytest.raises(RateLimited):  # Redis again, whose bucket is still nearly empty
            second.check("key")
        assert "Redis is back" in caplog.text
