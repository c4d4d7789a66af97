"""The bundle of a store's parts (``protocol.Store``): each attribute is a part, an object of
its own over the store's connection."""

from __future__ import annotations

from ..protocol import (
    EntityGraph,
    EventStore,
    KeyValue,
    RecordStore,
    SearchIndexes,
    Transfer,
    WorkQueues,
)
from .events import EventLog
from .graph import Graph
from .indexes import Indexes
from .kv import KeyValues
from .queues import Queues
from .records import Records
from .transfer import Copying

__all__ = ["Bundle"]


class Bundle:
    """The parts of a store (``protocol.Store``), each an object the backend makes over its
    connection: records, search indexes, work queues, meta values, transfer, events and the
    entity graph (the
    API keys are the backend's ``keys``, outside ``Store``)."""

    event_log: EventLog
    entity_graph: Graph
    _kv: KeyValues
    _queues: Queues
    _transfer: Copying
    index_part: Indexes
    _records: Records

    @property
    def records(self) -> RecordStore:
        return self._records

    @property
    def indexes(self) -> SearchIndexes:
        return self.index_part

    @property
    def queues(self) -> WorkQueues:
        return self._queues

    @property
    def kv(self) -> KeyValue:
        return self._kv

    @property
    def transfer(self) -> Transfer:
        return self._transfer

    @property
    def events(self) -> EventStore:
        return self.event_log

    @property
    def graph(self) -> EntityGraph:
        return self.entity_graph
