"""A store's ``queues`` part (``protocol.WorkQueues``): the records waiting for a vector or an
importance rating. What is the same on every backend is here (``Queues``); how a backend
claims work from its table is its subclass's (``sqlite.admin.SQLiteQueues``,
``postgres.admin.PgQueues``)."""

from __future__ import annotations

from typing import Protocol

from ...errors import NotFound
from ..protocol import Patch, RecordStore
from .backend import Backend

__all__ = ["Queues"]


class WithRecords(Backend, Protocol):
    """A store with its records part (a rating is an update)."""

    @property
    def records(self) -> RecordStore: ...


class Queues:
    """``set_rating`` and ``clear_embeddings``; a backend adds ``pending_ratings``,
    ``pending_embeddings`` and ``_rated`` (its one statement taking a record off the rating
    queue)."""

    def __init__(self, backend: WithRecords) -> None:
        self._backend = backend
        self._session = backend.session
        self._ph = backend.PLACEHOLDER

    def pending_ratings(self, limit: int) -> list[tuple[str, str, str, str]]:
        raise NotImplementedError

    def pending_embeddings(self, limit: int, *, owner: str | None = None,
                           lease: float = 60.0) -> list[tuple[str, str, str]]:
        raise NotImplementedError

    def _rated(self, namespace: str, record_id: str) -> None:
        raise NotImplementedError

    def set_rating(self, namespace: str, record_id: str, importance: float | None, *,
                   at: float) -> None:
        """The rated importance is an update (with its history), then the record leaves the
        queue."""
        if importance is not None:
            try:
                self._backend.records.update(namespace, record_id,
                                             Patch(importance=importance), at=at)
            except NotFound:
                return
        self._rated(namespace, record_id)

    def clear_embeddings(self) -> int:
        """Queue every record of the text space for a new embedding (after a change of
        embedder); the vectors of named spaces are their capabilities' and stay."""
        with self._session(True) as db:
            cur = db.execute("UPDATE records SET embedding = NULL, embed_model = NULL, "
                             f"needs_embedding = {self._ph}, embed_owner = NULL, "
                             "embed_until = NULL WHERE space = ''", (True,))
            return int(cur.rowcount)
