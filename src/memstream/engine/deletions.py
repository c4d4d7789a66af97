"""Deletes and erasures through the engine: the store's, then every listener's (the caches
over a memory, such as the agents' tiers, drop what was deleted)."""

from __future__ import annotations

import contextlib
import inspect
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import Protocol

from ..embed.cache import content_hash, passage
from ..filters import Selection
from ..store.protocol import SCRUB_PENDING, KeyValue, RecordStore

__all__ = ["Deletions", "Listener"]

log = logging.getLogger("memstream")

#: told ``(namespace, ids)`` after records are deleted or erased
Listener = Callable[[str, list[str]], None]


class Embedding(Protocol):
    """What an erase needs of the background worker: its batches paused meanwhile, so that no
    vector of an erased text is being made (and cached) while it goes."""

    def paused(self) -> contextlib.AbstractContextManager[None]: ...


class Deletions:
    """The one way records leave a memory (``Memory.delete``, ``delete_all`` and the
    capabilities' ``records_of(memory).delete``)."""

    def __init__(self, records: RecordStore, kv: KeyValue | None = None, *,
                 embedding: Embedding | None = None) -> None:
        self._records = records
        self._kv = kv
        self._embedding = embedding
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
            with self._embedding.paused() if self._embedding else contextlib.nullcontext():
                removed = self._records.erase(namespace, ids, at=at,
                                              cache_keys=self._cache_keys(namespace, ids))
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

    def remove_selected(self, sel: Selection, *, at: float, erase: bool, whole_scope: bool
                        ) -> int:
        """Delete (or ``erase``) every record ``sel`` selects; how many it selected. Erasing a
        ``whole_scope`` (a user, agent or run, nothing narrower) erases the history of its
        records deleted earlier too."""
        ids = self._records.select_ids(sel)
        count = len(ids)
        if erase and whole_scope:
            of = {k: val for k, val in (("user_id", sel.user_id), ("agent_id", sel.agent_id),
                                        ("run_id", sel.run_id)) if val is not None}
            known = set(ids)
            ids += [i for i in self._records.history_ids(sel.namespace, of) if i not in known]
        removed = self.remove(sel.namespace, ids, at=at, erase=erase)
        return count if erase else removed

    def scrub_pending(self) -> str | None:
        """None when every erase so far is finished on disk; else what holds the scrub back.
        On SQLite an erase's records are gone from every table when it returns, but the
        write-ahead log keeps the old pages until it is truncated, which waits for every read
        transaction of other connections to end: memstream then retries in the background
        (and at the next open) and this says so, instead of the erase claiming a scrub it has
        not done."""
        raw = self._kv.get_meta(SCRUB_PENDING) if self._kv is not None else None
        if not raw:
            return None
        return ("the erased records are gone from every table, but another connection to this "
                "store holds a read transaction open (a dashboard, a backup, another process), "
                "so its write-ahead log still holds their old pages; memstream truncates the "
                "log as soon as that reader ends (retried every second while memstream has the "
                "store open, and when it next opens it)")

    def _cache_keys(self, namespace: str, ids: Sequence[str]) -> list[str]:
        """The embedding cache's keys of every text the records held: now, before an update,
        and before a delete that kept the history."""
        texts = {r.text for r in self._records.get(namespace, list(ids))}
        for rid in ids:
            for entry in self._records.history(namespace, rid):
                for state in (entry.old, entry.new):
                    if state and isinstance(state.get("text"), str):
                        texts.add(state["text"])
        return sorted(content_hash(passage(t)) for t in texts)
