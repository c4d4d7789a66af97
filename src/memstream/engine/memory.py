"""The engine facade ``Memory``: one store, one embedder, one clock, the background worker.

Every public verb (add, search, get, update, delete, history, context, ...) validates its input
first, so a bad call changes nothing. ``AsyncMemory`` (memory_async.py) awaits the same methods.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Unpack, overload

from .._types import (
    Context,
    Entity,
    EntityProfile,
    Finding,
    HistoryEntry,
    Hit,
    MemoryChange,
    Record,
)
from ..config import CONTEXT_MIN_RELEVANCE, Config, ResolvedConfig
from ..core import tracing
from ..core import validate as v
from ..core.aliases import renamed
from ..core.clock import Clock, TimeLike, WallClock, to_timestamp
from ..core.tokens import Tokenizer
from ..embed import Embedder, configured_embedder
from ..errors import Conflict, InvalidInput, NotFound
from ..filters import Selection
from ..llm import ChatClient, chat_client_from_config
from ..retrieval.packing import pack
from ..retrieval.pipeline import SearchParams
from ..retrieval.scoring import Weights, resolve_weights
from ..scope import (
    AddArgs,
    Query,
    Scope,
    SearchArgs,
    SelectArgs,
    resolve,
    selection,
    split,
)
from ..store import Store, open_store
from . import changes
from . import cognitive as cog
from .deletions import Deletions
from .entities import entity_list, entity_profile
from .migrate import refuse_unfinished
from .progress import ProgressFn
from .queries import QueryVectors, Soon, readings
from .search import run_search
from .shared import Shared
from .subscribers import ChangeEvents
from .worker import EnrichmentWorker
from .writes import Writes

__all__ = ["Context", "Memory"]

log = logging.getLogger("memstream")

WeightsLike = str | Weights | Mapping[str, float] | Sequence[float] | None
Messages = Sequence[Mapping[str, str]]
_AUTO: Any = object()


class Memory(ChangeEvents):
    """A memory stream in one store.

    >>> mem = Memory(":memory:", embedder="none")
    >>> rec = mem.add("Alice prefers green tea", user_id="alice")
    >>> [h.record.text for h in mem.search("what tea does alice like", user_id="alice")]
    ['Alice prefers green tea']
    >>> mem.close()
    """

    def __init__(self, url: str | Path | None = None, *,
                 embedder: str | Embedder | None = None, config: Config | None = None,
                 clock: Clock | None = None, llm: ChatClient | None = _AUTO) -> None:
        self.config: ResolvedConfig = (config or Config()).resolve()
        self.clock: Clock = clock or WallClock()
        self.store: Store = open_store(url, busy_timeout=self.config.busy_timeout,
                                       synchronous=self.config.synchronous,
                                       ann_threshold=self.config.ann_threshold)
        if self.config.tracing:  # spans around the store's and the embedder's calls
            tracing.enable()
            self.store = tracing.wrap(self.store, "memstream.store")
        try:
            refuse_unfinished(self.store)
            self.embedder = configured_embedder(embedder, self.config)
            if self.config.tracing and self.embedder is not None:
                self.embedder = tracing.wrap(self.embedder, "memstream.embed")
            self._check_embedder()
        except BaseException:
            self.store.close()
            raise
        #: the query's vector and the background sentences' (engine.queries)
        self.vectors = QueryVectors(self.embedder, self.store.kv)
        self.llm: ChatClient | None = chat_client_from_config(self.config) if llm is _AUTO \
            else llm
        self.capabilities = Shared()  # one tiered memory, learner, ... per scope (_shared.py)
        background = self.embedder if self.config.embed_mode == "background" else None
        self._worker: EnrichmentWorker | None = None
        #: every write goes through here (``engine.writes``)
        self.writes = Writes(self, lambda: self._worker)
        if background is not None or self.llm is not None:
            self._worker = EnrichmentWorker(
                self.store.queues, self.store.indexes, self.store.kv, background,
                rater=self._rate if self.llm else None, after=self._after_enrichment,
                clock=self.clock.now)
        #: every delete and erasure goes through here, then to the listeners (``on_delete``)
        self.deletions = Deletions(self.store.records, self.store.kv, embedding=self._worker)
        self.deletions.listen(self._forget_findings)  # what audit found about them goes too
        self.store.events.configure_events(enabled=self.config.events, text=self.config.events_text,
                                           touch=self.config.events_touch)
        self._closed = False

    # --- setup -------------------------------------------------------------------------------

    def _check_embedder(self) -> None:
        """Vectors of two models are never mixed: the store remembers which model made its.
        The resolved configuration is saved beside the data."""
        if self.embedder is not None:
            saved = self.store.kv.get_meta("embedder")
            current = json.dumps({"name": self.embedder.name, "dim": self.embedder.dim})
            if saved is None:
                self.store.kv.set_meta("embedder", current)
            elif saved != current:
                raise Conflict(
                    f"this store's vectors were made by {json.loads(saved)['name']}, not by "
                    f"{self.embedder.name}; open it with that embedder, or call reindex() "
                    "(memstream reindex) to embed everything again with the new one"
                )
        self.store.kv.set_meta("config", json.dumps(self.config.public(), sort_keys=True))

    def reindex(self) -> int:
        """Embed every record again with the current embedder (after changing models)."""
        if self.embedder is None:
            raise InvalidInput("reindex needs an embedder; this Memory has none")
        count = self.store.queues.clear_embeddings()
        self.store.kv.set_meta("embedder", json.dumps({"name": self.embedder.name,
                                                       "dim": self.embedder.dim}))
        self.writes.kick()
        return count

    # --- helpers -----------------------------------------------------------------------------

    def _ns(self, namespace: str | None) -> str:
        return self.config.namespace_of(namespace)

    def _now(self, now: TimeLike | None) -> float:
        return self.clock.now() if now is None else to_timestamp(now)

    def _rate(self, text: str, kind: str) -> float:
        return cog.rate(self, text, kind)

    def _after_enrichment(self) -> None:
        self.writes.after_enrichment(self._worker)

    def _forget_findings(self, namespace: str, ids: list[str]) -> None:
        changes.forget(self, namespace, ids)

    def _owners(self, user_id: str | None) -> list[str] | None:
        return None if user_id is None else [v.scope_id(user_id, "user_id") or ""]

    def _selection(self, scope: Scope, query: Query, *, ranked: bool = False) -> Selection:
        return selection(scope, query, default_namespace=self.config.namespace, ranked=ranked)

    def write_records(self, records: list[Record], *, event: str = "add",
                      rate: Sequence[str] = (), refresh: bool = False) -> list[Record]:
        """Store records already built and validated (``add`` builds its own; an import reads
        them from a file: ``transfer.import_jsonl``) in one transaction, embedding them first
        in sync mode; ``event`` names their change events; ``rate`` names those whose
        importance the LLM should rate in the background. With ``refresh`` a repeat of a stored
        memory refreshes it instead (Store.insert). Returns what each record became, in
        order."""
        return self.writes.records(records, event=event, rate=rate, refresh=refresh)

    # --- writes ------------------------------------------------------------------------------

    @overload
    def add(self, text: str | bytes, **args: Unpack[AddArgs]) -> Record: ...

    @overload
    def add(self, text: Messages, **args: Unpack[AddArgs]) -> list[MemoryChange]: ...

    @tracing.traced("memstream.add")
    @renamed(content="text")
    def add(self, text: str | bytes | Messages, **args: Unpack[AddArgs]
            ) -> Record | list[MemoryChange]:
        """Store one memory (``text``; old name ``content``); durable and keyword-searchable
        when this returns.

        ``importance`` defaults to the offline heuristic (cognition.importance), replaced in
        the background by the LLM's rating when one is configured; ``at`` to the clock's now
        (or the step's time on a SimulationClock); ``embedding`` to the embedder's vector,
        computed in the background unless embed_mode is "sync".

        Adding a memory that is already stored (same namespace, user, agent and run, kind,
        text, data and metadata; a record without a step) makes no second record by default:
        the stored one is refreshed (its last access moves to ``at``, its access count grows
        and its history gets a "refresh" entry) and returned with ``event="refresh"``; a new
        record comes back with ``event="add"``. ``Config(duplicates="keep")`` turns this off,
        ``duplicates="keep"`` for one call (a capability recording events that may repeat).

        Given a list of chat messages (``[{"role": "user", "content": "..."}]``) with
        ``infer=True``, the LLM extracts facts and reconciles them with what is stored (add,
        update, supersede or no-op; see cognition.extraction) and a list of MemoryChange is
        returned; without an LLM the messages are stored as they are.

        ``scope`` (a ``Scope``) may stand for namespace, user_id, agent_id and run_id. The
        keywords are ``scope.AddArgs``: a new memory's fields (``RecordArgs``), ``scope``,
        ``infer`` and ``duplicates``.
        """
        return self.writes.add(text, args)

    @tracing.traced("memstream.add_many")
    def add_many(self, items: Iterable[str | Mapping[str, Any]], *,
                 namespace: str | None = None, duplicates: str | None = None,
                 scope: Scope | None = None) -> list[Record]:
        """Store many memories in one transaction: all or none. Each item is a text or a dict of
        ``add``'s arguments (``text`` plus any keyword). A repeat of a stored memory, or of
        an earlier item, refreshes it as in ``add``. ``namespace`` or ``scope`` give the
        scope of items that name none of their own."""
        return self.writes.many(items, resolve(Scope, scope, namespace=namespace), duplicates)

    @renamed(record_id="memory_id")
    def update(self, memory_id: str, *, text: str | None = None,
               data: Mapping[str, Any] | None = None, importance: float | None = None,
               metadata: Mapping[str, Any] | None = None,
               provenance: Sequence[str] | None = None, namespace: str | None = None,
               at: TimeLike | None = None) -> Record:
        """Change a record; the old values go to its history. A new text is embedded again."""
        return self.writes.update(self._ns(namespace), memory_id, {
            "text": text, "data": data, "importance": importance, "metadata": metadata,
            "provenance": provenance}, at)

    @renamed(record_id="memory_id")
    def invalidate(self, memory_id: str, *, superseded_by: str | None = None,
                   namespace: str | None = None, at: TimeLike | None = None) -> Record:
        """Mark a record as no longer valid (it stays in history and in as-of reads), replaced
        by ``superseded_by`` when named (a tentative change ``audit`` lists is then applied)."""
        return changes.invalidate(self, self._ns(namespace), memory_id, superseded_by,
                                  at=self._now(at))

    def restore(self, memory_id: str, *, namespace: str | None = None,
                at: TimeLike | None = None) -> Record:
        """Undo what was decided about a memory: valid again when it was superseded or
        invalidated, and no longer ranked as junk or a duplicate (``audit``). In history and
        events ("restored"); what the comparison found stays listed, and is never applied
        again."""
        return changes.restore(self, self._ns(namespace), memory_id, at=self._now(at))

    def audit(self, *, namespace: str | None = None, user_id: str | None = None,
              agent_id: str | None = None, kinds: str | Iterable[str] | None = None,
              limit: int = 100) -> list[Finding]:
        """What the comparison of new memories with older ones found (docs/retrieval.md, "How
        memstream knows what is current"): changed facts ("superseded"), restatements
        ("duplicate") and junk, most confident first; undo one with ``restore``. A tentative
        change (``Finding.tentative``) links nothing: link it with ``invalidate``. Memories of
        the namespace not yet embedded and compared are waited for first
        (``engine.changes.AUDIT_WAIT``)."""
        wanted = None if kinds is None else ([kinds] if isinstance(kinds, str) else list(kinds))
        if not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise InvalidInput("limit must be a whole number from 1 to 10000")
        return changes.audit(self, self._ns(namespace), user_id=v.scope_id(user_id, "user_id"),
                             agent_id=v.scope_id(agent_id, "agent_id"), kinds=wanted,
                             limit=limit)

    @renamed(record_id="memory_id")
    def delete(self, memory_id: str, *, namespace: str | None = None,
               at: TimeLike | None = None, erase: bool = False) -> None:
        """Remove a record from every index. Raises NotFound when there is no such record.

        The record's history stays (with a delete entry) unless ``erase``: then its text,
        payload, vector and history are removed from every store, index and cache, leaving
        only an ``erase`` entry with the id and the time (see docs/server.md, "Erasure").
        A record deleted earlier can be erased later."""
        ns = self._ns(namespace)
        if not self.deletions.remove(ns, [memory_id], at=self._now(at), erase=erase):
            raise NotFound(f"no record {memory_id!r} in namespace {ns!r}")

    def delete_all(self, *, namespace: str | None = None, user_id: str | None = None,
                   agent_id: str | None = None, run_id: str | None = None,
                   kinds: str | Iterable[str] | None = None,
                   filters: Mapping[str, Any] | None = None, erase: bool = False,
                   scope: Scope | None = None, query: Query | None = None) -> int:
        """Delete every record the arguments (or ``scope`` and ``query``) select in one
        namespace, invalidated ones and those of every vector space (the agents' states)
        included; returns the count. With ``erase`` (see
        ``delete``) and no narrower query than the scope, the history of records of that user,
        agent or run deleted earlier is erased too."""
        whose, which = split(scope, query, namespace=namespace, user_id=user_id,
                             agent_id=agent_id, run_id=run_id, kinds=kinds, filters=filters)
        # every vector space: erasing an agent's data takes its tier records too
        sel = dataclasses.replace(
            self._selection(whose, dataclasses.replace(which, include_invalid=True)), space=None)
        return self.deletions.remove_selected(sel, at=self.clock.now(), erase=erase,
                                              whole_scope=which == Query())

    def on_delete(self, listener: Callable[[str, list[str]], None]) -> None:
        """Call ``listener(namespace, ids)`` after records are deleted or erased through this
        Memory, so that caches over it (the agents' tiers) drop them. A listener that raises
        is logged; the delete stands. A bound method is held weakly (its object may go)."""
        self.deletions.listen(listener)

    def reset(self) -> None:
        """Erase every namespace, record, history entry and cached vector in this store."""
        self.store.reset()
        self.vectors.clear()
        if self.embedder is not None:
            self.store.kv.set_meta("embedder", json.dumps({"name": self.embedder.name,
                                                           "dim": self.embedder.dim}))

    # --- reads -------------------------------------------------------------------------------

    @renamed(record_id="memory_id")
    def get(self, memory_id: str, *, namespace: str | None = None) -> Record:
        """One record by id (also when invalidated). Raises NotFound."""
        ns = self._ns(namespace)
        found = self.store.records.get(ns, [memory_id])
        if not found:
            raise NotFound(f"no record {memory_id!r} in namespace {ns!r}")
        return found[0]

    def get_all(self, *, limit: int | None = 100, offset: int = 0, order: str = "created",
                scope: Scope | None = None, query: Query | None = None,
                **where: Unpack[SelectArgs]) -> list[Record]:
        """Records matching the arguments (or ``scope`` and ``query``), oldest first
        (``order``: created, -created, step, -step). ``as_of``: the records that were valid at
        that time, even if invalidated since."""
        sel = self._selection(*split(scope, query, **where))
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise InvalidInput("limit must be a whole number >= 0 or None")
        return self.store.records.select(sel, limit=limit, offset=offset, order=order)

    def count(self, *, scope: Scope | None = None, query: Query | None = None,
              **where: Unpack[SelectArgs]) -> int:
        """How many records ``get_all`` with the same arguments would see without a limit."""
        return self.store.records.count(self._selection(*split(scope, query, **where)))

    @renamed(record_id="memory_id")
    def history(self, memory_id: str, *, namespace: str | None = None) -> list[HistoryEntry]:
        """Every change to a record, oldest first, also after it was deleted."""
        entries = self.store.records.history(self._ns(namespace), memory_id)
        if not entries:
            raise NotFound(f"no history for {memory_id!r}; check the id and the namespace")
        return entries

    @tracing.traced("memstream.search")
    def search(self, query: str | Query, *, k: int = 10, now: TimeLike | None = None,
               weights: WeightsLike = None, touch: bool = True, vector: Any = None,
               fusion: str | None = None, min_relevance: float | None = None,
               scope: Scope | None = None, **where: Unpack[SearchArgs]) -> list[Hit]:
        """The ``k`` memories that best fit the query, best first.

        Score = weighted sum of min-max normalised recency (decay ** hours since last access),
        importance and relevance (vector and keyword search fused). ``weights`` is a profile
        name ("balanced", "recall", "recent"), a dict or a triple. Each hit explains its score.
        Unless ``touch=False``, the returned records' last access becomes ``now``.
        ``as_of`` searches what was valid at that time (superseded memories included).
        ``query`` may be a ``Query`` (its text and which memories qualify), ``scope`` a
        ``Scope``, in place of the keyword arguments of the same names. ``min_relevance`` (0 to
        1) leaves out the hits whose relevance (``explain.relevance``) is below it: with the
        default profile a calibrated chance that the memory answers, so a search where nothing
        answers can come back empty.
        """
        floor = v.fraction(min_relevance, "min_relevance") if min_relevance is not None else None
        whose, which = split(scope, query if isinstance(query, Query) else Query(text=query),
                             **where)
        if which.text is None:
            raise InvalidInput("a search needs the text to look for: search(\"...\") or "
                               "search(Query(\"...\", ...))")
        text = v.text(which.text, max_bytes=self.config.max_text_bytes, field="query")
        sel = self._selection(whose, which, ranked=True)
        params = SearchParams.of(self.config, k=k,
                                 weights=resolve_weights(weights, self.config.weights),
                                 fusion=fusion or self.config.fusion)
        when = self._now(now)
        if self._worker is not None:  # records still waiting for vectors, when few (worker.py)
            self._worker.catch_up(sel.namespace)
        qvec: Soon
        plain: Soon = None
        if vector is not None:
            qvec = v.vector(vector, self.embedder.dim if self.embedder else None, "vector")
        elif self.config.entities and self.embedder is not None:
            qvec, plain = readings(self.vectors, self.store, sel, text)
        else:
            qvec = self.vectors.soon(text)
        hits = run_search(self.store, sel, text, qvec, when, params, plain_vector=plain,
                          background=self.vectors.background(), past=self.vectors.past(),
                          verdicts=changes.verdicts(self, sel.namespace))
        if floor is not None:
            hits = [h for h in hits if h.explain.relevance >= floor]
        if touch and hits:
            self.store.records.touch(sel.namespace, [h.record.id for h in hits], at=when)
        return hits

    def context(self, /, query: str | Query, *, budget: int = 512, k: int = 50,
                tokenizer: Tokenizer | None = None,
                render: Callable[[Record], str] | None = None,
                min_relevance: float | None = CONTEXT_MIN_RELEVANCE,
                **search_args: Any) -> Context:
        """The best memories for a query that fit in ``budget`` tokens, rendered one per line.
        Tokens are counted with a real tokenizer (cl100k_base by default) on the joined text.
        Memories below ``min_relevance`` are left out (by default ``CONTEXT_MIN_RELEVANCE``:
        a prompt is not padded with unrelated memories; None or 0 keeps every hit), and so are
        junk and duplicates the worker found (``audit``)."""
        touch = search_args.pop("touch", True)
        hits = self.search(query, k=k, touch=False, min_relevance=min_relevance or None,
                           **search_args)
        if hits:  # junk and restatements found by the worker are never worth a prompt's tokens
            demoted = changes.verdicts(self, hits[0].record.namespace).demoted
            hits = [h for h in hits if h.record.id not in demoted]
        kwargs: dict[str, Any] = {"tokenizer": tokenizer}
        if render is not None:
            kwargs["render"] = render
        kept, text, tokens = pack(hits, budget, **kwargs)
        if touch and kept:
            self.store.records.touch(kept[0].record.namespace, [h.record.id for h in kept],
                                     at=self._now(search_args.get("now")))
        return Context(text=text, hits=kept, tokens=tokens)

    # --- cognition -----------------------------------------------------------------------------

    def entities(self, query: str | None = None, *, namespace: str | None = None,
                 user_id: str | None = None, agent_id: str | None = None,
                 run_id: str | None = None, limit: int = 50) -> list[Entity]:
        """The named things a scope's memories mention (people, places, organisations, ...),
        most mentioned first; ``query`` matches part of a name (docs/entities.md)."""
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput("limit must be a whole number from 1 to 1000")
        sel = None if agent_id is None and run_id is None else self._selection(*split(
            None, None, namespace=namespace, user_id=user_id, agent_id=agent_id, run_id=run_id))
        return entity_list(self.store, self._ns(namespace), sel, query=query, limit=limit,
                           owners=self._owners(user_id))

    def entity(self, name: str, *, namespace: str | None = None, user_id: str | None = None,
               limit: int = 20, as_of: TimeLike | None = None) -> EntityProfile:
        """One entity: its kind, aliases, the memories that mention it (newest first), the
        entities it shares memories with and the relations an LLM read (valid now, or
        ``as_of``). Raises NotFound when no memory mentions it."""
        if not isinstance(name, str) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput("name must be a string and limit a whole number from 1 to 1000")
        return entity_profile(self.store, self._ns(namespace), name, limit=limit,
                              owners=self._owners(user_id),
                              as_of=None if as_of is None else to_timestamp(as_of))

    def reflect(self, *, namespace: str | None = None, agent_id: str | None = None,
                user_id: str | None = None) -> list[Record]:
        """Synthesise reflection records (insights citing their evidence) from the most recent
        memories now. Runs by itself once the importance added since the last reflection
        passes ``reflection_threshold``."""
        return cog.reflect(self, namespace=namespace, agent_id=agent_id, user_id=user_id)

    def consolidate(self, *, namespace: str | None = None, threshold: float | None = None,
                    progress: ProgressFn | None = None) -> list[MemoryChange]:
        """Merge near-duplicate memories into one each, keeping provenance. ``progress``
        hears ("merge", groups merged, groups found): see memstream.engine.progress."""
        return cog.consolidate(self, namespace=namespace, threshold=threshold,
                               progress=progress)

    def stats(self, *, namespace: str | None = None) -> dict[str, Any]:
        """Counts for a namespace: records, valid, embedded, by kind, time span."""
        s = self.store.stats(self._ns(namespace))
        return {"namespace": self._ns(namespace), "records": s.records, "valid": s.valid,
                "embedded": s.with_embedding, "by_kind": s.by_kind, "oldest": s.oldest,
                "newest": s.newest, "embedder": self.embedder.name if self.embedder else None}

    def namespaces(self) -> list[str]:
        return self.store.namespaces()

    # --- lifecycle ---------------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Wait until background work (embedding) is done."""
        if self._worker is not None:
            self._worker.flush(timeout)

    def close(self) -> None:
        """Stop the worker (pending work resumes on the next open) and close the store."""
        if self._closed:
            return
        self._closed = True
        self.capabilities.close()
        if self._worker is not None:
            self._worker.close()
        self.vectors.close()
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
