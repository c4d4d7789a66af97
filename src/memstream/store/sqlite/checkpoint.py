"""Write-ahead-log checkpoints off the writer's path.

SQLite's default copies the log back into the database file inside the commit that crosses
1,000 pages, with an fsync: past a few hundred thousand records that copy is scattered writes
into a large file and costs more than the inserts themselves. The store turns that off on its
connection and a ``Checkpointer`` thread, with a connection of its own, runs passive
checkpoints (they never block a writer or a reader) when the log has grown past ``SOFT_BYTES``;
when the log is longer than ``RESTART_FRAMES`` (the writer kept appending while it was being
copied, so it was never started over), a restarting checkpoint holds the writer back for the
short rest, and the next commit rewinds the log (whose file is then cut back to ``SOFT_BYTES``).
Should the thread be gone, or fall behind past ``HARD_BYTES``, the writer checkpoints inline as
SQLite would, so the log stays bounded. Durability is unchanged: a commit is durable in the log
either way.

No checkpoint here waits long for a reader: a restarting or truncating checkpoint holds every
writer back while it waits, and another process's long read transaction (a dashboard, a backup)
would hold them all for the busy timeout (30 s). They wait at most ``READER_WAIT_MS`` and are
tried again later. An erase needs the log truncated (the log still holds the old pages, the
erased text in them): when a reader holds it, the store marks the scrub pending (``SCRUB_PENDING``
in its settings, so that the next process to open the file finishes it too) and this thread
tries again every ``SCRUB_EVERY`` seconds until the log is truncated, then clears the mark.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading

from ..protocol import SCRUB_PENDING

__all__ = ["HARD_BYTES", "RESTART_FRAMES", "SOFT_BYTES", "Checkpointer",
           "truncate_log"]

log = logging.getLogger("memstream.store")

SOFT_BYTES = 4 * 2**20  # SQLite's own default: 1,000 pages of 4 KiB
HARD_BYTES = 64 * 2**20
RESTART_FRAMES = 4096  # 16 MiB of 4 KiB pages
#: how long a restarting or truncating checkpoint waits for readers before it gives up
READER_WAIT_MS = 200
#: seconds between two tries of a pending scrub
SCRUB_EVERY = 1.0


def truncate_log(db: sqlite3.Connection, *, restore_ms: int) -> bool:
    """Copy the whole log back and cut it to nothing, waiting at most ``READER_WAIT_MS`` for
    readers; whether it was done (False: a reader still needs the log)."""
    if not _all_copied(db):  # a reader still needs older pages: it would only hold writers
        return False
    db.execute(f"PRAGMA busy_timeout = {READER_WAIT_MS}")
    try:
        busy = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0][0]
    except sqlite3.OperationalError:  # locked past the wait
        busy = 1
    finally:
        db.execute(f"PRAGMA busy_timeout = {restore_ms}")
    return bool(busy == 0)


def _passive(db: sqlite3.Connection) -> tuple[int, int]:
    """Run a passive checkpoint (it never waits): the pages in the log, and how many of them
    are copied back. Fewer copied than logged says a reader still needs older pages (another
    process's long read transaction, or a write that came meanwhile): a restarting or
    truncating checkpoint would then hold every writer back for ``READER_WAIT_MS``, and fail
    at every try for as long as that reader lasts."""
    _busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
    return int(frames), int(copied)


def _all_copied(db: sqlite3.Connection) -> bool:
    frames, copied = _passive(db)
    return frames == copied


class Checkpointer:
    """One background thread per store file (started on the first nudge)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._wal = path + "-wal"
        self._wake = threading.Event()
        self._stop = False
        self._scrub = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def scrub_later(self) -> None:
        """Truncate the log as soon as no reader needs it (an erase's scrub is pending)."""
        self._scrub = True
        self._start()
        self._wake.set()

    @property
    def scrub_pending(self) -> bool:
        return self._scrub

    def wal_bytes(self) -> int:
        try:
            return os.stat(self._wal).st_size
        except OSError:
            return 0

    def after_commit(self, writer: sqlite3.Connection) -> None:
        """Called by the writer after each commit: wakes the thread when the log is large, and
        checkpoints on ``writer`` itself when it is far too large."""
        size = self.wal_bytes()
        if size <= SOFT_BYTES:
            return
        self._start()
        if size > HARD_BYTES or self._thread is None or not self._thread.is_alive():
            writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        else:
            self._wake.set()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self._stop:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="memstream-checkpoint")
                self._thread.start()

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                                 check_same_thread=False)
            db.execute(f"PRAGMA journal_size_limit = {SOFT_BYTES}")
        except sqlite3.Error as exc:
            log.warning("checkpoint thread could not open %s (%s); the writer checkpoints "
                        "instead", self.path, exc)
            return
        warned = False
        stuck = -1  # pages copied at the last try
        try:
            while True:
                self._wake.wait(SCRUB_EVERY if self._scrub else None)
                self._wake.clear()  # a nudge during the checkpoint asks for the next one
                if self._stop:
                    return
                try:
                    if self._scrub and truncate_log(db, restore_ms=30_000):
                        self._finish_scrub(db)
                        continue
                    frames, copied = _passive(db)
                    stalled = copied < frames and copied == stuck
                    stuck = copied
                    if frames > RESTART_FRAMES and not stalled:
                        # a long log slows every read of a page it holds, and a log the
                        # writer keeps appending to is never started over: copy the rest
                        # while holding writers back (never long: READER_WAIT_MS), so the
                        # next commit rewinds it. Not while the copy makes no progress: a
                        # reader holds it back, and would hold the writers at every commit
                        db.execute(f"PRAGMA busy_timeout = {READER_WAIT_MS}")
                        try:
                            db.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
                        finally:
                            db.execute("PRAGMA busy_timeout = 30000")
                except sqlite3.Error as exc:  # retried on the next nudge
                    if not warned:
                        log.warning("background checkpoint of %s failed: %s", self.path, exc)
                    warned = True
        finally:
            db.close()

    def _finish_scrub(self, db: sqlite3.Connection) -> None:
        self._scrub = False
        db.execute("DELETE FROM meta WHERE key = ?", (SCRUB_PENDING,))
        log.info("the erased records' pages are gone from %s's log", self.path)

    def close(self) -> None:
        """Stop the thread (the store's last connection to close checkpoints the rest)."""
        with self._lock:
            self._stop = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()
