"""Storage backends behind one protocol, chosen by URL through one registry."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, MissingDependency
from .protocol import ApiKey, KeyStore, Patch, Signals, Store, StoreStats, keys_of

__all__ = ["STORES", "ApiKey", "KeyStore", "Patch", "Signals", "Store", "StoreStats", "keys_of",
           "open_store", "parse_url", "sqlite_path"]

#: URL scheme -> (module:Class, extra that provides its dependencies). The one registration.
STORES: dict[str, tuple[str, str | None]] = {
    "sqlite": ("memstream.store.sqlite:SQLiteStore", None),
    "postgresql": ("memstream.store.postgres:PostgresStore", "postgres"),
    "postgres": ("memstream.store.postgres:PostgresStore", "postgres"),
}


def parse_url(url: str | Path | None) -> tuple[str, str]:
    """(scheme, what the backend opens) of a store URL."""
    url = str(url) if url is not None else "memstream.db"
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "sqlite", url
    elif scheme == "sqlite":
        rest = rest[1:] if rest.startswith("/") else rest  # sqlite:///rel.db, sqlite:////abs.db
    if scheme not in STORES:
        raise InvalidInput(f"unknown store URL scheme {scheme!r} in {url!r}; use a file path, "
                           "':memory:', sqlite:///path or postgresql://user@host/db")
    return scheme, (rest or ":memory:") if scheme == "sqlite" else url  # servers: the whole URL


def sqlite_path(url: str | Path | None) -> str | None:
    """The file of a SQLite store URL (None for other stores and ``:memory:``)."""
    scheme, target = parse_url(url)
    return target if scheme == "sqlite" and target != ":memory:" else None


def open_store(url: str | Path | None, **options: Any) -> Store:
    """A store from a path, ``":memory:"``, ``sqlite:///path``, ``postgresql://...`` or another
    registered URL."""
    scheme, target = parse_url(url)
    module_name, _, class_name = STORES[scheme][0].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise MissingDependency(f"the {scheme} store needs: pip install "
                                f"'memstream[{STORES[scheme][1]}]'") from exc
    return getattr(module, class_name)(target, **options)  # type: ignore[no-any-return]
