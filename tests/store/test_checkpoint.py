"""The write-ahead log is copied back by a thread of the store, not inside commits."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from memstream.filters import Selection
from memstream.store.sqlite import SQLiteStore
from memstream.store.sqlite import checkpoint as _checkpoint

from .conformance import rec


def _fill(store: SQLiteStore, batches: int) -> None:
    for b in range(batches):
        store.records.insert([rec(f"batch {b} record {i} " + "padding " * 60) for i in range(500)])


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memstream-checkpoint"]


def test_the_log_is_copied_back_by_the_thread_and_nothing_is_lost(tmp_path: Path):
    path = tmp_path / "a.db"
    store = SQLiteStore(path)
    assert store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    before = os.path.getsize(path)
    _fill(store, 10)  # about 1 MB per batch with its indexes: the thread wakes past 4 MiB
    assert len(_threads()) == 1
    deadline = time.monotonic() + 20
    while os.path.getsize(path) < before + 4 * 2**20 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.getsize(path) >= before + 4 * 2**20  # copied into the database file
    store.close()
    assert _threads() == []
    again = SQLiteStore(path)
    assert again.records.count(Selection("ns")) == 5000
    again.close()


def test_without_the_thread_the_writer_checkpoints_itself(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch):
    """A thread that cannot start (or has died) leaves the work to the writer, as SQLite's
    own automatic checkpoint would: the log never grows without bound."""
    monkeypatch.setattr(_checkpoint.Checkpointer, "_start", lambda self: None)
    running = _threads()
    path = tmp_path / "b.db"
    store = SQLiteStore(path)
    before = os.path.getsize(path)
    _fill(store, 8)
    # the database file grows only by checkpoints, and no thread was there to run them
    assert os.path.getsize(path) >= before + 4 * 2**20
    assert _threads() == running
    store.close()
