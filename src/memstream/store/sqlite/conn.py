"""The SQLite store's connections: the write lock, and the pool of connections that only read.

A process writes through one connection, under ``OwnedLock``. It reads through that one too,
waiting up to ``READ_WAIT_S`` for the writes before it (its page cache stays warm across its
own commits, where another connection's cache is dropped at each of them: a search that
touches its hits is a commit); past that, it reads through a few others, lent one per thread
by ``ReadPool``. In WAL mode those see the last committed state beside a write in progress,
so no search waits long for another tenant's long write, and they read side by side (SQLite
lets go of the interpreter while it works).
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["READERS", "READ_WAIT_S", "OwnedLock", "ReadPool"]

#: connections that read, at most, per store (each has its own page cache, filled as used)
READERS = 4
#: how long a read waits for the writing connection before it takes a reading one: the
#: writing connection's cache is warm, where a reading one's is dropped at every commit of
#: another connection, so a read costs less there when the writes before it are short (adds,
#: touches); beside a long write (a batch of thousands, an import, an erase) it reads on
READ_WAIT_S = 0.1
#: how long closing waits for a connection lent to a read still in progress
CLOSE_WAIT_S = 30.0


class OwnedLock:
    """A re-entrant lock that tells whether the calling thread holds it. Each time its holder
    is about to let it go, it runs ``last`` (still holding it); when ``pending()`` says work
    was left meanwhile and no other thread took the lock, it takes it again for that work,
    so nothing left while it was held waits for the next holder."""

    def __init__(self, last: Callable[[], None] = lambda: None,
                 pending: Callable[[], bool] = lambda: False) -> None:
        self._lock = threading.RLock()
        self._owner = 0
        self._depth = 0
        self._last = last
        self._pending = pending

    def __enter__(self) -> OwnedLock:
        self._lock.acquire()
        self._enter()
        return self

    def try_enter(self, wait: float = 0.0) -> bool:
        """Take the lock if no other thread holds it, or lets it go within ``wait`` seconds
        (then leave it with ``__exit__``)."""
        if not (self._lock.acquire(timeout=wait) if wait > 0 else
                self._lock.acquire(blocking=False)):
            return False
        self._enter()
        return True

    def _enter(self) -> None:
        self._owner = threading.get_ident()
        self._depth += 1

    def __exit__(self, *exc: object) -> None:
        if self._depth > 1:
            self._depth -= 1
            self._lock.release()
            return
        while True:
            try:
                self._last()
            finally:
                self._depth, self._owner = 0, 0
                self._lock.release()
            if not self._pending() or not self._lock.acquire(blocking=False):
                return
            self._enter()

    def held(self) -> bool:
        return self._owner == threading.get_ident()


class ReadPool:
    """Connections that only read, opened as needed up to ``size`` and lent one per thread: a
    thread that reads again inside its read gets the connection it holds (the same snapshot,
    and no second one taken from a pool that may be empty)."""

    def __init__(self, open_one: Callable[[], sqlite3.Connection], size: int = READERS) -> None:
        self._open = open_one
        self._size = size
        self._free: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._opened: list[sqlite3.Connection] = []
        self._opening = threading.Lock()
        self._closed = False
        self._mine = threading.local()

    def held(self) -> bool:
        """Whether the calling thread reads through one of these connections now."""
        return getattr(self._mine, "db", None) is not None

    @contextmanager
    def lend(self) -> Iterator[sqlite3.Connection]:
        held: sqlite3.Connection | None = getattr(self._mine, "db", None)
        if held is not None:
            yield held
            return
        db = self._take()
        self._mine.db = db
        try:
            yield db
        finally:
            self._mine.db = None
            self._free.put(db)

    def _take(self) -> sqlite3.Connection:
        try:
            return self._free.get_nowait()
        except queue.Empty:
            pass
        with self._opening:
            if self._closed:
                raise sqlite3.ProgrammingError("the store is closed")
            if len(self._opened) < self._size:
                db = self._open()
                self._opened.append(db)
                return db
        return self._free.get()

    def close(self) -> None:
        """Close every connection, each once it is back (at most ``CLOSE_WAIT_S``)."""
        with self._opening:
            self._closed = True
            opened, self._opened = self._opened, []
        for _ in opened:
            try:
                self._free.get(timeout=CLOSE_WAIT_S)
            except queue.Empty:
                break
        for db in opened:
            db.close()
