"""``AsyncMemory``: ``Memory`` for asyncio code. Each method is the ``Memory`` method of the same
name, with the same (typed) signature, run in a worker thread and awaited."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from ..config import Config
from ..core.clock import Clock
from ..embed.protocol import Embedder
from ..events import ChangeEvent
from .memory import Memory
from .subscribers import Subscription
from .webhooks import Webhooks

__all__ = ["AsyncMemory"]

P = ParamSpec("P")
R = TypeVar("R")


def _async(method: Callable[Concatenate[Memory, P], R]
           ) -> Callable[Concatenate[AsyncMemory, P], Coroutine[Any, Any, R]]:
    """An awaitable twin of a Memory method that runs it in a worker thread (same signature and
    docstring, returning a coroutine)."""
    name = method.__name__

    @functools.wraps(method)
    async def run(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = await asyncio.to_thread(getattr(self.sync, name), *args, **kwargs)
        return result

    return run


class AsyncMemory:
    """``Memory`` for asyncio code: the same methods, awaited. ``async with`` closes it."""

    def __init__(self, url: str | Path | None = None, *,
                 embedder: str | Embedder | None = None, config: Config | None = None,
                 clock: Clock | None = None) -> None:
        self.sync = Memory(url, embedder=embedder, config=config, clock=clock)

    add = _async(Memory.add)
    add_many = _async(Memory.add_many)
    write_records = _async(Memory.write_records)
    update = _async(Memory.update)
    invalidate = _async(Memory.invalidate)
    restore = _async(Memory.restore)
    audit = _async(Memory.audit)
    delete = _async(Memory.delete)
    delete_all = _async(Memory.delete_all)
    reset = _async(Memory.reset)
    get = _async(Memory.get)
    get_all = _async(Memory.get_all)
    count = _async(Memory.count)
    history = _async(Memory.history)
    entities = _async(Memory.entities)
    entity = _async(Memory.entity)
    search = _async(Memory.search)
    context = _async(Memory.context)
    stats = _async(Memory.stats)
    namespaces = _async(Memory.namespaces)
    reindex = _async(Memory.reindex)
    reflect = _async(Memory.reflect)
    consolidate = _async(Memory.consolidate)
    flush = _async(Memory.flush)
    close = _async(Memory.close)
    events = _async(Memory.events)

    def on(self, types: str | Sequence[str], fn: Callable[[ChangeEvent], object], *,
           namespace: str | None = None) -> Subscription:
        """``Memory.on``: the callback runs on the memory's event thread (it never blocks the
        event loop; hand work to the loop with ``loop.call_soon_threadsafe``)."""
        return self.sync.on(types, fn, namespace=namespace)

    @property
    def webhooks(self) -> Webhooks:
        """``Memory.webhooks`` (its calls are quick reads and writes of the store)."""
        return self.sync.webhooks

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
