"""The PostgreSQL store (``store.PostgresStore``), for several processes or machines sharing
one memory, and its parts: the records (``records``), keyword and vector search (``indexes``),
keys, queues and transfers (``admin``), its SQL, rows and schema (``sql``, ``rows``,
``schema``)."""

from .store import PostgresStore

__all__ = ["PostgresStore"]
