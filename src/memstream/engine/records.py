"""The engine's boundary for the capabilities and the inspector: a small, named protocol of what
they may do with a memory's records, so that they are clients of the engine and never of the
store (``tests/test_architecture.py`` holds them to it).

``records_of(memory)`` gives the memory's ``Records``: reads by id and by selection, counts,
vectors, keyword matches, two writes and tier-move events. ``insert`` is for records a
capability builds itself (agent states, with their own vectors); ``delete`` goes through the
engine, so its listeners (the agents' tiers) drop what was deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .._types import Record
from ..filters import Selection
from ..retrieval.keywords import keyword_search
from ..store.parts.lg_tables import Tables, open_tables

#: LangGraph's checkpoint tables in a memory's own database, for its checkpointer
#: (``open_tables(records_of(memory).url)``)
checkpoint_tables = open_tables

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["Records", "Tables", "checkpoint_tables", "records_of"]


class Records(Protocol):
    def insert(self, records: Sequence[Record], *, model: str) -> None:
        """Store records as they are (their vectors made by ``model``), without history rows or
        an approximate index: what a capability that compares its own vectors exactly needs."""

    def define_space(self, name: str, model: str, dim: int) -> None:
        """Name the vector space of a capability's own vectors (its records carry it in
        ``Record.space``, its selections in ``Selection.space``): they are never compared with
        another model's. Conflict when the store holds that space for another model."""

    def get(self, namespace: str, ids: Sequence[str]) -> list[Record]:
        """The records with these ids, in that order; unknown ids are left out."""

    def select(self, sel: Selection, *, limit: int | None = None, offset: int = 0,
               order: str = "created") -> list[Record]:
        """The records a selection matches (order: created, -created, step)."""

    def select_ids(self, sel: Selection, *, limit: int | None = None,
                   order: str = "created") -> list[str]:
        """``select``, ids only."""

    def count(self, sel: Selection) -> int: ...

    def alive(self, namespace: str, ids: Sequence[str]) -> set[str]:
        """Which of these records exist (a cache checks what it serves)."""

    def vectors(self, sel: Selection) -> tuple[list[str], np.ndarray]:
        """The ids and stored vectors of what a selection matches, one row each."""

    def embeddings(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    def keyword_search(self, sel: Selection, terms: Sequence[str], limit: int
                       ) -> list[tuple[str, float]]:
        """(id, score) of the best keyword matches of the terms, best first."""

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        """Delete records through the engine (history kept, listeners told)."""

    def namespaces(self) -> list[str]: ...

    def touch(self, namespace: str, ids: Sequence[str], *, at: float) -> None:
        """Mark records as accessed at ``at`` (what a read that counts as a use does)."""

    def emit(self, namespace: str, type_: str, ids: Sequence[str], *,
             agent_id: str | None = None, data: dict[str, Any] | None = None) -> None:
        """Write a change event that no record change carries (an agent's tier moves)."""

    @property
    def url(self) -> str:
        """Where the records live (the store's URL): a capability that keeps tables of its own
        beside them (the LangGraph checkpointer) opens that database."""


class _EngineRecords:
    """``Records`` over a ``Memory``: its store for reads, the engine for deletes."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        self._store = memory.store

    def insert(self, records: Sequence[Record], *, model: str) -> None:
        self._store.records.insert(records, model=model, history=False, ann=False)

    def define_space(self, name: str, model: str, dim: int) -> None:
        self._store.indexes.define_space(name, model, dim)

    def get(self, namespace: str, ids: Sequence[str]) -> list[Record]:
        return self._store.records.get(namespace, ids) if ids else []

    def select(self, sel: Selection, *, limit: int | None = None, offset: int = 0,
               order: str = "created") -> list[Record]:
        return self._store.records.select(sel, limit=limit, offset=offset, order=order)

    def select_ids(self, sel: Selection, *, limit: int | None = None,
                   order: str = "created") -> list[str]:
        return self._store.records.select_ids(sel, limit=limit, order=order)

    def count(self, sel: Selection) -> int:
        return self._store.records.count(sel)

    def alive(self, namespace: str, ids: Sequence[str]) -> set[str]:
        return {s.id for s in self._store.records.signals(namespace, ids)} if ids else set()

    def vectors(self, sel: Selection) -> tuple[list[str], np.ndarray]:
        return self._store.indexes.selection_vectors(sel)

    def embeddings(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self._store.indexes.embeddings(namespace, ids) if ids else {}

    def keyword_search(self, sel: Selection, terms: Sequence[str], limit: int
                       ) -> list[tuple[str, float]]:
        return keyword_search(self._store.indexes, sel, terms, limit)

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        return self._memory.deletions.remove(namespace, ids, at=self._memory.clock.now(),
                                             erase=False)

    def namespaces(self) -> list[str]:
        return self._store.namespaces()

    def touch(self, namespace: str, ids: Sequence[str], *, at: float) -> None:
        self._store.records.touch(namespace, list(ids), at=at)

    def emit(self, namespace: str, type_: str, ids: Sequence[str], *,
             agent_id: str | None = None, data: dict[str, Any] | None = None) -> None:
        self._store.events.append_events(namespace, type_, ids, agent_id=agent_id, data=data)

    @property
    def url(self) -> str:
        return self._store.url


def records_of(memory: Memory) -> Records:
    """The memory's ``Records`` (one per memory)."""
    return memory.capabilities.get(("records",), lambda: _EngineRecords(memory),
                                   _EngineRecords)
