"""In-process subscribers to a memory's change events (``Memory.on``) and the outbox's retention.

A dispatcher thread per memory tails the outbox (``Store.events_after``) and calls each
subscriber with the events it asked for, in order, shortly after their changes commit; changes
other processes make to the same store arrive too. A callback runs on that thread: an error in
it is logged and never reaches the write that made the event, nor the other subscribers.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..events import EVENT_TYPES, ChangeEvent
from .webhooks import Webhooks, webhooks_of

if TYPE_CHECKING:
    from ..config import ResolvedConfig
    from ..store.protocol import Store
    from .memory import Memory

__all__ = ["ChangeEvents", "Dispatcher", "Subscription", "dispatcher_of", "maybe_prune"]

log = logging.getLogger("memstream.events")

POLL = 0.05  # seconds between two reads of the outbox while someone listens
BATCH = 500
PRUNE_EVERY = 600.0  # seconds between two prunes of the outbox by one process


class Subscription:
    """One subscriber: a callback, the types it wants (all for ``"*"``), its namespace (every
    one when None). ``close()`` ends it; ``seen`` is the last event number it was shown."""

    def __init__(self, dispatcher: Dispatcher, types: frozenset[str],
                 fn: Callable[[ChangeEvent], object], namespace: str | None, after: int) -> None:
        self._dispatcher = dispatcher
        self.types, self.fn, self.namespace = types, fn, namespace
        self.seen = after
        self.errors = 0

    def wants(self, event: ChangeEvent) -> bool:
        return (not self.types or event.type in self.types) and \
            (self.namespace is None or event.namespace == self.namespace)

    def wait(self, timeout: float = 5.0) -> bool:
        """Block until every event written so far has been offered to this subscriber (a
        test's or a script's way to know its callback has run); False on timeout."""
        target = self._dispatcher.store_last()
        deadline = time.monotonic() + timeout
        while self.seen < target:
            if time.monotonic() > deadline:
                return False
            self._dispatcher.wake()
            time.sleep(POLL / 5)
        return True

    def close(self) -> None:
        self._dispatcher.remove(self)


class Dispatcher:
    """Tails the outbox for the subscribers of one memory."""

    def __init__(self, memory: Memory) -> None:
        self._store = memory.store
        self._subs: list[Subscription] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None

    def store_last(self) -> int:
        return self._store.events.last_event_seq()

    def on(self, types: str | Sequence[str], fn: Callable[[ChangeEvent], object], *,
           namespace: str | None = None) -> Subscription:
        wanted = frozenset([types] if isinstance(types, str) else types) - {"*"}
        unknown = wanted - set(EVENT_TYPES)
        if unknown:
            raise InvalidInput(f"unknown event type(s) {sorted(unknown)}; use one of "
                               f"{', '.join(EVENT_TYPES)} or '*'")
        if not callable(fn):
            raise InvalidInput("on() needs a callable: mem.on('added', lambda event: ...)")
        sub = Subscription(self, wanted, fn, namespace, self.store_last())
        with self._lock:
            self._subs.append(sub)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="memstream-events",
                                                daemon=True)
                self._thread.start()
        return sub

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    def wake(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop:
            try:
                busy = self._dispatch()
            except Exception:  # a closed or unreachable store: try again later
                log.exception("reading change events failed")
                busy = False
            if not busy:
                self._wake.wait(POLL)
                self._wake.clear()

    def _dispatch(self) -> bool:
        with self._lock:
            subs = list(self._subs)
        if not subs:
            return False
        start = min(s.seen for s in subs)
        last = self.store_last()  # first: an event committed after it waits for the next round
        namespaces = None if any(s.namespace is None for s in subs) else \
            sorted({s.namespace for s in subs if s.namespace is not None})
        events = self._store.events.events_after(namespaces, start, limit=BATCH, upto=last)
        if len(events) == BATCH:
            last = events[-1].seq
        for event in events:
            for sub in subs:
                if event.seq > sub.seen and sub.wants(event):
                    _call(sub, event)
                sub.seen = max(sub.seen, event.seq)
        for sub in subs:  # nothing more of theirs up to here
            sub.seen = max(sub.seen, last)
        return len(events) == BATCH

    def close(self) -> None:
        self._stop = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=2)


def _call(sub: Subscription, event: ChangeEvent) -> None:
    try:
        sub.fn(event)
    except Exception:
        sub.errors += 1
        log.exception("an event subscriber failed on event %s (%s); the change stands",
                      event.seq, event.type)


def dispatcher_of(memory: Memory) -> Dispatcher:
    """The memory's dispatcher (one per memory)."""
    return memory.capabilities.get(("events",), lambda: Dispatcher(memory), Dispatcher)


_pruned: weakref.WeakKeyDictionary[Memory, float] = weakref.WeakKeyDictionary()


def maybe_prune(memory: Memory) -> None:
    """Drop events older than the retention, at most once per ``PRUNE_EVERY`` seconds per
    memory, on a background thread (a write never waits for it)."""
    now = time.monotonic()
    if now - _pruned.get(memory, -PRUNE_EVERY) < PRUNE_EVERY:
        return
    _pruned[memory] = now
    threading.Thread(target=prune, args=(memory,), name="memstream-prune", daemon=True).start()


def prune(memory: Memory, *, before: float | None = None) -> int:
    """Delete the events older than the retention (or ``before``), in batches; how many went.
    Events a webhook has not delivered yet are kept."""
    cutoff = time.time() - memory.config.events_retention * 86400 if before is None else before
    total = 0
    try:
        while True:
            gone = memory.store.events.prune_events(before=cutoff)
            total += gone
            if gone == 0:
                return total
    except Exception:  # closed meanwhile: the next process prunes
        log.debug("pruning events stopped", exc_info=True)
        return total


class ChangeEvents:
    """The change-event verbs of ``Memory`` (memstream.events)."""

    store: Store
    config: ResolvedConfig

    def on(self, types: str | Sequence[str], fn: Callable[[ChangeEvent], object], *,
           namespace: str | None = None) -> Subscription:
        """Call ``fn(event)`` for every change event of these types ("*": all) from now on,
        of one namespace or all, on a background thread, in order. An error in ``fn`` is
        logged and never breaks a write. ``.close()`` the returned subscription to stop."""
        return dispatcher_of(self).on(types, fn, namespace=namespace)  # type: ignore[arg-type]

    def events(self, *, namespace: str | None = None, after: int = 0, limit: int = 100,
               types: Sequence[str] = ()) -> list[ChangeEvent]:
        """The namespace's change events numbered above ``after``, oldest first (resume a
        reader from the last number it saw)."""
        return self.store.events.events_after([self.config.namespace_of(namespace)], after,
                                              limit=limit, types=types)

    @property
    def webhooks(self) -> Webhooks:
        """Register, list and remove webhooks; their dead letters (memstream.engine.webhooks)."""
        return webhooks_of(self)  # type: ignore[arg-type]
