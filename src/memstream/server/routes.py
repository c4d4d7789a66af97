"""The REST routes under /v1. Each route resolves the caller's namespace, checks the key's
role, makes one engine call and returns its result as JSON."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse

from .. import transfer
from .._types import Hit, MemoryChange, Record
from ..episodes import EpisodeMemory
from ..learning import Learner
from ..memory import Memory
from ..tiers import TieredMemory
from .auth import Principal
from .models import (
    MAX_INT,
    AddManyRequest,
    AddRequest,
    AdviceRequest,
    AgentEntryRequest,
    AgentSimilarRequest,
    ChangeOut,
    ContextOut,
    ContextRequest,
    DeleteAllRequest,
    EpisodeRequest,
    HitOut,
    LearnRequest,
    ListRequest,
    MessagesRequest,
    RecordOut,
    SearchRequest,
    UpdateRequest,
)

router = APIRouter(prefix="/v1")


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


def _rec(r: Record) -> dict[str, Any]:
    return r.to_dict()


def _hit(h: Hit) -> dict[str, Any]:
    return h.to_dict()


def _change(c: MemoryChange) -> dict[str, Any]:
    return {"event": c.event, "record": _rec(c.record),
            "previous_id": c.previous.id if c.previous else None}


def _scope(body: Any) -> dict[str, Any]:
    return {k: getattr(body, k) for k in ("user_id", "agent_id", "run_id")}


# --- memories -------------------------------------------------------------------------------

@router.post("/memories", response_model=RecordOut, status_code=201, tags=["memories"])
def add(request: Request, body: AddRequest) -> dict[str, Any]:
    """Store one memory (durable when the answer arrives)."""
    mem, ns = _ns(request, body.namespace, "write")
    fields = body.model_dump(exclude={"namespace", "content"})
    return _rec(mem.add(body.content, namespace=ns, **fields))


@router.post("/memories/batch", response_model=list[RecordOut], status_code=201,
             tags=["memories"])
def add_many(request: Request, body: AddManyRequest) -> list[dict[str, Any]]:
    """Store many memories in one transaction: all or none."""
    mem, ns = _ns(request, body.namespace, "write")
    return [_rec(r) for r in mem.add_many([i.model_dump() for i in body.items], namespace=ns)]


@router.post("/memories/messages", response_model=list[ChangeOut], status_code=201,
             tags=["memories"])
def add_messages(request: Request, body: MessagesRequest) -> list[dict[str, Any]]:
    """Store a conversation: facts extracted and reconciled when an LLM is configured and
    ``infer`` is true, the messages as they are otherwise."""
    mem, ns = _ns(request, body.namespace, "write")
    changes = mem.add([m.model_dump() for m in body.messages], namespace=ns, infer=body.infer,
                      **_scope(body))
    return [_change(c) for c in changes]


@router.post("/memories/list", response_model=list[RecordOut], tags=["memories"])
def list_memories(request: Request, body: ListRequest) -> list[dict[str, Any]]:
    """Records matching a selection, oldest first (``order``: created, -created, step)."""
    mem, ns = _ns(request, body.namespace, "read")
    fields = body.model_dump(exclude={"namespace"})
    return [_rec(r) for r in mem.get_all(namespace=ns, **fields)]


@router.get("/memories/{record_id}", response_model=RecordOut, tags=["memories"])
def get(request: Request, record_id: str, namespace: str | None = None) -> dict[str, Any]:
    mem, ns = _ns(request, namespace, "read")
    return _rec(mem.get(record_id, namespace=ns))


@router.patch("/memories/{record_id}", response_model=RecordOut, tags=["memories"])
def update(request: Request, record_id: str, body: UpdateRequest,
           namespace: str | None = None) -> dict[str, Any]:
    """Change a record; the old values go to its history."""
    mem, ns = _ns(request, namespace, "write")
    return _rec(mem.update(record_id, namespace=ns, **body.model_dump()))


@router.delete("/memories/{record_id}", tags=["memories"])
def delete(request: Request, record_id: str, namespace: str | None = None,
           erase: bool = Query(False, description="Also remove its text, payload and history "
                               "from every store and index (only the id and time stay).")
           ) -> dict[str, Any]:
    """Delete a record (its history stays unless ``erase``)."""
    mem, ns = _ns(request, namespace, "write")
    mem.delete(record_id, namespace=ns, erase=erase)
    return {"deleted": record_id}


@router.post("/memories/delete", tags=["memories"])
def delete_all(request: Request, body: DeleteAllRequest) -> dict[str, Any]:
    """Delete every record a selection matches in one namespace (admin)."""
    mem, ns = _ns(request, body.namespace, "admin")
    return {"deleted": mem.delete_all(namespace=ns, kinds=body.kinds, filters=body.filters,
                                      erase=body.erase, **_scope(body))}


@router.get("/memories/{record_id}/history", tags=["memories"])
def history(request: Request, record_id: str,
            namespace: str | None = None) -> list[dict[str, Any]]:
    mem, ns = _ns(request, namespace, "read")
    return [e.to_dict() for e in mem.history(record_id, namespace=ns)]


# --- retrieval ------------------------------------------------------------------------------

@router.post("/search", response_model=list[HitOut], tags=["retrieval"])
def search(request: Request, body: SearchRequest) -> list[dict[str, Any]]:
    """The k best memories, each with its recency, importance and relevance explained."""
    mem, ns = _ns(request, body.namespace, "read")
    fields = body.model_dump(exclude={"namespace", "query"})
    fields["touch"] = body.touch and _may_touch(request)
    return [_hit(h) for h in mem.search(body.query, namespace=ns, **fields)]


@router.post("/context", response_model=ContextOut, tags=["retrieval"])
def context(request: Request, body: ContextRequest) -> dict[str, Any]:
    """The best memories that fit a token budget, rendered one per line."""
    mem, ns = _ns(request, body.namespace, "read")
    fields = body.model_dump(exclude={"namespace", "query", "budget"})
    fields["touch"] = body.touch and _may_touch(request)
    ctx = mem.context(body.query, budget=body.budget, namespace=ns, **fields)
    return {"text": ctx.text, "tokens": ctx.tokens, "hits": [_hit(h) for h in ctx.hits]}


@router.get("/stats", tags=["retrieval"])
def stats(request: Request, namespace: str | None = None) -> dict[str, Any]:
    mem, ns = _ns(request, namespace, "read")
    return mem.stats(namespace=ns)


# --- transfer -------------------------------------------------------------------------------

@router.get("/export", response_class=PlainTextResponse, tags=["transfer"])
def export(request: Request, namespace: str | None = None,
           with_embeddings: bool = Query(False)) -> PlainTextResponse:
    """The namespace's records as JSON Lines (every field)."""
    mem, ns = _ns(request, namespace, "read")
    out = io.StringIO()
    transfer.export_jsonl(mem, out, namespace=ns, with_embeddings=with_embeddings)
    return PlainTextResponse(out.getvalue(), media_type="application/x-ndjson")


@router.post("/import", tags=["transfer"])
async def import_records(request: Request, skip_existing: bool = Query(False)
                         ) -> dict[str, Any]:
    """Load JSON Lines written by /v1/export, all or nothing (admin of every namespace named)."""
    mem, who = _ctx(request)
    raw = (await request.body()).decode("utf-8", errors="strict")
    records = transfer.parse_lines(raw.splitlines(), mem)
    for ns in sorted({r.namespace for r in records}):
        who.authorize(ns, "admin")
    on_conflict = "skip" if skip_existing else "error"
    return {"imported": transfer.import_jsonl(mem, [], on_conflict=on_conflict,
                                              records=records)}


# --- cognition, episodes, learning -----------------------------------------------------------

@router.post("/reflect", response_model=list[RecordOut], tags=["cognition"])
def reflect(request: Request, namespace: str | None = None) -> list[dict[str, Any]]:
    mem, ns = _ns(request, namespace, "admin")
    return [_rec(r) for r in mem.reflect(namespace=ns)]


@router.post("/consolidate", response_model=list[ChangeOut], tags=["cognition"])
def consolidate(request: Request, namespace: str | None = None) -> list[dict[str, Any]]:
    mem, ns = _ns(request, namespace, "admin")
    return [_change(c) for c in mem.consolidate(namespace=ns)]


def _episodes(request: Request, namespace: str | None, agent_id: str,
              need: str) -> EpisodeMemory:
    mem, ns = _ns(request, namespace, need)
    return EpisodeMemory.of(mem, agent_id=agent_id, namespace=ns)


@router.post("/episodes", response_model=RecordOut, status_code=201, tags=["episodes"])
def record_episode(request: Request, body: EpisodeRequest) -> dict[str, Any]:
    return _rec(_episodes(request, body.namespace, body.agent_id, "write").record(body.episode))


@router.get("/episodes/context", tags=["episodes"])
def episode_context(request: Request, agent_id: str = "default", task_id: str | None = None,
                    max_tokens: int | None = Query(None, ge=0, le=100_000),
                    namespace: str | None = None) -> dict[str, Any]:
    em = _episodes(request, namespace, agent_id, "read")
    return {"context": em.context(task_id, max_tokens=max_tokens)}


@router.get("/episodes/summary", tags=["episodes"])
def episode_summary(request: Request, agent_id: str = "default",
                    namespace: str | None = None) -> dict[str, Any]:
    return _episodes(request, namespace, agent_id, "read").summary()


def _learner(request: Request, namespace: str | None, need: str) -> Learner:
    mem, ns = _ns(request, namespace, need)
    return Learner.of(mem, namespace=ns)


@router.post("/learning/outcomes", status_code=201, tags=["learning"])
def learn(request: Request, body: LearnRequest) -> dict[str, Any]:
    """Record how an attempt went; heuristics and anti-patterns follow from repeats."""
    fields = body.model_dump(exclude={"namespace"})
    out = _learner(request, body.namespace, "write").learn(**fields)
    return {"id": out.id, **out.payload()}


@router.post("/learning/advice", tags=["learning"])
def advice(request: Request, body: AdviceRequest) -> dict[str, Any]:
    ctx = _learner(request, body.namespace, "read").retrieve(
        body.task, body.agent, user_id=body.user_id, top_k=body.top_k)
    section: Callable[[list[Any]], list[dict[str, Any]]] = \
        lambda items: [{"id": i.id, **i.payload()} for i in items]  # noqa: E731
    return {"heuristics": section(ctx.heuristics), "anti_patterns": section(ctx.anti_patterns),
            "outcomes": section(ctx.outcomes), "preferences": section(ctx.preferences),
            "knowledge": section(ctx.knowledge), "prompt": ctx.to_prompt()}


# --- agents (tiers) --------------------------------------------------------------------------

def _tiers(request: Request, namespace: str | None, need: str) -> TieredMemory:
    """The namespace's tiers, shared with MCP and library code (``TieredMemory.of``)."""
    mem, ns = _ns(request, namespace, need)
    return TieredMemory.of(mem, ns, redis_url=request.app.state.redis_url)


@router.post("/agents/entries", status_code=201, tags=["agents"])
def store_agent_entry(request: Request, body: AgentEntryRequest) -> dict[str, Any]:
    """Store an agent's state, action or interaction at a step (durable, then STM)."""
    tm = _tiers(request, body.namespace, "write")
    return tm.store(body.agent_id, body.memory_type, body.contents, body.step, body.priority)


@router.get("/agents/{agent_id}/range", tags=["agents"])
def agent_range(request: Request, agent_id: str, start: int = Query(..., ge=0, le=MAX_INT),
                end: int = Query(..., ge=0, le=MAX_INT), memory_type: str | None = None,
                namespace: str | None = None) -> list[dict[str, Any]]:
    """The agent's entries with start <= step <= end, oldest first, each once."""
    return _tiers(request, namespace, "read").step_range(agent_id, start, end, memory_type)


@router.post("/agents/{agent_id}/similar", tags=["agents"])
def agent_similar(request: Request, agent_id: str,
                  body: AgentSimilarRequest) -> list[dict[str, Any]]:
    """The agent's entries nearest to a state, field by field in the state's own units, with
    their similarity (1.0: identical; docs/tiers.md, "Similar states")."""
    tm = _tiers(request, body.namespace, "read")
    return [dict(entry, similarity=score) for entry, score in
            tm.similar(agent_id, body.state, k=body.k, kind=body.memory_type)]
