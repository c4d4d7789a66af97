"""Deletes and erasures through the engine: the store's, then every listener's (the caches
over a memory, such as the agents' tiers, drop what was deleted)."""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Callable, Sequence

from ..embed.cache import content_hash, passage
from ..store.protocol import RecordStore

__all__ = ["Deletions", "Listener"]

log = logging.getLogger("memstream")

#: told ``(namespace, ids)`` after records are deleted or erased
Listener = Callable[[str, list[str]], None]


class Deletions:
    """The one way records leave a memory (``Memory.delete``, ``delete_all`` and the
    capabilities' ``records_of(memory).delete``)."""

    def __init__(self, records: RecordStore) -> None:
        self._records = records
        self._listeners: list[Callable[[], Listener | None]] = []

    def listen(self, listener: Listener) -> None:
        """Call ``listener(namespace, ids)`` after each removal. A listener that raises is
        logged; the removal stands. A bound method is held weakly (its object may go)."""
        self._listeners.append(weakref.WeakMethod(listener) if inspect.ismethod(listener)
                               else lambda: listener)

    def remove(self, namespace: str, ids: Sequence[str], *, at: float, erase: bool) -> int:
        """Delete (history kept) or erase (see ``Memory.delete``) the records ``ids`` of a
        namespace; how many were removed."""
        ids = list(ids)
        if not ids:
            return 0
        if erase:
            keys = [content_hash(passage(r.text)) for r in self._records.get(namespace, ids)]
            removed = self._records.erase(namespace, ids, at=at, cache_keys=keys)
        else:
            removed = self._records.delete(namespace, ids, at=at)
        for ref in list(self._listeners):
            listener = ref()
            if listener is None:
                self._listeners.remove(ref)
                continue
            try:
                listener(namespace, ids)
            except Exception:  # a cache's failure never undoes a committed delete
                log.exception("a delete listener failed")
        return removed
