"""The embedded default store, one SQLite file in WAL mode (``store.SQLiteStore``), and its
parts: the records (``records``), keyword and vector search (``keywords``, ``vector``, ``ann``,
``indexes``), keys, queues and transfers (``admin``), its SQL, rows and schema (``sql``,
``rows``, ``schema``), the connections (``conn``), the log's checkpoints (``checkpoint``) and
the check of a file before it is opened (``check``)."""

from .store import OP_VALID, SQLiteStore

__all__ = ["OP_VALID", "SQLiteStore"]
