"""The capability instances one ``Memory`` shares in a process: one tiered memory per namespace,
one learner per namespace, one episode memory per agent and namespace, so that REST, MCP and
library code see the same short-term tiers and caches. The capabilities sit above the engine,
so the engine only keeps them: each capability says how it is made (``TieredMemory.of``,
``Learner.of``, ``EpisodeMemory.of``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["Shared"]

T = TypeVar("T")


class Shared:
    """Instances by key, each made once (thread-safe)."""

    def __init__(self) -> None:
        self._items: dict[Hashable, Any] = {}
        self._lock = threading.RLock()  # making one may ask for another

    def get(self, key: Hashable, make: Callable[[], T], kind: type[T]) -> T:
        """The instance for ``key``, made by ``make`` the first time it is asked for."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                item = self._items[key] = make()
        if not isinstance(item, kind):
            raise TypeError(f"{key!r} holds a {type(item).__name__}, not a {kind.__name__}")
        return item

    def close(self) -> None:
        """Close every instance that can be closed (the memory is closing)."""
        with self._lock:
            items, self._items = list(self._items.values()), {}
        for item in items:
            close = getattr(item, "close", None)
            if callable(close):
                close()
