from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstream import Memory

REDIS_URL = "redis://127.0.0.1:6379/0"


def redis_up() -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping())
    except Exception:
        return False


@pytest.fixture
def store_memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "agents.db", embedder="none") as mem:
        yield mem


@pytest.fixture(params=["process", "redis"])
def backend(request: pytest.FixtureRequest) -> Iterator[dict[str, str | None]]:
    """Keyword arguments for TieredMemory: tiers in this process, or in the real Redis
    (under a fresh prefix, removed afterwards)."""
    if request.param == "process":
        yield {"redis_url": None}
        return
    if not redis_up():
        pytest.fail("the Redis server at 127.0.0.1:6379 is not running (.ci/run starts one)")
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    yield {"redis_url": REDIS_URL, "prefix": prefix}
    import redis

    r = redis.Redis.from_url(REDIS_URL)
    keys = list(r.scan_iter(f"{prefix}:*"))
    if keys:
        r.delete(*keys)
