"""What a storage part needs of the store it belongs to (``Backend``): the backend's parameter
placeholder, what locks a row read in a write transaction until it ends (``ROW_LOCK``: empty
where a write transaction already excludes every other writer, as SQLite's ``BEGIN
IMMEDIATE`` does) and a session, a connection or cursor that is, with ``write``, one
transaction."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

__all__ = ["Backend"]


class Backend(Protocol):
    PLACEHOLDER: str
    ROW_LOCK: str

    def session(self, write: bool) -> AbstractContextManager[Any]: ...
