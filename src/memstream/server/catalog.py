"""The one catalog of operations the server offers: for each, its name, what it does, its typed
request (every field described, in ``models``), the role a key needs, its REST route, the
engine call, and its result in two forms (full JSON for REST and ``Client``; compact for MCP,
which an LLM reads: id, text, score, kind, dates as ISO strings).

The MCP tools are made from this catalog (``mcp.py``); the REST routes call each operation's
``run`` (``routes.py``), declared with ``route``: every route's method and path is in
``memstream.core.routes.ROUTES`` (an operation's under its name), which ``Client`` sends through
as well. ``tests/server/test_catalog.py`` fails when an operation or one of its parameters is
missing from REST, MCP or ``Client``; ``tests/server/test_parity.py`` when one is missing from
Python or the command line.
"""

from __future__ import annotations

import dataclasses
import io
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from .._types import Entity, EntityProfile, Finding, HistoryEntry, MemoryChange, Record
from ..engine import transfer
from ..engine.memory import Context
from ..episodes import EpisodeMemory
from ..events import ChangeEvent, Webhook
from ..learning import Learner
from ..scope import Scope
from ..tiers import TieredMemory
from . import inspector
from . import models as m
from .operation import Call, Operation, compact_hit, compact_record, iso, route, same

__all__ = ["OPERATIONS", "Call", "Operation", "Subscription", "by_name", "compact_hit",
           "compact_record",
           "route"]

def _records(rs: Sequence[Record]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in rs]


def _same_records(rs: Sequence[Record]) -> list[dict[str, Any]]:
    return [compact_record(r) for r in rs]


def _history(entries: Sequence[HistoryEntry]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in entries]


def _compact_history(entries: Sequence[HistoryEntry]) -> list[dict[str, Any]]:
    return [{k: v for k, v in {**e.to_dict(), "at": iso(e.at)}.items()
             if v is not None and k not in ("record_id", "namespace")} for e in entries]


def _context(c: Context) -> dict[str, Any]:
    return {"text": c.text, "tokens": c.tokens, "hits": [h.to_dict() for h in c.hits]}


def _fields(req: BaseModel, *skip: str) -> dict[str, Any]:
    return req.model_dump(exclude={"namespace", *skip})


#: the fields of a ``memstream.Scope``
SCOPE = tuple(f.name for f in dataclasses.fields(Scope))


def _ranking(c: Call, r: m.SearchRequest) -> dict[str, Any]:
    """How a search ranks and what it touches: its arguments besides the scope and query."""
    return {"k": r.k, "now": r.now, "weights": r.weights, "fusion": r.fusion,
            "touch": r.touch and c.touch, "min_relevance": r.min_relevance}


def _tiers(c: Call) -> TieredMemory:
    return TieredMemory.of(c.memory, c.namespace, redis_url=c.redis_url)


def _advice(c: Call, r: m.AdviceRequest) -> Any:
    return Learner.of(c.memory, c.namespace).retrieve(r.task, r.agent, user_id=r.user_id,
                                                      k=r.k)


def _advice_full(ctx: Any) -> dict[str, Any]:
    def section(items: list[Any]) -> list[dict[str, Any]]:
        return [{"id": i.id, **i.payload()} for i in items]

    return {"heuristics": section(ctx.heuristics), "anti_patterns": section(ctx.anti_patterns),
            "outcomes": section(ctx.outcomes), "preferences": section(ctx.preferences),
            "knowledge": section(ctx.knowledge), "prompt": ctx.to_prompt()}


def _outcome(c: Call, r: m.LearnRequest) -> dict[str, Any]:
    out = Learner.of(c.memory, c.namespace).learn(**_fields(r))
    return {"id": out.id, **out.payload()}


def _delete(c: Call, r: m.DeleteMemoryRequest) -> dict[str, Any]:
    c.memory.delete(r.memory_id, namespace=c.namespace, erase=r.erase)
    return _scrub({"deleted": r.memory_id}, c, r.erase)


def _delete_all(c: Call, r: m.DeleteAllRequest) -> dict[str, Any]:
    count = c.memory.delete_all(scope=r.scope(c.namespace), kinds=r.kinds, filters=r.filters,
                                erase=r.erase)
    return _scrub({"deleted": count}, c, r.erase)


def _scrub(out: dict[str, Any], c: Call, erase: bool) -> dict[str, Any]:
    """An erase's answer says when the erased text may still be on disk (another reader
    holds the log: the scrub finishes when it ends), as the CLI and MCP say."""
    pending = c.memory.deletions.scrub_pending() if erase else None
    return {**out, "scrub_pending": pending} if pending else out


def _compact_entity(e: Entity) -> dict[str, Any]:
    out = {"name": e.name, "kind": e.kind, "mentions": e.mentions,
           "first_seen": iso(e.first_seen), "last_seen": iso(e.last_seen)}
    return {**out, "user_id": e.owner} if e.owner is not None else out


def _compact_profile(p: EntityProfile) -> dict[str, Any]:
    return {**_compact_entity(p.entity), "aliases": list(p.aliases),
            "records": [compact_record(r) for r in p.records],
            "related": [{"name": e.name, "kind": e.kind, "record_ids": ids}
                        for e, ids in p.related],
            "relations": [{"subject": r.subject, "predicate": r.predicate, "object": r.object,
                           "since": iso(r.valid_from)} for r in p.relations]}


def _similar(c: Call, r: m.AgentSimilarOp) -> list[dict[str, Any]]:
    return [dict(entry, similarity=score) for entry, score in
            _tiers(c).similar(r.agent_id, r.state, k=r.k, kind=r.kind)]


def _compact_finding(f: Finding) -> dict[str, Any]:
    return {"kind": f.kind, "id": f.record.id, "text": f.record.text,
            "related_id": f.related.id if f.related else None,
            "related_text": f.related.text if f.related else None,
            "confidence": round(f.confidence, 3), "reason": f.reason, "applied": f.applied,
            "tentative": f.tentative}


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "add_memory", "Store a memory (a fact, preference, observation, decision or outcome); "
        "durable when the answer arrives. Returns the stored record with its id.",
        m.AddRequest, "write",
        lambda c, r: c.memory.add(r.text, scope=r.scope(c.namespace),
                                  **_fields(r, "text", *SCOPE)),
        lambda rec: rec.to_dict(), compact_record),
    Operation(
        "search_memories", "Find the memories most relevant to a query, best first, each "
        "with its score (relevance first, then recency and importance).",
        m.SearchRequest, "read",
        lambda c, r: c.memory.search(r.as_query(), scope=r.scope(c.namespace),
                                     **_ranking(c, r)),
        lambda hits: [h.to_dict() for h in hits], lambda hits: [compact_hit(h) for h in hits],
        list[dict[str, Any]]),
    Operation(
        "list_memories", "List the memories a selection matches (scope, kinds, filters, time, "
        "validity), oldest first unless ordered otherwise.",
        m.ListRequest, "read",
        lambda c, r: c.memory.get_all(scope=r.scope(c.namespace), query=r.as_query(),
                                      limit=r.limit, offset=r.offset, order=r.order),
        _records, lambda rs: [compact_record(r) for r in rs], list[dict[str, Any]]),
    Operation(
        "get_memory", "Read one memory by id (also when invalidated).",
        m.MemoryRef, "read",
        lambda c, r: c.memory.get(r.memory_id, namespace=c.namespace),
        lambda rec: rec.to_dict(), compact_record),
    Operation(
        "update_memory", "Change a memory's text, importance, data or metadata; the old values "
        "are kept in its history.",
        m.UpdateMemoryRequest, "write",
        lambda c, r: c.memory.update(r.memory_id, namespace=c.namespace,
                                     **_fields(r, "memory_id")),
        lambda rec: rec.to_dict(), compact_record),
    Operation(
        "delete_memory", "Delete a memory from every index. Its history stays unless erase is "
        "true: then its text, payload and history are removed everywhere.",
        m.DeleteMemoryRequest, "write", _delete, same,
        same),
    Operation(
        "memory_history", "A memory's changes, oldest first (add, update, invalidate, "
        "delete, ...), with the old and new values.",
        m.MemoryRef, "read",
        lambda c, r: c.memory.history(r.memory_id, namespace=c.namespace),
        _history, _compact_history, list[dict[str, Any]]),
    Operation(
        "audit_memories", "What comparing new memories with older ones found: changed facts "
        "(superseded, with the successor), restatements (duplicate, with the original) and "
        "junk, most confident first; undo one with restore_memory.",
        m.AuditRequest, "read",
        lambda c, r: c.memory.audit(namespace=c.namespace, user_id=r.user_id,
                                    agent_id=r.agent_id, kinds=r.kinds, limit=r.limit),
        lambda fs: [f.to_dict() for f in fs], lambda fs: [_compact_finding(f) for f in fs],
        list[dict[str, Any]]),
    Operation(
        "restore_memory", "Undo what was decided about a memory: valid again when it was "
        "superseded or invalidated, no longer ranked as junk or a duplicate.",
        m.MemoryRef, "write",
        lambda c, r: c.memory.restore(r.memory_id, namespace=c.namespace),
        lambda rec: rec.to_dict(), compact_record),
    Operation(
        "invalidate_memory", "Mark a memory as no longer true (kept in history and in as-of "
        "reads), optionally naming the memory that replaces it; confirms a tentative change "
        "audit_memories found. Undo with restore_memory.",
        m.InvalidateRequest, "write",
        lambda c, r: c.memory.invalidate(r.memory_id, superseded_by=r.superseded_by,
                                         namespace=c.namespace),
        lambda rec: rec.to_dict(), compact_record),
    Operation(
        "memory_context", "The best memories for a query that fit in a token budget, as text "
        "ready for a prompt.",
        m.ContextRequest, "read",
        lambda c, r: c.memory.context(r.as_query(), budget=r.budget,
                                      scope=r.scope(c.namespace), **_ranking(c, r)),
        _context, lambda ctx: {"text": ctx.text, "tokens": ctx.tokens,
                               "ids": [h.record.id for h in ctx.hits]}),
    Operation(
        "list_entities", "The named things (people, places, organisations, products, ids) a "
        "scope's memories mention, most mentioned first, with how many memories mention each "
        "and when first and last.",
        m.EntitiesRequest, "read",
        lambda c, r: c.memory.entities(r.query, namespace=c.namespace, user_id=r.user_id,
                                       agent_id=r.agent_id, run_id=r.run_id, limit=r.limit),
        lambda es: [e.to_dict() for e in es], lambda es: [_compact_entity(e) for e in es],
        list[dict[str, Any]]),
    Operation(
        "get_entity", "One named thing: its kind, its other names, the memories that mention it "
        "(newest first) and the names it shares memories with.",
        m.EntityRequest, "read",
        lambda c, r: c.memory.entity(r.name, namespace=c.namespace, user_id=r.user_id,
                                     limit=r.limit, as_of=r.as_of),
        lambda p: p.to_dict(), _compact_profile),
    Operation(
        "record_episode", "Record a finished training episode (task_id, score 0-1, steps, "
        "trajectory_summary, mistakes, successes, mistake_cards).",
        m.EpisodeRequest, "write",
        lambda c, r: EpisodeMemory.of(c.memory, r.agent_id, c.namespace).record(r.episode),
        lambda rec: rec.to_dict(), compact_record),
    Operation(
        "episode_context", "Lessons from past episodes, for the top of a system prompt.",
        m.EpisodeContextRequest, "read",
        lambda c, r: EpisodeMemory.of(c.memory, r.agent_id, c.namespace).context(
            r.task_id, budget=r.budget),
        lambda text: {"context": text}, same, str),
    Operation(
        "learn_outcome", "Record how an attempt at a task went (outcome true or false) and the "
        "strategy used; repeated outcomes become heuristics and anti-patterns.",
        m.LearnRequest, "write", _outcome, same, same),
    Operation(
        "task_advice", "Advice for a task from learned heuristics, anti-patterns, knowledge and "
        "preferences, as a compact prompt section.",
        m.AdviceRequest, "read", _advice, _advice_full,
        lambda ctx: ctx.to_prompt(), str),
    Operation(
        "store_agent_memory", "Store an agent's state, action or interaction (a dict) at a "
        "simulation step, with a priority in [0, 1].",
        m.AgentEntryRequest, "write",
        lambda c, r: _tiers(c).store(r.agent_id, r.kind, r.contents, r.step,
                                     r.priority), same, same),
    Operation(
        "similar_agent_states", "An agent's memories nearest to a state (a dict), field by "
        "field in the state's own units, with their similarity (1.0: identical), across its "
        "short, intermediate and long-term tiers.",
        m.AgentSimilarOp, "read", _similar, same, same,
        list[dict[str, Any]]),
)


def _webhook(c: Call, r: m.WebhookRequest) -> Webhook:
    return c.memory.webhooks.add(r.url, namespace=c.namespace, types=r.types, secret=r.secret,
                                 from_start=r.from_start)


def _unhook(c: Call, r: m.WebhookRef) -> dict[str, Any]:
    c.memory.webhooks.remove(r.webhook_id, namespace=c.namespace)
    return {"deleted": r.webhook_id}


def _events(events: Sequence[ChangeEvent]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in events]


def _hooks(hooks: Sequence[Webhook]) -> list[dict[str, Any]]:
    return [h.to_dict() for h in hooks]


def changes(cs: Sequence[MemoryChange]) -> list[dict[str, Any]]:
    """Changes as REST returns them (kept here beside the other result forms)."""
    return [{"event": c.event, "record": c.record.to_dict(),
             "previous_id": c.previous.id if c.previous else None} for c in cs]


@dataclass(frozen=True)
class Subscription:
    """What an event stream follows: the namespaces (None: every one, on an open local
    server), the number it starts after, and the types it keeps (all when empty)."""

    namespaces: list[str] | None
    start: int
    types: list[str]


def _subscribe(c: Call, r: m.StreamRequest) -> Subscription:
    who = c.who
    spaces: list[str] | None = None
    if r.namespace is not None:
        spaces = [c.namespace]
    elif who is not None and who.namespaces is not None:
        spaces = list(who.namespaces)
    for ns in spaces or []:
        if who is not None:
            who.authorize(ns, "read")
    start = r.after if r.after is not None else int(c.memory.store.events.last_event_seq())
    return Subscription(spaces, start, list(r.types or []))


#: change events and webhooks (docs/events.md); a key sees those of its namespaces only
EVENT_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "list_events", "Change events of the namespace numbered above `after`, oldest first "
        "(added, updated, deleted, ...; ids and scope, never the text unless configured).",
        m.EventsRequest, "read",
        lambda c, r: c.memory.events(namespace=c.namespace, after=r.after, limit=r.limit,
                                     types=r.types), _events, _events, list[dict[str, Any]]),
    Operation(
        "register_webhook", "Send the namespace's change events to a URL, signed with "
        "HMAC-SHA256, at least once and in order. Returns the webhook with its secret (shown "
        "only now).",
        m.WebhookRequest, "admin", _webhook,
        lambda h: h.to_dict(secret=True), lambda h: h.to_dict(secret=True)),
    Operation(
        "list_webhooks", "The namespace's webhooks with their delivery state (cursor, failed "
        "tries, last error, dead letters).",
        m.NamespaceRequest, "admin",
        lambda c, r: c.memory.webhooks.list(namespace=c.namespace), _hooks, _hooks,
        list[dict[str, Any]]),
    Operation(
        "delete_webhook", "Stop sending events to a webhook and forget it.",
        m.WebhookRef, "admin", _unhook, same, same),
    Operation(
        "webhook_dead_letters", "The events a webhook gave up on after its retries, with the "
        "last error.",
        m.WebhookRef, "admin",
        lambda c, r: c.memory.webhooks.dead_letters(r.webhook_id, namespace=c.namespace),
        same, same, list[dict[str, Any]]),
    Operation(
        "redeliver_webhook", "Send a webhook's dead letters again (and the events after them).",
        m.WebhookRef, "admin",
        lambda c, r: {"queued": c.memory.webhooks.redeliver(r.webhook_id,
                                                            namespace=c.namespace)},
        same, same),
    Operation(
        "stream_events", "Server-sent events: every change event of the key's namespaces (or "
        "of namespace) from now on, or after a number.",
        m.StreamRequest, "read", _subscribe, same, same, tool=False),
)


def _yield_gil(*_: object) -> None:
    """Let the other threads run (the event loop's among them) between parts of a long parse:
    a thread that parses for seconds otherwise holds the interpreter for most of them."""
    time.sleep(0)


def _export(c: Call, r: m.ExportRequest) -> str:
    out = io.StringIO()
    transfer.export_jsonl(c.memory, out, namespace=c.namespace,
                          with_embeddings=r.with_embeddings)
    return out.getvalue()


def _import(c: Call, r: m.ImportRequest) -> dict[str, Any]:
    """Records exported by memstream, or new memories: all or nothing, with admin of every
    namespace the records go to. Where keys are required, an exported record whose id its
    namespace does not hold gets an id of the namespace's own (the answer's ``ids`` maps
    them)."""
    rate: list[str] = []
    records = transfer.parse_lines(r.text.splitlines(), c.memory, namespace=c.namespace,
                                   rate=rate, progress=_yield_gil)
    keyed = c.who is not None and c.who.key_id is not None
    for ns in sorted({rec.namespace for rec in records}):
        if c.who is not None:
            c.who.authorize(ns, "admin")
    ids = transfer.own_ids(c.memory, records, set(rate)) if keyed else {}
    n = transfer.import_jsonl(c.memory, [], on_conflict="skip" if r.skip_existing else "error",
                              records=records, rate=rate)
    return {"imported": n, "ids": ids} if ids else {"imported": n}


#: batches, transfer, cognition and the capabilities' other reads: REST's and Client's
#: (``tool=False``: the MCP tools stay the ones an agent calls)
MORE_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "add_memories", "Store many memories in one transaction: all or none.",
        m.AddManyRequest, "write",
        lambda c, r: c.memory.add_many([i.model_dump() for i in r.items],
                                       namespace=c.namespace),
        _records, _same_records, list[dict[str, Any]], tool=False),
    Operation(
        "add_messages", "Store a conversation: facts extracted and reconciled when an LLM is "
        "configured and infer is true, the messages as they are otherwise.",
        m.MessagesRequest, "write",
        lambda c, r: c.memory.add([x.model_dump() for x in r.messages],
                                  scope=r.scope(c.namespace), infer=r.infer),
        changes, changes, list[dict[str, Any]], tool=False),
    Operation(
        "delete_memories", "Delete every memory a selection matches in one namespace.",
        m.DeleteAllRequest, "admin",
        _delete_all, same, same, tool=False),
    Operation(
        "stats", "Counts of the namespace's records by kind, and the store's settings.",
        m.NamespaceRequest, "read", lambda c, r: c.memory.stats(namespace=c.namespace),
        same, same, tool=False),
    Operation(
        "export", "The namespace's records as JSON Lines (every field).",
        m.ExportRequest, "read", _export, same, same, str, tool=False),
    Operation(
        "import", "Load JSON Lines, all or nothing: records written by export, or new "
        "memories (a text with any of add's fields).",
        m.ImportRequest, "admin", _import, same, same, tool=False, raw_body="text"),
    Operation(
        "reflect", "Synthesise insights from recent memories now.",
        m.NamespaceRequest, "admin", lambda c, r: c.memory.reflect(namespace=c.namespace),
        _records, _same_records, list[dict[str, Any]], tool=False),
    Operation(
        "consolidate", "Merge near-duplicate memories into one each.",
        m.NamespaceRequest, "admin",
        lambda c, r: c.memory.consolidate(namespace=c.namespace),
        changes, changes, list[dict[str, Any]], tool=False),
    Operation(
        "episode_summary", "Totals, rules per task, top mistake cards and mean scores of an "
        "agent's episodes.",
        m.EpisodeSummaryRequest, "read",
        lambda c, r: EpisodeMemory.of(c.memory, r.agent_id, c.namespace).summary(),
        same, same, tool=False),
    Operation(
        "agent_range", "An agent's entries with start <= step <= end, oldest first, each once.",
        m.AgentRangeRequest, "read",
        lambda c, r: _tiers(c).step_range(r.agent_id, r.start, r.end, r.kind),
        same, same, list[dict[str, Any]], tool=False),
)


#: the memory inspector's views (the page at ``/``: ``inspector``)
INSPECT_OPERATIONS: tuple[Operation, ...] = (
    Operation("namespaces", "The namespaces this key may read.", m.NoFields, "read",
              inspector.namespaces, same, same, tool=False),
    Operation("inspect_records", "A page of records, newest first, each with its tier.",
              m.InspectListRequest, "read", inspector.inspect_records, same, same, tool=False),
    Operation("inspect_record", "One record with its tier, history, evidence, citations, the "
              "versions it replaces and what audit found about it.",
              m.InspectRecordRequest, "read", inspector.inspect_record, same, same, tool=False),
    Operation("inspect_overview", "What the inspector's plots show, over the newest records.",
              m.OverviewRequest, "read", inspector.overview, same, same, tool=False),
)

OPERATIONS = OPERATIONS + EVENT_OPERATIONS + MORE_OPERATIONS + INSPECT_OPERATIONS


def by_name(name: str) -> Operation:
    return next(op for op in OPERATIONS if op.name == name)
