"""Is a file a healthy memstream store? Answered before memstream changes anything in it.

``inspect_file`` runs before a store is opened for writing: a zero-length file, a file that is
not SQLite, an SQLite database that is not a memstream store (no ``meta`` table with a schema
version, or a memstream table missing) and, for files up to ``QUICK_CHECK_BYTES``, damage that
SQLite's ``PRAGMA quick_check`` finds, are refused with ``CorruptStore``; the file, and the
folder beside it, are left exactly as they were. Larger files get the same checks but for the
page scan, which takes about a second per few hundred MiB: ``memstream check`` (``check_file``)
runs the full ``PRAGMA integrity_check`` on demand.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

from ...errors import CorruptStore

__all__ = ["QUICK_CHECK_BYTES", "TABLES", "check_file", "connect_read_only", "inspect_file"]

#: files up to this size are scanned page by page (quick_check) each time they are opened
QUICK_CHECK_BYTES = 256 * 2**20
#: the tables every memstream store has (the current schema)
TABLES = ("meta", "records", "records_fts", "vector_log", "history", "embedding_cache",
          "api_keys")
#: how long a zero-length file may take to become a store (another process creating it)
_CREATING_SECONDS = 2.0


def _refuse(path: str, why: str) -> CorruptStore:
    return CorruptStore(f"{path} {why}; nothing in it was changed: restore it from a backup, or "
                        "point memstream at another file")


def connect_read_only(path: str) -> sqlite3.Connection:
    """A connection that cannot change the file. With a write-ahead log beside it (the store is
    open elsewhere, or was when it stopped), a read-only connection that reads the log and
    takes part in locking; without one, an immutable one, which makes no -wal or -shm file."""
    uri = f"file:{quote(str(Path(path).resolve()))}?mode=ro"
    if not Path(path + "-wal").exists():
        uri += "&immutable=1"
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


def inspect_file(path: str, *, scan: bool | None = None) -> None:
    """Raise CorruptStore unless ``path`` is missing (a new store) or looks like a healthy
    memstream store. ``scan``: run quick_check (default: for files up to QUICK_CHECK_BYTES)."""
    file = Path(path)
    if not file.exists():
        return
    size = file.stat().st_size
    deadline = time.monotonic() + _CREATING_SECONDS
    while size == 0 and time.monotonic() < deadline:  # another process may be creating it
        time.sleep(0.02)
        size = file.stat().st_size
    if size == 0:
        raise _refuse(path, "is an empty file, not a memstream store (delete it to start a new "
                            "store there)")
    # the file is read through SQLite only, never with a descriptor of our own: closing one
    # drops every POSIX lock this process holds on the file (POSIX ties them to the process),
    # so a store already open here would lose its locks, and another process closing its
    # connection would then believe itself the last one and delete the write-ahead log under
    # it (its readers stop seeing this process's writes, and their writes get lost)
    try:
        db = connect_read_only(path)
    except sqlite3.Error as exc:
        raise _refuse(path, f"cannot be read as SQLite ({exc})") from exc
    try:
        try:
            tables = {r[0] for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc):  # SQLITE_NOTADB
                raise _refuse(path, "is not an SQLite database, so not a memstream store") \
                    from exc
            raise
        ours = {t for t in tables if not t.startswith("sqlite_")}
        if not ours:
            return  # an SQLite file with no tables yet: becomes a new store
        if "meta" not in ours or db.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'").fetchone() is None:
            raise _refuse(path, "is an SQLite database but not a memstream store")
        missing = [t for t in TABLES if t not in ours]
        if missing and "records" not in ours:
            raise _refuse(path, "is an SQLite database but not a memstream store")
        if missing and len(missing) < len(TABLES) and _complete(db):
            raise _refuse(path, f"is a damaged memstream store: table(s) {', '.join(missing)} "
                                "are missing")
        if scan if scan is not None else size <= QUICK_CHECK_BYTES:
            problems = [r[0] for r in db.execute("PRAGMA quick_check(5)")]
            if problems != ["ok"]:
                raise _refuse(path, f"is damaged ({'; '.join(problems)[:300]})")
    except sqlite3.DatabaseError as exc:
        raise _refuse(path, f"is damaged ({exc})") from exc
    finally:
        db.close()


def _complete(db: sqlite3.Connection) -> bool:
    """Whether the store's schema is the current one (older stores gain tables on migration)."""
    from .schema import SCHEMA_VERSION

    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return row is not None and str(row[0]).isdigit() and int(row[0]) >= SCHEMA_VERSION


def check_file(path: str) -> list[str]:
    """The problems of a store found by a full scan (``PRAGMA integrity_check``); empty when it
    is healthy. Raises CorruptStore when it is not a memstream store at all."""
    inspect_file(path, scan=False)
    if not Path(path).exists():
        raise CorruptStore(f"{path} does not exist")
    db = connect_read_only(path)
    try:
        rows = [r[0] for r in db.execute("PRAGMA integrity_check(100)")]
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    finally:
        db.close()
    return [] if rows == ["ok"] else rows
