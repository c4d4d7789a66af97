from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstream import Memory

from ..redis_server import REDIS_URL


@pytest.fixture(params=["sqlite", "postgres"])
def store_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """The durable store (LTM): a SQLite file, or a fresh database on the real PostgreSQL."""
    url = str(tmp_path / "agents.db") if request.param == "sqlite" else \
        request.getfixturevalue("pg_url")
    with Memory(url, embedder="none") as mem:
        yield mem


@pytest.fixture(params=["process", "redis"])
def backend(request: pytest.FixtureRequest) -> Iterator[dict[str, str | None]]:
    """Keyword arguments for TieredMemory: tiers in this process, or in the real Redis
    (under a fresh prefix, removed afterwards)."""
    if request.param == "process":
        yield {"redis_url": None}
        return
    yield {"redis_url": REDIS_URL, "prefix": request.getfixturevalue("redis_prefix")}
