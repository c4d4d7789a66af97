"""The REST routes under /v1. Each route resolves the caller's namespace, checks the key's
role, makes one engine call and returns its result as JSON."""

from __future__ import annotations

from typing import Any, TypeVar

import anyio
from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ValidationError

from .._types import Record
from ..core.aliases import unalias
from ..core.routes import PREFIX
from ..engine.memory import Memory
from ..episodes import EpisodeMemory
from ..errors import InvalidInput
from ..tiers import TieredMemory
from .auth import Principal
from .catalog import Call, by_name, route
from .models import (
    MAX_INT,
    AddManyRequest,
    AddRequest,
    AdviceRequest,
    AgentEntryRequest,
    AgentRangeRequest,
    AgentSimilarOp,
    AgentSimilarRequest,
    AuditRequest,
    ChangeOut,
    ContextOut,
    ContextRequest,
    DeleteAllRequest,
    DeleteMemoryRequest,
    EntitiesRequest,
    EntityRequest,
    EpisodeContextRequest,
    EpisodeRequest,
    EpisodeSummaryRequest,
    ExportRequest,
    HitOut,
    ImportRequest,
    InspectListRequest,
    InspectRecordRequest,
    InvalidateBody,
    InvalidateRequest,
    LearnRequest,
    ListRequest,
    MemoryRef,
    MessagesRequest,
    NamespaceRequest,
    NoFields,
    OverviewRequest,
    RecordOut,
    SearchRequest,
    UpdateMemoryRequest,
    UpdateRequest,
)

router = APIRouter(prefix=PREFIX)
M = TypeVar("M", bound=BaseModel)


def _ctx(request: Request) -> tuple[Memory, Principal]:
    return request.app.state.memory, request.state.principal


def _ns(request: Request, requested: str | None, need: str) -> tuple[Memory, str]:
    mem, who = _ctx(request)
    ns = who.namespace_for(requested, mem.config.namespace)
    who.authorize(ns, need)
    return mem, ns


def _may_touch(request: Request) -> bool:
    """A read key reads: its searches leave recency (last access) as it was."""
    return bool(request.state.principal.role != "read")


def _run(request: Request, name: str, req: BaseModel) -> Any:
    """Run an operation of the catalog for this request: its role checked on the namespace the
    key may use, its result in full."""
    op = by_name(name)
    mem, ns = _ns(request, getattr(req, "namespace", None), op.role)
    call = Call(mem, ns, _may_touch(request), request.app.state.redis_url,
                request.state.principal)
    return op.full(op.run(call, req))


def _req(model: type[M], **values: Any) -> M:
    """A request made of path and query values, checked as the body would be."""
    try:
        return model(**values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in exc.errors()[:5])
        raise InvalidInput(f"invalid request: {problems}") from None


def _named(request: Request, name: str, value: Any, old: str) -> dict[str, Any]:
    """A query parameter given by its name or by its old name (an alias the schema does not
    show; not both)."""
    given = {k: v for k, v in ((name, value), (old, request.query_params.get(old)))
             if v is not None}
    return unalias(given, {old: name})


def _rec(r: Record) -> dict[str, Any]:
    return r.to_dict()


# --- memories -------------------------------------------------------------------------------

@route(router, "add_memory", response_model=RecordOut, status_code=201, tags=["memories"])
def add(request: Request, body: AddRequest) -> dict[str, Any]:
    """Store one memory (durable when the answer arrives)."""
    return _run(request, "add_memory", body)  # type: ignore[no-any-return]


@route(router, "add_memories", response_model=list[RecordOut], status_code=201,
       tags=["memories"])
def add_many(request: Request, body: AddManyRequest) -> list[dict[str, Any]]:
    """Store many memories in one transaction: all or none."""
    return _run(request, "add_memories", body)  # type: ignore[no-any-return]


@route(router, "add_messages", response_model=list[ChangeOut], status_code=201,
       tags=["memories"])
def add_messages(request: Request, body: MessagesRequest) -> list[dict[str, Any]]:
    """Store a conversation: facts extracted and reconciled when an LLM is configured and
    ``infer`` is true, the messages as they are otherwise."""
    return _run(request, "add_messages", body)  # type: ignore[no-any-return]


@route(router, "list_memories", response_model=list[RecordOut], tags=["memories"])
def list_memories(request: Request, body: ListRequest) -> list[dict[str, Any]]:
    """Records matching a selection, oldest first (``order``: created, -created, step)."""
    return _run(request, "list_memories", body)  # type: ignore[no-any-return]


@route(router, "get_memory", response_model=RecordOut, tags=["memories"])
def get(request: Request, memory_id: str, namespace: str | None = None) -> dict[str, Any]:
    """Read one memory by id (also when invalidated)."""
    return _run(request, "get_memory",  # type: ignore[no-any-return]
                _req(MemoryRef, memory_id=memory_id, namespace=namespace))


@route(router, "update_memory", response_model=RecordOut, tags=["memories"])
def update(request: Request, memory_id: str, body: UpdateRequest,
           namespace: str | None = None) -> dict[str, Any]:
    """Change a record; the old values go to its history."""
    return _run(request, "update_memory",  # type: ignore[no-any-return]
                _req(UpdateMemoryRequest, memory_id=memory_id, namespace=namespace,
                     **body.model_dump()))


@route(router, "delete_memory", tags=["memories"])
def delete(request: Request, memory_id: str, namespace: str | None = None,
           erase: bool = Query(False, description="Also remove its text, payload and history "
                               "from every store and index (only the id and time stay).")
           ) -> dict[str, Any]:
    """Delete a record (its history stays unless ``erase``)."""
    return _run(request, "delete_memory",  # type: ignore[no-any-return]
                _req(DeleteMemoryRequest, memory_id=memory_id, namespace=namespace, erase=erase))


@route(router, "delete_memories", tags=["memories"])
def delete_all(request: Request, body: DeleteAllRequest) -> dict[str, Any]:
    """Delete every record a selection matches in one namespace (admin)."""
    return _run(request, "delete_memories", body)  # type: ignore[no-any-return]


@route(router, "memory_history", tags=["memories"])
def history(request: Request, memory_id: str,
            namespace: str | None = None) -> list[dict[str, Any]]:
    """A record's changes, oldest first."""
    return _run(request, "memory_history",  # type: ignore[no-any-return]
                _req(MemoryRef, memory_id=memory_id, namespace=namespace))


@route(router, "restore_memory", tags=["memories"])
def restore(request: Request, memory_id: str, namespace: str | None = None) -> dict[str, Any]:
    """Undo what was decided about a record: valid again, no longer junk or a duplicate."""
    return _run(request, "restore_memory",  # type: ignore[no-any-return]
                _req(MemoryRef, memory_id=memory_id, namespace=namespace))


@route(router, "invalidate_memory", tags=["memories"])
def invalidate(request: Request, memory_id: str,
               body: InvalidateBody = Body(InvalidateBody(superseded_by=None)),  # noqa: B008
               namespace: str | None = None) -> dict[str, Any]:
    """Mark a record as no longer true, optionally naming the record that replaces it."""
    return _run(request, "invalidate_memory",  # type: ignore[no-any-return]
                _req(InvalidateRequest, memory_id=memory_id, namespace=namespace,
                     **body.model_dump()))


@route(router, "audit_memories", tags=["memories"])
def audit(request: Request, body: AuditRequest) -> list[dict[str, Any]]:
    """Changed facts, restatements and junk found when memories were written."""
    return _run(request, "audit_memories", body)  # type: ignore[no-any-return]


# --- entities -------------------------------------------------------------------------------

@route(router, "list_entities", tags=["entities"])
def list_entities(request: Request, body: EntitiesRequest) -> list[dict[str, Any]]:
    """The named things a scope's memories mention, most mentioned first."""
    return _run(request, "list_entities", body)  # type: ignore[no-any-return]


@route(router, "get_entity", tags=["entities"])
def get_entity(request: Request, body: EntityRequest) -> dict[str, Any]:
    """One entity with its aliases, the memories that mention it and its related entities."""
    return _run(request, "get_entity", body)  # type: ignore[no-any-return]


# --- retrieval ------------------------------------------------------------------------------

@route(router, "search_memories", response_model=list[HitOut], tags=["retrieval"])
def search(request: Request, body: SearchRequest) -> list[dict[str, Any]]:
    """The k best memories, each with its recency, importance and relevance explained."""
    return _run(request, "search_memories", body)  # type: ignore[no-any-return]


@route(router, "memory_context", response_model=ContextOut, tags=["retrieval"])
def context(request: Request, body: ContextRequest) -> dict[str, Any]:
    """The best memories that fit a token budget, rendered one per line."""
    return _run(request, "memory_context", body)  # type: ignore[no-any-return]


@route(router, "stats", tags=["retrieval"])
def stats(request: Request, namespace: str | None = None) -> dict[str, Any]:
    """Counts of the namespace's records by kind, and the store's settings."""
    return _run(request, "stats",  # type: ignore[no-any-return]
                _req(NamespaceRequest, namespace=namespace))


# --- transfer -------------------------------------------------------------------------------

@route(router, "export", response_class=PlainTextResponse, tags=["transfer"])
def export(request: Request, namespace: str | None = None,
           with_embeddings: bool = Query(False)) -> PlainTextResponse:
    """The namespace's records as JSON Lines (every field)."""
    text = _run(request, "export", _req(ExportRequest, namespace=namespace,
                                        with_embeddings=with_embeddings))
    return PlainTextResponse(text, media_type="application/x-ndjson")


@route(router, "import", tags=["transfer"])
async def import_records(request: Request, skip_existing: bool = Query(False),
                         namespace: str | None = None) -> dict[str, Any]:
    """Load JSON Lines, all or nothing (admin of every namespace the records go to): records
    written by /v1/export (they have an ``id``), or new memories, a ``text`` with any of
    ``add``'s fields, stored in ``namespace`` (the key's) unless a line names its own. Where
    keys are required, an exported record whose id its namespace does not hold gets an id of
    the namespace's own, derived from the one in the file; the answer's ``ids`` maps them."""
    raw = (await request.body()).decode("utf-8", errors="strict")
    body = _req(ImportRequest, namespace=namespace, skip_existing=skip_existing, text=raw)
    # parsing and writing run in a thread, never on the loop
    return await anyio.to_thread.run_sync(
        lambda: _run(request, "import", body))


# --- cognition, episodes, learning -----------------------------------------------------------

@route(router, "reflect", response_model=list[RecordOut], tags=["cognition"])
def reflect(request: Request, namespace: str | None = None) -> list[dict[str, Any]]:
    """Synthesise insights from recent memories now."""
    return _run(request, "reflect",  # type: ignore[no-any-return]
                _req(NamespaceRequest, namespace=namespace))


@route(router, "consolidate", response_model=list[ChangeOut], tags=["cognition"])
def consolidate(request: Request, namespace: str | None = None) -> list[dict[str, Any]]:
    """Merge near-duplicate memories into one each."""
    return _run(request, "consolidate",  # type: ignore[no-any-return]
                _req(NamespaceRequest, namespace=namespace))


def _episodes(request: Request, namespace: str | None, agent_id: str,
              need: str) -> EpisodeMemory:
    mem, ns = _ns(request, namespace, need)
    return EpisodeMemory.of(mem, agent_id=agent_id, namespace=ns)


@route(router, "record_episode", response_model=RecordOut, status_code=201, tags=["episodes"])
def record_episode(request: Request, body: EpisodeRequest) -> dict[str, Any]:
    """Record a finished training episode."""
    return _run(request, "record_episode", body)  # type: ignore[no-any-return]


@route(router, "episode_context", tags=["episodes"])
def episode_context(request: Request, agent_id: str = "default", task_id: str | None = None,
                    budget: int | None = Query(None, ge=0, le=100_000),
                    namespace: str | None = None) -> dict[str, Any]:
    """Lessons from past episodes, for the top of a system prompt."""
    return _run(request, "episode_context", _req(  # type: ignore[no-any-return]
        EpisodeContextRequest, agent_id=agent_id, task_id=task_id, namespace=namespace,
        **_named(request, "budget", budget, "max_tokens")))


@route(router, "episode_summary", tags=["episodes"])
def episode_summary(request: Request, agent_id: str = "default",
                    namespace: str | None = None) -> dict[str, Any]:
    """Totals, rules per task, top mistake cards and mean scores."""
    return _run(request, "episode_summary",  # type: ignore[no-any-return]
                _req(EpisodeSummaryRequest, agent_id=agent_id, namespace=namespace))


@route(router, "learn_outcome", status_code=201, tags=["learning"])
def learn(request: Request, body: LearnRequest) -> dict[str, Any]:
    """Record how an attempt went; heuristics and anti-patterns follow from repeats."""
    return _run(request, "learn_outcome", body)  # type: ignore[no-any-return]


@route(router, "task_advice", tags=["learning"])
def advice(request: Request, body: AdviceRequest) -> dict[str, Any]:
    """Advice for a task from what was learned, by section, and as a prompt."""
    return _run(request, "task_advice", body)  # type: ignore[no-any-return]


# --- agents (tiers) --------------------------------------------------------------------------

def _tiers(request: Request, namespace: str | None, need: str) -> TieredMemory:
    """The namespace's tiers, shared with MCP and library code (``TieredMemory.of``)."""
    mem, ns = _ns(request, namespace, need)
    return TieredMemory.of(mem, ns, redis_url=request.app.state.redis_url)


@route(router, "store_agent_memory", status_code=201, tags=["agents"])
def store_agent_entry(request: Request, body: AgentEntryRequest) -> dict[str, Any]:
    """Store an agent's state, action or interaction at a step (durable, then STM)."""
    return _run(request, "store_agent_memory", body)  # type: ignore[no-any-return]


@route(router, "agent_range", tags=["agents"])
def agent_range(request: Request, agent_id: str, start: int = Query(..., ge=0, le=MAX_INT),
                end: int = Query(..., ge=0, le=MAX_INT), kind: str | None = None,
                namespace: str | None = None) -> list[dict[str, Any]]:
    """The agent's entries with start <= step <= end, oldest first, each once."""
    return _run(request, "agent_range", _req(  # type: ignore[no-any-return]
        AgentRangeRequest, agent_id=agent_id, start=start, end=end, namespace=namespace,
        **_named(request, "kind", kind, "memory_type")))


@route(router, "similar_agent_states", tags=["agents"])
def agent_similar(request: Request, agent_id: str,
                  body: AgentSimilarRequest) -> list[dict[str, Any]]:
    """The agent's entries nearest to a state, field by field in the state's own units, with
    their similarity (1.0: identical; docs/tiers.md, "Similar states")."""
    return _run(request, "similar_agent_states",  # type: ignore[no-any-return]
                _req(AgentSimilarOp, agent_id=agent_id, **body.model_dump()))


# --- the inspector's views ------------------------------------------------------------------

@route(router, "namespaces", tags=["inspect"])
def namespaces(request: Request) -> dict[str, Any]:
    """The namespaces this key may read (for an open server: every namespace in the store)."""
    return _run(request, "namespaces", NoFields())  # type: ignore[no-any-return]


@route(router, "inspect_records", tags=["inspect"])
def inspect_records(request: Request, body: InspectListRequest) -> dict[str, Any]:
    """A page of records, newest first, each with its tier; filter by tier as well."""
    return _run(request, "inspect_records", body)  # type: ignore[no-any-return]


@route(router, "inspect_record", tags=["inspect"])
def inspect_record(request: Request, record_id: str, namespace: str | None = None
                   ) -> dict[str, Any]:
    """One record with its tier, history, the records it rests on (its provenance), the
    records that cite it, the older versions it replaces and what ``audit`` found about it."""
    return _run(request, "inspect_record",  # type: ignore[no-any-return]
                _req(InspectRecordRequest, record_id=record_id, namespace=namespace))


@route(router, "inspect_overview", tags=["inspect"])
def overview(request: Request, namespace: str | None = None,
             window: int = Query(20_000, ge=1, le=200_000)) -> dict[str, Any]:
    """What the plots show, over the newest ``window`` records: records over time by kind and
    by tier, episode scores per task, and the confidence of heuristics over time."""
    return _run(request, "inspect_overview",  # type: ignore[no-any-return]
                _req(OverviewRequest, namespace=namespace, window=window))
