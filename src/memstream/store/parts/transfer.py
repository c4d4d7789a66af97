"""A store's ``transfer`` part (``protocol.Transfer``): paging through a whole store and
writing another's pages, for ``memstream migrate``. The outbox tables are the event log's; a
backend's subclass reads and writes its records and history (``sqlite.admin.SQLiteTransfer``,
``postgres.admin.PgTransfer``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..._types import HistoryEntry, Record
from .backend import Backend
from .events import EventLog

__all__ = ["Copying"]


class WithEvents(Backend, Protocol):
    """A store with its event log (the outbox tables) and ``reset``."""

    event_log: EventLog

    def reset(self) -> None: ...


class Copying:
    """The outbox tables (through the event log) and ``wipe``; a backend adds its pages."""

    def __init__(self, backend: WithEvents) -> None:
        self._backend = backend
        self._session = backend.session

    def records_page(self, namespace: str, after: str | None, limit: int
                     ) -> list[tuple[Record, str | None]]:
        raise NotImplementedError

    def history_page(self, after: int, limit: int) -> list[tuple[int, HistoryEntry]]:
        raise NotImplementedError

    def put_history(self, entries: Sequence[HistoryEntry]) -> None:
        raise NotImplementedError

    def outbox_rows(self, table: str, offset: int, limit: int) -> list[tuple[Any, ...]]:
        return self._backend.event_log.outbox_rows(table, offset, limit)

    def put_outbox_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        self._backend.event_log.put_outbox_rows(table, rows)

    def outbox_count(self, table: str) -> int:
        return self._backend.event_log.outbox_count(table)

    def wipe(self) -> None:
        """Every row of every table gone, keys and webhooks too (an unfinished migrate's
        target, before it starts again)."""
        self._backend.reset()
        with self._session(True) as db:
            for table in ("api_keys", "webhooks", "webhook_dead"):
                db.execute(f"DELETE FROM {table}")
