"""The storage protocol: what every backend (SQLite, PostgreSQL, ...) must do.

The protocol comes in parts, each with its own part of the conformance suite
(``tests/store/conformance.py``, run unchanged against every backend): ``RecordStore``,
``SearchIndexes``, ``WorkQueues``, ``KeyValue``, ``Transfer``, ``EventStore`` and
``EntityGraph``; ``Store`` is all of them. ``KeyStore`` (API keys) is not part of ``Store``:
the server reaches it through ``keys_of``. Scores returned by the search methods are "higher
is better". Every method that takes a ``namespace`` or a ``Selection`` touches that namespace
only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._types import Entity, HistoryEntry, Record, Relation, Signals, TermStats
from ..errors import BackendUnavailable
from ..events import ChangeEvent, Webhook
from ..filters import Selection

__all__ = ["SCRUB_PENDING", "ApiKey", "EntityGraph", "EventStore", "KeyStore", "KeyValue", "Patch",
           "RecordStore", "SearchIndexes", "Signals", "Store", "StoreStats", "TermStats",
           "Transfer", "WorkQueues", "keys_of"]

#: the setting (``KeyValue.get_meta``) a store keeps while an erase's scrub of what its files
#: still hold is not finished (SQLite's write-ahead log, which a reader can keep from being
#: truncated); its value is JSON with the time of the erase
SCRUB_PENDING = "erase_scrub_pending"


@dataclass(frozen=True, slots=True)
class Patch:
    """Fields to change on a record; None means "leave as it is"."""

    text: str | None = None
    data: dict[str, Any] | None = None
    importance: float | None = None
    metadata: dict[str, Any] | None = None
    invalidated_at: float | None = None
    superseded_by: str | None = None
    provenance: tuple[str, ...] | None = None
    #: valid again: clears ``invalidated_at`` and ``superseded_by`` (``Memory.restore``)
    restore: bool = False


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A server API key: ``hash`` is the sha256 of its secret; ``role`` is read, write or
    admin; the key may use only ``namespaces``."""

    id: str
    hash: str
    name: str
    namespaces: tuple[str, ...]
    role: str
    created_at: float
    revoked_at: float | None = None


@dataclass(frozen=True, slots=True)
class VectorSpace:
    """A named vector space: every vector stored under it was made by ``model`` and has
    ``dim`` dimensions. The text space "" is the memory's embedder's; a capability with
    vectors of its own (the agents' tiers) defines a space of its own, so that its vectors are
    never compared with another model's."""

    model: str
    dim: int


@dataclass(frozen=True, slots=True)
class StoreStats:
    records: int
    valid: int
    with_embedding: int
    by_kind: dict[str, int]
    oldest: float | None
    newest: float | None


@runtime_checkable
class EventStore(Protocol):
    """The change-event outbox and the webhooks that read it (``store/parts/events.py``; its part of
    the conformance suite: ``tests/store/test_events.py``). Every change the store
    makes writes its events in the change's own transaction; sequence numbers follow commit
    order."""

    def configure_events(self, *, enabled: bool, text: bool = False, touch: bool = False
                         ) -> None:
        """Whether changes write events, whether events carry the text, whether touches
        write ``touched`` events."""

    def append_events(self, namespace: str, type_: str, record_ids: Sequence[str], *,
                      agent_id: str | None = None, data: dict[str, Any] | None = None
                      ) -> None:
        """One event no record change carries (tier moves), in its own transaction."""

    def events_after(self, namespaces: Sequence[str] | None, after: int, *, limit: int = 100,
                     types: Sequence[str] = (), upto: int | None = None
                     ) -> list[ChangeEvent]:
        """Events of these namespaces (every one: None) numbered above ``after`` (at most
        ``upto``), oldest first, only ``types`` when given."""

    def last_event_seq(self) -> int:
        """The highest event number written (0: none)."""

    def prune_events(self, *, before: float, limit: int = 10_000) -> int:
        """Delete up to ``limit`` events written before ``before``, none a webhook has yet to
        deliver; how many went."""

    def put_webhook(self, hook: Webhook, *, cap: int | None = None) -> bool:
        """Store a new webhook; with ``cap``, only while its namespace holds fewer than
        ``cap`` (counted and inserted in one serialised transaction, so registrations at the
        same time never pass the cap together). False when the cap was reached."""

    def webhooks(self, namespace: str | None = None) -> list[Webhook]:
        """Every webhook (of one namespace), oldest first, with its dead-letter count."""

    def remove_webhook(self, namespace: str, hook_id: str) -> bool:
        """Remove a webhook of this namespace and its dead letters; whether it existed."""

    def claim_webhooks(self, owner: str, *, lease: float, now: float) -> list[Webhook]:
        """Take the webhooks due for a try that no other deliverer holds, for ``lease`` s."""

    def release_webhooks(self, stale: Callable[[str], bool]) -> int:
        """Free the webhooks whose owner ``stale(owner)`` calls gone; how many."""

    def webhook_progress(self, hook_id: str, owner: str, *, cursor: int, delivered: int = 0,
                         attempts: int = 0, next_at: float = 0.0, error: str | None = None,
                         dead: Sequence[int] = ()) -> bool:
        """Record a try (the holder of the lease only); False when the lease was lost."""

    def dead_letters(self, hook_id: str) -> list[tuple[int, float, str | None]]:
        """(event number, when given up, last error) of a webhook's dead letters."""

    def redeliver_dead(self, namespace: str, hook_id: str) -> int:
        """Queue a webhook's dead letters again; how many there were."""


@runtime_checkable
class EntityGraph(Protocol):
    """The named things the records mention and which records mention them
    (``store/parts/graph.py``; conformance: ``tests/store/test_graph_conformance.py``). The store
    keeps it in the records' own transactions: inserts link, text updates relink, deletes and
    erasures unlink and drop the entities left without a mention. An entity belongs to a
    namespace and an owner (the records' ``user_id``, ``""`` for none); ``owners=None`` reads
    every owner of the namespace."""

    def entities(self, namespace: str, owners: Sequence[str] | None = None, *,
                 query: str | None = None, record_ids: Sequence[str] | None = None,
                 limit: int = 50, confirmed: bool = True) -> list[Entity]:
        """Entities most mentioned first; ``query`` matches part of the name; ``record_ids``
        keeps those these records mention; ``confirmed=False`` lists weak ones too."""

    def find(self, namespace: str, owners: Sequence[str] | None, keys: Sequence[str]
             ) -> list[Entity]:
        """Entities (weak ones too) whose key is one of ``keys``, alone or followed by more
        words ("marta" finds "marta silva")."""

    def mentions(self, entity_ids: Sequence[int], *, limit: int = 50) -> dict[int, list[str]]:
        """Per entity, the ids of the records that mention it, newest first."""

    def record_entities(self, namespace: str, record_ids: Sequence[str]
                        ) -> dict[str, list[Entity]]:
        """Per record, the entities it mentions."""

    def related(self, entity_id: int, *, limit: int = 10, window: int = 200
                ) -> list[tuple[Entity, list[str]]]:
        """Confirmed entities sharing records with this one, most shared first, with the
        shared records' ids."""

    def size(self, namespace: str | None = None) -> tuple[int, int]:
        """(entities, mentions) stored."""

    def unread_kinds(self, limit: int = 64) -> list[tuple[int, str]]:
        """(id, name) of confirmed entities whose kind the words left open ("name" or
        "thing"), of any namespace, at most ``limit``."""

    def set_kinds(self, kinds: Sequence[tuple[int, str]]) -> int:
        """Set the kinds read for these entities where the kind is still open; how many were
        set."""

    def rows_page(self, after: int, limit: int
                  ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The graph as stored, for ``migrate``: up to ``limit`` entities with an id above
        ``after``, in id order (id first, then ``parts.graph.ENTITY_COLUMNS``), and their
        mentions (entity id first, then ``parts.graph.MENTION_COLUMNS``)."""

    def put_rows(self, entities: Sequence[Sequence[Any]], mentions: Sequence[Sequence[Any]]
                 ) -> None:
        """Store a page read by another store's ``rows_page`` as it is (the entities get ids
        of this store), in one transaction."""

    def relate(self, namespace: str, owner: str,
               triples: Sequence[tuple[str, str, str, str, float]]) -> int:
        """Keep relations (subject, predicate, object, record id, time); a newer one on the
        same subject and predicate ends the open one at its time. How many were added."""

    def relations(self, namespace: str, owners: Sequence[str] | None, subject_keys:
                  Sequence[str], *, as_of: float | None = None, limit: int = 100
                  ) -> list[Relation]:
        """The relations of these subjects (keys) valid at ``as_of`` (None: now)."""


@runtime_checkable
class RecordStore(Protocol):
    """Records and their history: write, read, select, change, forget (conformance:
    ``RecordsConformance``)."""

    def insert(self, records: Sequence[Record], *, event: str = "add",
               model: str | None = None, rate: Collection[str] = (),
               history: bool = True, ann: bool = True, refresh: bool = False,
               link: bool = True) -> dict[str, Record]:
        """Store new records atomically: all or none. Each gets a history entry ``event``.
        A record's ``embedding`` (if set) is stored with it as made by ``model``; records
        without one are queued for embedding, and those whose id is in ``rate`` for an
        importance rating. A duplicate id raises Conflict. Durable when the call returns.
        ``history=False`` writes no "add" history entry (bulk data such as agent states; their
        later updates and deletes are still recorded). ``ann=False``: these vectors are only
        ever compared exactly within a small selection, so no approximate index needs to be
        made for their dimension (PostgreSQL keeps one HNSW index per dimension, and every
        insert into it costs far more than the row). ``link=False`` leaves them out of the
        entity graph (``migrate``, which copies the source's graph as it is).

        ``refresh=True``: a record that repeats a valid stored memory (``parts.common.memory_key``:
        same scope, kind, text, data and metadata, no step), or one given earlier in the same
        call, is not inserted; the memory it repeats is refreshed instead (last access, access
        count, a "refresh" history entry), in the same transaction. Returns, for each repeat's
        id, the refreshed record (``event="refresh"``); an empty dict otherwise."""

    def get(self, namespace: str, ids: Sequence[str]) -> list[Record]:
        """The records with these ids in this namespace, in the order of ``ids``; unknown ids are
        left out. Invalidated records are returned too. Embeddings are not loaded."""

    def texts(self, namespace: str, ids: Sequence[str]) -> dict[str, str]:
        """The texts of these records (unknown ids are left out): what ranking reads of its
        candidates, without parsing whole records."""

    def taken(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids a record holds in any namespace (ids are unique in a store).
        Only for the engine's own checks: never to be shown to a caller of one namespace."""

    def signals(self, namespace: str, ids: Sequence[str]) -> list[Signals]:
        """The scoring fields of these records, in the order of ``ids``; unknown ids are left
        out. Cheaper than ``get`` for the many candidates of a search."""

    def select(self, sel: Selection, *, limit: int | None = None, offset: int = 0,
             order: str = "created") -> list[Record]:
        """Records matching a selection. ``order``: "created" (oldest first, then id), "-created"
        (newest first), "step" (step ascending, then created)."""

    def select_ids(self, sel: Selection, *, limit: int | None = None, offset: int = 0,
                   order: str = "created") -> list[str]:
        """The ids ``select`` would give, without reading the records."""

    def count(self, sel: Selection, *, limit: int | None = None) -> int:
        """How many records match a selection; with ``limit``, counting stops after
        ``limit + 1`` (enough to tell "more than limit")."""

    def update(self, namespace: str, record_id: str, patch: Patch, *, at: float) -> Record:
        """Apply a patch, record the old and new values in history, set ``updated_at``; a text
        change clears the embedding (it is recomputed). Raises NotFound."""

    def delete(self, namespace: str, ids: Sequence[str], *, at: float) -> int:
        """Remove records from every index and return how many existed. Their history stays,
        with a delete entry. Idempotent."""

    def erase(self, namespace: str, ids: Sequence[str], *, at: float,
              cache_keys: Sequence[str] = ()) -> int:
        """``delete`` that keeps nothing of the records' content: their rows, vectors and
        history entries are removed (one ``erase`` entry per id is left: the id and the time),
        the embedding cache entries of ``cache_keys`` too, and the space they held is cleared
        as the backend allows (SQLite: zeroed pages, a merged keyword index and a truncated
        log; PostgreSQL: VACUUM). Returns how many ids had a record or a history entry
        (each gets the ``erase`` entry). Idempotent."""

    def history_ids(self, namespace: str, scope: Mapping[str, str]) -> list[str]:
        """Ids whose history names this scope (``{"user_id": ...}``, ``agent_id``, ``run_id``),
        deleted records included: what erasing a whole user must reach."""

    def touch(self, namespace: str, ids: Sequence[str], *, at: float) -> None:
        """Set last access to ``at`` (never moving it backwards) and add one access."""

    def history(self, namespace: str, record_id: str) -> list[HistoryEntry]:
        """Every change to a record, oldest first (also after the record was deleted)."""


@runtime_checkable
class SearchIndexes(Protocol):
    """The keyword and vector indexes and the stream order (conformance:
    ``IndexesConformance``). Scores are raw, higher is better: ranking policy (which terms
    count, their idf) is ``retrieval.keywords``'s. Vectors are kept and searched per vector
    space (``Record.space``, ``Selection.space``): a search compares a query only with the
    vectors of its selection's space."""

    def define_space(self, name: str, model: str, dim: int) -> VectorSpace:
        """Name a vector space for vectors of ``model`` with ``dim`` dimensions; defining it
        again with the same model and size is a no-op, with another raises Conflict."""

    def spaces(self) -> dict[str, VectorSpace]:
        """The named vector spaces defined in this store."""

    def term_stats(self, sel: Selection, terms: Sequence[str], *, selection_up_to: int,
                   cap: Callable[[int], int]) -> TermStats:
        """What keyword ranking (``retrieval.keywords``) needs to weigh ``terms`` (plain words,
        stemmed as the index stems): how many records the statistics describe and how many of
        them hold each term, counted up to ``cap(records) + 1``. They describe the selection
        when it holds at most ``selection_up_to`` records, else its whole namespace
        (invalidated records included: the index holds them too). Counts may be reused until
        this process writes, large ones for up to a minute."""

    def keyword_scores(self, sel: Selection, weighted: Sequence[tuple[str, float]], limit: int
                       ) -> list[tuple[str, float]]:
        """(id, score) of the records the selection admits that hold any of the terms, best
        first, ties broken by insertion order. A record's score is the sum, over the terms it
        holds, of the term's weight times how strongly the record holds it (the backend's own
        term frequency and length part of BM25, without its idf: the weight is the idf).
        No terms: []."""

    def vector_search(self, sel: Selection, vector: np.ndarray, limit: int
                      ) -> list[tuple[str, float]]:
        """(id, cosine) of the records with embeddings nearest to a unit vector, best first,
        ties broken by insertion order."""

    def neighbours(self, sel: Selection, ids: Sequence[str], *, before: int, after: int
                   ) -> dict[str, tuple[list[str], list[str]]]:
        """For each id, the ids of the ``before`` records just before it (nearest first) and
        the ``after`` records just after it, in creation order among the records the
        selection admits (its stream neighbours, such as the turns around a turn)."""

    def selection_vectors(self, sel: Selection) -> tuple[list[str], np.ndarray]:
        """(ids, matrix) of the embeddings of every record a selection matches (for small
        selections, such as one agent's records)."""

    def embeddings(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored embeddings of these records (records without one are left out)."""

    def set_embeddings(self, namespace: str, items: Sequence[tuple[str, np.ndarray]],
                       model: str) -> None:
        """Store embeddings for existing records (unknown ids are skipped)."""


@runtime_checkable
class WorkQueues(Protocol):
    """Background work the engine hands to its workers: importance ratings and embeddings
    (conformance: ``QueuesConformance``)."""

    def pending_ratings(self, limit: int) -> list[tuple[str, str, str, str]]:
        """(namespace, id, text, kind) of records queued for an importance rating."""

    def set_rating(self, namespace: str, record_id: str, importance: float | None, *,
                   at: float) -> None:
        """Take a record off the rating queue, setting its importance (with a history entry)
        unless ``importance`` is None. A record deleted meanwhile is skipped."""

    def pending_embeddings(self, limit: int, *, owner: str | None = None,
                           lease: float = 60.0) -> list[tuple[str, str, str]]:
        """(namespace, id, text) of records that still need an embedding, oldest first.
        With ``owner`` (a worker's token) the records returned are claimed for it for
        ``lease`` seconds: other owners skip them until they are embedded or the lease runs
        out (a crashed worker's claims lapse), so several processes never embed the same
        record twice. Without ``owner``: every pending record, claimed or not."""

    def clear_embeddings(self) -> int:
        """Queue every record of the text space ("") for a new embedding (after a change of
        embedder); the vectors of named spaces stay."""


@runtime_checkable
class KeyValue(Protocol):
    """Values kept with the data: settings (meta) and the embedding cache (conformance:
    ``KeyValueConformance``)."""

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Embedding cache lookup by content hash."""

    def cache_vectors(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Embedding cache insert (idempotent)."""

    def meta_items(self) -> dict[str, str]:
        """Every saved value but the schema version."""

    def get_meta(self, key: str) -> str | None:
        """A value saved with the data (schema version, resolved config)."""

    def set_meta(self, key: str, value: str) -> None: ...

    def update_meta(self, keys: Sequence[str],
                    change: Callable[[dict[str, str | None]], Mapping[str, str]]) -> None:
        """Read, change and write some values in one transaction, locked meanwhile: no other
        writer (of any process) changes them between the read and the write. ``change`` gets
        each key's stored value (None: none) and returns the values to write."""


@runtime_checkable
class Transfer(Protocol):
    """Paging through a whole store, to copy it into another (``memstream.engine.migrate``;
    conformance: ``TransferConformance``)."""

    def records_page(self, namespace: str, after: str | None, limit: int
                     ) -> list[tuple[Record, str | None]]:
        """Up to ``limit`` records of a namespace with ids greater than ``after`` (all when
        None), in id order, invalidated ones too, each with its embedding loaded and the model
        that made it (None when it has none). For copying a whole store."""

    def history_page(self, after: int, limit: int) -> list[tuple[int, HistoryEntry]]:
        """Up to ``limit`` history entries of every namespace (deleted records' too) after
        position ``after`` (0: from the start), as (position, entry), oldest first."""

    def put_history(self, entries: Sequence[HistoryEntry]) -> None:
        """Append history entries as they are (a copy from another store), atomically."""

    def outbox_rows(self, table: str, offset: int, limit: int) -> list[tuple[Any, ...]]:
        """Rows of one of ``OUTBOX_TABLES`` (events, webhooks, dead letters) in their order,
        as stored: events keep their numbers, webhooks their cursors and secrets."""

    def put_outbox_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        """Store rows another store's ``outbox_rows`` gave, atomically; events numbered
        later follow the copied ones."""

    def outbox_count(self, table: str) -> int:
        """How many rows one of ``OUTBOX_TABLES`` holds."""

    def wipe(self) -> None:
        """Every row of every table gone, API keys and webhooks too: only ``migrate`` calls
        this, on the target of a migrate that did not finish, before it starts again."""


@runtime_checkable
class Store(Protocol):
    """A durable home for records, their history, a keyword index and a vector index: a
    bundle of the parts above, each over the same database, and what concerns the whole
    store. A consumer takes the part it uses (``store.records``, ``store.indexes``, ...)."""

    url: str

    @property
    def records(self) -> RecordStore: ...

    @property
    def indexes(self) -> SearchIndexes: ...

    @property
    def queues(self) -> WorkQueues: ...

    @property
    def kv(self) -> KeyValue: ...

    @property
    def transfer(self) -> Transfer: ...

    @property
    def events(self) -> EventStore: ...

    @property
    def graph(self) -> EntityGraph: ...

    def stats(self, namespace: str) -> StoreStats:
        """Counts for one namespace."""

    def namespaces(self) -> list[str]:
        """Every namespace with at least one record, sorted."""

    def reset(self) -> None:
        """Erase everything: records, history, caches. Only ``Memory.reset`` calls this."""

    def close(self) -> None:
        """Release connections. Idempotent."""


@runtime_checkable
class KeyStore(Protocol):
    """API keys. Not part of ``Store``: only the server (``server/auth.py``) and a copy of a
    whole store use them, through ``keys_of`` (conformance: ``KeysConformance``)."""

    def put_key(self, key: ApiKey) -> None:
        """Store an API key record (its secret only as a hash). A duplicate id raises Conflict."""

    def get_key(self, key_id: str) -> ApiKey | None:
        """The key record with that id (revoked ones too), or None."""

    def list_keys(self) -> list[ApiKey]:
        """Every key record, oldest first."""

    def revoke_key(self, key_id: str, *, at: float) -> bool:
        """Mark a key revoked; False when there is no such key."""


def keys_of(store: object) -> KeyStore:
    """The API-key table of a store's backend (its ``keys``); ``BackendUnavailable`` when it
    keeps none."""
    keys = getattr(store, "keys", None)
    if not isinstance(keys, KeyStore):
        raise BackendUnavailable(f"{type(store).__name__} keeps no API keys: serve from a "
                                 "SQLite or PostgreSQL store")
    return keys
