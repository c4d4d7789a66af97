"""What the engine's readers take of a store: only the parts they read (a ``Store`` is all of
them). A search reads records, indexes and the entity graph; the namespace's null, records and
indexes; the entity views, records and the graph."""

from __future__ import annotations

from typing import Protocol

from ..store.protocol import EntityGraph, RecordStore, SearchIndexes

__all__ = ["EntityReads", "NullReads", "SearchReads"]


class NullReads(Protocol):
    @property
    def records(self) -> RecordStore: ...

    @property
    def indexes(self) -> SearchIndexes: ...


class EntityReads(Protocol):
    @property
    def records(self) -> RecordStore: ...

    @property
    def graph(self) -> EntityGraph: ...


class SearchReads(NullReads, EntityReads, Protocol):
    """Records, indexes and the entity graph."""
