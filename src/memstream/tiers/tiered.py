"""``TieredMemory``: short-term, intermediate and long-term memory for agents in simulations.

Every state, action and interaction is written durably first: one record of the store (kind
state / action / interaction, the agent id, the step, the contents as payload, the priority
as importance, the long-term vector as embedding) in the memory's namespace, under the vector
space ``agents`` (``SPACE``), so that field-hashed vectors are never compared with text
embeddings and the memory's own verbs (search, get_all) do not list them. The tiers are views at
different resolutions and costs:

* STM (Redis when ``redis_url`` is set, else this process): the full entry, ``stm_limit``
  entries per agent, ``stm_ttl`` seconds;
* IM (same place): the compressed entry, ``im_limit`` per agent, ``im_ttl``;
* LTM: the durable records, whole history, read in their long-term (abstract) form.

Maintenance runs for an agent after every ``cleanup_interval`` of its insertions, and on demand
for one agent or all: per agent, entries past
the STM capacity or older than ``stm_max_age`` steps move to IM (compressed), choosing the
lowest effective priority (priority × decay^(age in steps / cleanup_interval)) among the oldest
candidates; IM entries past its capacity or ``im_max_age`` leave the caches (they stay in
LTM). An entry read from IM or LTM ``promote_after`` times is restored in full to STM.
Results from several tiers are merged in order with a heap merge of sorted lists, each record
once, in its most detailed form. When Redis fails, writes still reach the durable store and
queries use it, with a warning.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._types import Record
from ..core import validate as v
from ..core.aliases import renamed
from ..core.ids import new_ids
from ..engine.records import records_of
from ..errors import BackendUnavailable, InvalidInput
from ..filters import Selection, parse_filter
from ..retrieval.keywords import query_terms
from . import nearest, upkeep
from .backends import InProcessTier, RedisTier, TierBackend
from .entries import of_record, shown
from .features import DIM, state_vector
from .vectors import StateBatch, plain_leaves
from .vectors import pack as _pack
from .vectors import pack_rows as _pack_rows

if TYPE_CHECKING:
    from ..engine.memory import Memory

__all__ = ["MEMORY_TYPES", "TierConfig", "TierDegradedWarning", "TieredMemory"]

log = logging.getLogger("memstream.tiers")
MEMORY_TYPES = ("state", "action", "interaction")
MODEL = f"memstream-state-hash-{DIM}"
#: the vector space of the agents' records (``Record.space``)
SPACE = "agents"


#: a batch of at least this many entries is copied to a Redis STM in the background
_BACKGROUND = 256
#: promotion counts kept (per entry read from IM or LTM); past this, the least recently read go
_READS_KEPT = 100_000


class TierDegradedWarning(UserWarning):
    """A tier backend (Redis) failed: the durable store serves instead."""


@dataclass(frozen=True)
class TierConfig:
    stm_limit: int = 1000
    im_limit: int = 10000
    stm_ttl: float | None = 3600.0
    im_ttl: float | None = None
    stm_max_age: int = 1000
    im_max_age: int = 10000
    cleanup_interval: int = 100
    priority_decay: float = 0.95
    promote_after: int = 3
    #: while Redis is failing, seconds between attempts to reach it again
    retry_interval: float = 30.0


#: a tier's candidate in a similarity search: ((distance or -cosine, -step, -time), memory id,
#: the entry as returned)
_Chosen = tuple[tuple[float, float, float], str, dict[str, Any]]


class TieredMemory:
    """Agent memory in three tiers over one ``Memory`` (see the module docstring)."""

    def __init__(self, memory: Memory, *, redis_url: str | None = None,
                 config: TierConfig | None = None, namespace: str | None = None,
                 prefix: str = "memstream") -> None:
        self.memory = memory
        self.records = records_of(memory)  # the engine's boundary, not the store
        self.config = config or TierConfig()
        self.namespace = v.namespace(namespace if namespace is not None
                                     else memory.config.namespace)
        self.records.define_space(SPACE, MODEL, DIM)
        self.degraded = False
        self._retry_at = 0.0  # when degraded: the time (monotonic) of the next attempt
        stm: TierBackend
        im: TierBackend
        if redis_url:
            r_prefix = f"{prefix}:{self.namespace}.agents"  # the caches' keys, as before
            stm = RedisTier("stm", redis_url, self.config.stm_ttl, r_prefix)
            im = RedisTier("im", redis_url, self.config.im_ttl, r_prefix)
            try:
                stm.ping()
            except BackendUnavailable as exc:
                self._degrade(exc)
        else:
            stm = InProcessTier("stm", self.config.stm_ttl)
            im = InProcessTier("im", self.config.im_ttl)
        self.stm, self.im = stm, im
        self._pending: dict[str, int] = {}  # agent -> insertions since its last maintenance
        self._lock = threading.Lock()
        self._ltm_reads: dict[str, int] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._stm_put: Future[BackendUnavailable | None] | None = None
        memory.on_delete(self._forget)

    @classmethod
    def of(cls, memory: Memory, namespace: str | None = None, *,
           redis_url: str | None = None) -> TieredMemory:
        """The namespace's tiered memory of this process, shared by every caller (REST, MCP,
        library code) so that they see the same STM and IM; made with the default
        ``TierConfig`` the first time."""
        base = namespace if namespace is not None else memory.config.namespace
        return memory.capabilities.get(
            ("tiers", base, redis_url), lambda: cls(memory, namespace=base, redis_url=redis_url),
            cls)

    # --- tier plumbing ---------------------------------------------------------------------

    def _degrade(self, exc: Exception) -> None:
        if not self.degraded:
            warnings.warn(f"{exc}; serving from the durable store until it is back",
                          TierDegradedWarning, stacklevel=3)
            log.warning("tier backend failed (%s); using the durable store", exc)
        self.degraded = True
        self._retry_at = time.monotonic() + self.config.retry_interval

    def _up(self) -> bool:
        """Whether the tier backends can be used: not degraded, or back (tried at most every
        ``retry_interval`` seconds). Entries written meanwhile are only in the durable store,
        so queries serve them in their LTM form."""
        if not self.degraded:
            return True
        if time.monotonic() < self._retry_at or not isinstance(self.stm, RedisTier):
            return False
        try:
            self.stm.ping()
        except BackendUnavailable:
            self._retry_at = time.monotonic() + self.config.retry_interval
            return False
        self.degraded = False
        log.warning("tier backend is back; STM and IM are in use again")
        return True

    def tier_call(self, fn: Any, default: Any) -> Any:
        self.flush()
        if not self._up():
            return default
        try:
            return fn()
        except BackendUnavailable as exc:
            self._degrade(exc)
            return default

    # --- writes ------------------------------------------------------------------------------

    @renamed(memory_type="kind")
    def store(self, agent_id: str, kind: str, contents: Mapping[str, Any], step: int,
              priority: float = 1.0) -> dict[str, Any]:
        """Store one entry durably and in STM; returns the entry."""
        return shown(self._write([(agent_id, kind, contents, step, priority)])[0], "stm")

    def store_many(self, items: Iterable[tuple[str, str, Mapping[str, Any], int, float]]
                   ) -> list[str]:
        """Store many entries in one transaction (e.g. every agent's state of one step);
        returns their memory ids, in order."""
        return [e["memory_id"] for e in self._write(items)]

    def _write(self, items: Iterable[tuple[str, str, Mapping[str, Any], int, float]]
               ) -> list[dict[str, Any]]:
        """Durable first (one transaction), then STM, then maintenance when due; returns the
        STM entries."""
        batch = items if isinstance(items, Sequence) else list(items)
        records, entries = self._prepare(batch, self.memory.clock.now())
        # durable before any cache; an add needs no history row (the record itself is it)
        # states are compared exactly, per agent: no approximate index for their vectors
        self.records.insert(records, model=MODEL)
        if len(entries) >= _BACKGROUND and isinstance(self.stm, RedisTier):
            self._put_later(self.stm, entries)
        else:
            self.tier_call(lambda: self.stm.put(entries), None)
        due = []
        with self._lock:
            for e in entries:
                n = self._pending.get(e["agent_id"], 0) + 1
                if n >= self.config.cleanup_interval:
                    due.append(e["agent_id"])
                    n = 0
                self._pending[e["agent_id"]] = n
        if due:  # every cleanup_interval insertions of an agent
            upkeep.maintain(self, due)
        return entries

    def _prepare(self, items: Sequence[tuple[str, str, Mapping[str, Any], int, float]],
                 now: float) -> tuple[list[Record], list[dict[str, Any]]]:
        """Validate items and build their records and STM entries."""
        rows = []
        batch = StateBatch()
        scope_id, step_of, fraction = v.scope_id, v.step, v.fraction
        for n, (agent_id, kind, contents, step, priority) in enumerate(items):
            agent = scope_id(agent_id, "agent_id")
            if agent is None:
                raise InvalidInput(f"item {n}: agent_id is required")
            if kind not in MEMORY_TYPES:
                raise InvalidInput(f"item {n}: memory type must be one of {MEMORY_TYPES}")
            step_n = step_of(step)
            if step_n is None or step_n < 0:
                raise InvalidInput(f"item {n}: step_number must be an integer >= 0")
            if priority is None:
                raise InvalidInput(f"item {n}: priority must be a number in [0, 1]")
            prio = fraction(priority, f"item {n}: priority")
            data, pairs = plain_leaves(contents, f"item {n}: state_data")
            rows.append((agent, kind, step_n, prio, data, batch.add(kind, data, pairs)))
        full, ltm = batch.vectors()
        records: list[Record] = []
        entries: list[dict[str, Any]] = []
        for rid, (agent, kind, step_n, prio, data, text), packed, ltm_vec in zip(
                new_ids(len(rows), now), rows, _pack_rows(full), ltm, strict=True):
            records.append(Record(
                id=rid, namespace=self.namespace, text=text, kind=kind, data=data,
                agent_id=agent, step=step_n, importance=prio, created_at=now,
                last_accessed_at=now, space=SPACE, embedding=ltm_vec))
            entries.append({
                "memory_id": rid, "agent_id": agent, "step_number": step_n, "timestamp": now,
                "contents": data, "vec": packed,
                "metadata": {"creation_time": now, "last_access_time": now,
                             "compression_level": 0, "importance_score": prio,
                             "retrieval_count": 0, "memory_type": kind}})
        return records, entries

    def _put_later(self, stm: RedisTier, entries: list[dict[str, Any]]) -> None:
        """Copy a large, already durable batch to a Redis STM in a background thread, while
        the caller prepares its next batch; every tier operation of this object waits for it
        first (``flush``), so this process reads its own writes."""
        self.flush()
        if not self._up():
            return
        args = stm.encode(entries)  # encoded here: the thread only sends

        def put() -> BackendUnavailable | None:
            try:
                stm.send(args)
            except BackendUnavailable as exc:
                return exc  # reported by flush, in the caller's thread
            return None

        writer = self._writer()
        with self._lock:
            self._stm_put = writer.submit(put)

    def flush(self) -> None:
        """Wait until the STM copy of the last batch is written (reads do this themselves)."""
        with self._lock:
            pending, self._stm_put = self._stm_put, None
        if pending is not None:
            failure = pending.result()
            if failure is not None:
                self._degrade(failure)

    def _writer(self) -> ThreadPoolExecutor:
        """The thread that copies large batches to Redis (made on first use; it ends with
        the process and holds nothing between batches)."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="memstream-tiers")
            return self._executor

    def _forget(self, namespace: str, ids: list[str]) -> None:
        """Drop deleted records from STM and IM (called by the Memory after a delete)."""
        if namespace == self.namespace:
            for backend in (self.stm, self.im):
                self._evict(backend, ids)

    def _evict(self, backend: TierBackend, ids: Sequence[str]) -> None:
        by_agent: dict[str, list[str]] = {}
        for rid, e in self.tier_call(lambda: backend.get(ids), {}).items():
            by_agent.setdefault(e["agent_id"], []).append(rid)
        for agent, gone in by_agent.items():
            self.tier_call(lambda a=agent, g=gone: backend.remove(a, g), None)

    # --- entries in their three forms --------------------------------------------------------

    def ltm_entries(self, records: Sequence[Record]) -> dict[str, dict[str, Any]]:
        """``entries.of_record`` of each, their vectors read in one call: {id: LTM entry}."""
        vectors = self.records.embeddings(self.namespace, [r.id for r in records]) \
            if records else {}
        return {r.id: of_record(r, vectors.get(r.id)) for r in records}

    def selection(self, agent_id: str, kind: str | None, **extra: Any) -> Selection:
        kinds = None if kind is None else (self._kind(kind),)
        return Selection(self.namespace, agent_id=v.scope_id(agent_id, "agent_id"),
                         kinds=kinds, space=SPACE, **extra)

    @staticmethod
    def _kind(kind: str) -> str:
        if kind not in MEMORY_TYPES:
            raise InvalidInput(f"memory_type must be one of {MEMORY_TYPES} or None, not {kind!r}")
        return kind

    def _tier_entries(self, agent_id: str, ids_steps: Sequence[tuple[int, str]], kind: str | None
                      ) -> dict[str, dict[str, Any]]:
        """The most detailed cached form of these ids: {id: public entry}."""
        out: dict[str, dict[str, Any]] = {}
        wanted = [i for _, i in ids_steps]
        for tier, backend in (("stm", self.stm), ("im", self.im)):
            missing = [i for i in wanted if i not in out]
            found = self.tier_call(lambda b=backend, m=missing: b.get(m), {})
            for rid, e in found.items():
                if kind is None or e["metadata"]["memory_type"] == kind:
                    out[rid] = shown(e, tier)
        return out

    def merged(self, agent_id: str, records: Sequence[Record], kind: str | None
               ) -> list[dict[str, Any]]:
        """LTM records (sorted by step) in their most detailed cached form, each once."""
        cached = self._tier_entries(agent_id, [(r.step or 0, r.id) for r in records], kind)
        ltm = self.ltm_entries([r for r in records if r.id not in cached])
        out = [cached.get(r.id) or ltm[r.id] for r in records]
        self.count_reads(out)
        return out

    def _merge_ids(self, agent_id: str, ids: Sequence[str], kind: str | None
                   ) -> list[dict[str, Any]]:
        """``merged`` of the records with these ids (in this order), reading from the durable
        store only those no cache tier holds."""
        cached = self._tier_entries(agent_id, [(0, i) for i in ids], kind)
        missing = [i for i in ids if i not in cached]
        records = {r.id: r for r in self.records.get(self.namespace, missing)} \
            if missing else {}
        ltm = self.ltm_entries(list(records.values()))
        out = [cached[i] if i in cached else ltm[i] for i in ids if i in cached or i in ltm]
        self.count_reads(out)
        return out

    def count_reads(self, entries: Sequence[dict[str, Any]]) -> None:
        """Promotion: entries read often from IM or LTM go back to STM in full."""
        lower = [e for e in entries if e["metadata"]["compression_level"] > 0]
        promote = []
        with self._lock:
            reads = self._ltm_reads
            for e in lower:
                rid = e["memory_id"]
                n = reads.pop(rid, 0) + 1  # re-inserted last: the dict runs oldest read first
                if n >= self.config.promote_after:
                    promote.append(rid)
                else:
                    reads[rid] = n
            while len(reads) > _READS_KEPT:  # forget the counts read least recently
                del reads[next(iter(reads))]
        if promote:
            self._promote(promote)

    def _promote(self, ids: Sequence[str]) -> None:
        records = self.records.get(self.namespace, ids)
        entries = []
        for rec in records:
            data = rec.data or {}
            entries.append({
                "memory_id": rec.id, "agent_id": rec.agent_id, "step_number": rec.step,
                "timestamp": rec.created_at, "contents": data,
                "vec": _pack(state_vector(data)),
                "metadata": {"creation_time": rec.created_at,
                             "last_access_time": self.memory.clock.now(),
                             "compression_level": 0, "importance_score": rec.importance,
                             "retrieval_count": self.config.promote_after,
                             "memory_type": rec.kind, "promoted": True}})
        for e in entries:
            self.tier_call(lambda a=e["agent_id"], i=e["memory_id"]: self.im.remove(a, [i]), None)
        self.tier_call(lambda: self.stm.put(entries), None)
        for agent in sorted({r.agent_id or "" for r in records}):
            self.records.emit(self.namespace, "tier_moved",
                              [r.id for r in records if (r.agent_id or "") == agent],
                              agent_id=agent or None, data={"to": "stm", "promoted": True})

    # --- queries -----------------------------------------------------------------------------

    def recent(self, agent_id: str, count: int = 10, kind: str | None = None
               ) -> list[dict[str, Any]]:
        """The newest ``count`` entries, newest first."""
        if count < 0:
            raise InvalidInput("count must be >= 0")
        ids = self.records.select_ids(self.selection(agent_id, kind), limit=count,
                                           order="-created")
        return self._merge_ids(agent_id, ids, kind)

    def step_range(self, agent_id: str, start: int, end: int, kind: str | None = None
                   ) -> list[dict[str, Any]]:
        """Entries with start <= step <= end, oldest first."""
        if not (isinstance(start, int) and isinstance(end, int)) or start < 0 or end < start:
            raise InvalidInput(f"a step range needs 0 <= start_step <= end_step, got "
                               f"({start!r}, {end!r})")
        ids = self.records.select_ids(
            self.selection(agent_id, kind, step_min=start, step_max=end), order="step")
        return self._merge_ids(agent_id, ids, kind)

    def by_attributes(self, agent_id: str, attributes: Mapping[str, Any],
                      kind: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """Entries whose contents match every attribute (dotted keys reach nested values;
        a value may also be an operator dict such as {"lt": 0.5})."""
        if not isinstance(attributes, Mapping) or not attributes:
            raise InvalidInput("attributes must be a non-empty dict")
        where = parse_filter({"data." + k.replace("$", ""): (
            {op.lstrip("$"): val for op, val in spec.items()} if isinstance(spec, Mapping)
            else spec) for k, spec in attributes.items()})
        ids = self.records.select_ids(self.selection(agent_id, kind, where=where),
                                           order="step", limit=limit)
        return self._merge_ids(agent_id, ids, kind)

    def content_search(self, agent_id: str, text: str, k: int = 5) -> list[dict[str, Any]]:
        """Entries whose text matches words of ``text`` (BM25), best first."""
        hits = self.records.keyword_search(self.selection(agent_id, None), query_terms(text),
                                                k)
        recs = {r.id: r for r in self.records.get(self.namespace, [h for h, _ in hits])}
        return self.merged(agent_id, [recs[h] for h, _ in hits if h in recs], None)

    @renamed(query="state")
    def similar(self, agent_id: str, state: Mapping[str, Any] | Sequence[float], k: int = 5,
                kind: str | None = None, tiers: Sequence[str] | None = None
                ) -> list[tuple[dict[str, Any], float]]:
        """(entry, similarity) of the entries most like a state dict (distance in the state's
        own units, ``tiers.similarity``) or a raw vector (cosine), best first; each tier
        compares at its own resolution, and an entry is scored and returned by the most
        detailed of ``tiers`` that holds it."""
        return nearest.similar(self, agent_id, state, k, kind, tiers)

    def still_stored(self, backend: TierBackend, chosen: list[_Chosen]) -> list[_Chosen]:
        """The cached entries whose records are still in the durable store: a delete made
        elsewhere (another process, a tier this one cannot reach) never resurfaces. The others
        are evicted."""
        if not chosen:
            return chosen
        alive = self.records.alive(self.namespace, [rid for _, rid, _ in chosen])
        gone = [rid for _, rid, _ in chosen if rid not in alive]
        if gone:
            self._evict(backend, gone)
        return [c for c in chosen if c[1] in alive]

    # --- maintenance and statistics ---------------------------------------------------------

    def maintain(self, agent_id: str | None = None) -> dict[str, int]:
        """Move entries down the tiers now; returns how many moved to IM and left IM."""
        with self._lock:
            agents = [agent_id] if agent_id is not None else sorted(self._pending)
        return upkeep.maintain(self, agents)

    def stats(self, agent_id: str) -> dict[str, Any]:
        sel = self.selection(agent_id, None)
        total = self.records.count(sel)
        by_type = {t: self.records.count(self.selection(agent_id, t)) for t in MEMORY_TYPES}
        stm = len(self.tier_call(lambda: self.stm.index(agent_id), []))
        im = len(self.tier_call(lambda: self.im.index(agent_id), []))
        steps = [r.step for r in (self.records.select(sel, limit=1, order="step") +
                                  self.records.select(sel, limit=1, order="-created"))
                 if r.step is not None]
        return {"total_memories": total, "memory_type_distribution": by_type,
                "tiers": {"stm": stm, "im": im, "ltm": total},
                "oldest_step": min(steps) if steps else None,
                "newest_step": max(steps) if steps else None, "degraded": self.degraded}

    def clear(self, agent_id: str, tiers: Sequence[str] | None = None) -> None:
        """Empty the caches of an agent (and with "ltm" in ``tiers``, delete its records)."""
        tiers = list(tiers or ("stm", "im"))
        if "stm" in tiers:
            self.tier_call(lambda: self.stm.clear(agent_id), None)
        if "im" in tiers:
            self.tier_call(lambda: self.im.clear(agent_id), None)
        if "ltm" in tiers:
            ids = [r.id for r in self.records.select(self.selection(agent_id, None))]
            self.records.delete(self.namespace, ids)

    def close(self) -> None:
        """Close the Redis connections (in-process tiers hold none)."""
        for backend in (self.stm, self.im):
            getattr(backend, "close", lambda: None)()
