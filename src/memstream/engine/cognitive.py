"""The engine's cognitive operations: reflection, extraction from conversations,
consolidation and background importance rating. Each is a function of a ``Memory``; the
mechanisms themselves (prompts, parsing, offline fallbacks) live in ``memstream.cognition``.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._types import MemoryChange, Record
from ..cognition.consolidation import merge_text, near_duplicate_groups, survivor
from ..cognition.extraction import check_messages, decide, extract_facts, is_duplicate
from ..cognition.importance import llm_importance
from ..cognition.reflection import reflect_insights
from ..cognition.relations import extract_relations
from ..embed.protocol import calibrated_similarity
from ..errors import BackendUnavailable, LLMError
from ..events import caused

if TYPE_CHECKING:
    from .memory import Memory
    from .progress import ProgressFn

log = logging.getLogger("memstream.cognition")

RECENT_FOR_REFLECTION = 100
CONSOLIDATION_WINDOW = 1000


class NoInferenceWarning(UserWarning):
    """``infer=True`` without a working LLM: the messages were stored as they are."""


def rate(mem: Memory, text: str, kind: str) -> float:
    assert mem.llm is not None
    return llm_importance(mem.llm, text, kind)


def reflect(mem: Memory, *, namespace: str | None = None, agent_id: str | None = None,
            user_id: str | None = None) -> list[Record]:
    """Synthesise reflection records from the most recent memories (see cognition.reflection)."""
    ns = mem.config.namespace_of(namespace)
    recent = mem.get_all(namespace=ns, agent_id=agent_id, user_id=user_id, order="-created",
                         limit=RECENT_FOR_REFLECTION)
    if len(recent) < 2:
        return []

    def search(question: str) -> list[Record]:
        return [h.record for h in mem.search(question, k=8, namespace=ns, agent_id=agent_id,
                                             user_id=user_id, weights="recall", touch=False)]

    vectors = mem.store.indexes.embeddings(ns, [r.id for r in recent])
    insights, method = reflect_insights(mem.llm, recent, search, vectors, mem.embedder)
    by_id = {r.id: r for r in recent}
    out = []
    for insight in insights:
        cited = [by_id[i] for i in insight.evidence if i in by_id]
        importance = max((r.importance for r in cited), default=0.5)
        out.append(mem.add(insight.text, kind="reflection", namespace=ns, agent_id=agent_id,
                           user_id=user_id, provenance=insight.evidence, importance=importance,
                           metadata={"reflection": method}))
    newest = max(r.created_at for r in recent)
    mem.store.kv.set_meta(f"reflected_through:{ns}", repr(newest))
    return out


def maybe_reflect(mem: Memory, namespace: str) -> list[Record]:
    """Reflect when the importance added since the last reflection passes the threshold and
    an LLM is configured. Without one, the offline reflections ("Recurring: ...") did not earn
    their place in searches (LoCoMo dev, default profile: recall_frac@10 0.793 without them,
    0.791 with 125 of them, which took 26 of the 3,800 top-5 places and held no evidence), so
    they are made only on demand (``reflect()``)."""
    threshold = mem.config.reflection_threshold
    if threshold <= 0 or mem.llm is None:
        return []
    since = float(mem.store.kv.get_meta(f"reflected_through:{namespace}") or 0.0)
    fresh = [r for r in mem.get_all(namespace=namespace, since=since, limit=None)
             if r.kind != "reflection" and r.created_at > since]
    if sum(r.importance for r in fresh) < threshold:
        return []
    return reflect(mem, namespace=namespace)


def infer(mem: Memory, messages: Any, **scope: Any) -> list[MemoryChange]:
    """``add(messages, infer=True)``: extraction with an LLM, plain messages without one."""
    msgs = check_messages(messages)
    facts: list[str] | None = None
    if mem.llm is not None:
        try:
            facts = extract_facts(mem.llm, msgs)
        except (LLMError, BackendUnavailable) as exc:
            log.warning("fact extraction failed (%s); storing the messages as they are", exc)
    if facts is None:
        warnings.warn("no LLM is configured (or it failed): the messages were stored as "
                      "records without inferring facts", NoInferenceWarning, stacklevel=3)
        records = mem.add_many([{"text": m["content"], "kind": "message",
                                 "data": {"role": m["role"]}, **scope} for m in msgs])
        return [MemoryChange("add", r) for r in records]
    return [_reconcile(mem, fact, scope) for fact in facts]


def _reconcile(mem: Memory, fact: str, scope: dict[str, Any]) -> MemoryChange:
    assert mem.llm is not None
    hits = mem.search(fact, k=5, kinds=("fact",), weights="recall", touch=False,
                      namespace=scope.get("namespace"), user_id=scope.get("user_id"),
                      agent_id=scope.get("agent_id"))
    for hit in hits:
        sim = None if hit.explain.cosine is None else calibrated_similarity(hit.explain.cosine,
                                                                            mem.embedder)
        if is_duplicate(fact, hit.record.text, sim):
            return MemoryChange("noop", hit.record)
    similar = [h.record for h in hits]
    try:
        decision = decide(mem.llm, fact, similar)
    except (LLMError, BackendUnavailable) as exc:
        log.warning("the LLM could not decide about a fact (%s); adding it", exc)
        return MemoryChange("add", mem.add(fact, kind="fact", **scope))
    if decision.action == "add":
        return MemoryChange("add", mem.add(fact, kind="fact", **scope))
    target = similar[(decision.target or 1) - 1]
    if decision.action == "noop":
        return MemoryChange("noop", target)
    if decision.action == "update":
        updated = mem.update(target.id, text=decision.text or fact,
                             namespace=target.namespace)
        return MemoryChange("update", updated, previous=target)
    new = mem.add(fact, kind="fact", **scope)
    closed = mem.invalidate(target.id, superseded_by=new.id, namespace=target.namespace)
    return MemoryChange("supersede", new, previous=closed)


def consolidate(mem: Memory, *, namespace: str | None = None, threshold: float | None = None,
                progress: ProgressFn | None = None) -> list[MemoryChange]:
    """Merge near-duplicate memories (see cognition.consolidation); returns one "update"
    change per survivor, with the merged records invalidated. Their events are
    ``consolidated``."""
    with caused("consolidated"):
        return _consolidate(mem, namespace, threshold, progress)


def _consolidate(mem: Memory, namespace: str | None, threshold: float | None,
                 progress: ProgressFn | None) -> list[MemoryChange]:
    ns = mem.config.namespace_of(namespace)
    records = mem.get_all(namespace=ns, order="-created", limit=CONSOLIDATION_WINDOW)
    vectors = mem.store.indexes.embeddings(ns, [r.id for r in records])
    limit = mem.config.consolidation_threshold if threshold is None else threshold
    changes = []
    groups = near_duplicate_groups(records, vectors, mem.embedder, limit)
    for n, group in enumerate(groups, start=1):
        keep = survivor(group)
        others = [r for r in group if r.id != keep.id]
        text = merge_text(mem.llm, group, keep)
        updated = mem.update(
            keep.id, namespace=ns, text=text if text != keep.text else None,
            importance=max(r.importance for r in group),
            provenance=list(dict.fromkeys([*keep.provenance, *(r.id for r in others)])))
        for rec in others:
            mem.invalidate(rec.id, superseded_by=keep.id, namespace=ns)
        changes.append(MemoryChange("update", updated, previous=keep))
        if progress is not None:
            progress("merge", n, len(groups))
    return changes


def maybe_consolidate(mem: Memory, namespace: str) -> list[MemoryChange]:
    """Consolidate when ``consolidate_every`` records were added since the last time."""
    every = mem.config.consolidate_every
    if every <= 0:
        return []
    key = f"consolidated_through:{namespace}"
    since = float(mem.store.kv.get_meta(key) or 0.0)
    fresh = mem.count(namespace=namespace, since=since)
    if fresh < every:
        return []
    newest = mem.get_all(namespace=namespace, order="-created", limit=1, include_invalid=True)
    changes = consolidate(mem, namespace=namespace)
    if newest:
        mem.store.kv.set_meta(key, repr(newest[0].created_at))
    return changes


def after_enrichment(mem: Memory, namespaces: Sequence[str]) -> None:
    """Run by the background worker after each round: automatic reflection and, when
    configured, consolidation."""
    for ns in namespaces:
        maybe_reflect(mem, ns)
        maybe_consolidate(mem, ns)


def relate(mem: Memory, records: Sequence[Record]) -> int:
    """Ask the LLM once for the relations a batch of new text memories states and keep them in
    the graph (docs/entities.md, "With an LLM"); a failed call is logged and stores nothing
    (the memories themselves are already stored). How many relations were kept."""
    text = [r for r in records if r.space == ""]
    if mem.llm is None or not text:
        return 0
    try:
        triples = extract_relations(mem.llm, text)
    except (LLMError, BackendUnavailable) as exc:
        log.warning("relations were not read for %d memories: %s", len(text), exc)
        return 0
    by_id = {r.id: r for r in text}
    scopes: dict[tuple[str, str], list[tuple[str, str, str, str, float]]] = {}
    for t in triples:
        r = by_id[t.record_id]
        scopes.setdefault((r.namespace, r.user_id or ""), []).append(
            (t.subject, t.predicate, t.object, r.id, r.created_at))
    return sum(mem.store.graph.relate(ns, owner, rows) for (ns, owner), rows in scopes.items())
