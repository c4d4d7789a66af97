"""The MCP server: the engine's verbs as tools, with the same keys and namespaces as REST.

Over streamable HTTP each call is authenticated from its ``Authorization: Bearer <key>``
header; over stdio (what desktop agents and IDE assistants launch) the process acts for the
key in ``MEMSTREAM_API_KEY`` when keys exist, and openly otherwise. Errors come back as tool
errors whose text starts with the error type and its HTTP status (see ``errors.HTTP_STATUS``).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from pydantic import ValidationError

from .. import __version__
from ..episodes import EpisodeMemory
from ..errors import MemstreamError
from ..learning import Learner
from ..memory import Memory
from ..tiers import TieredMemory
from .auth import Principal, authenticate
from .errors import status_for
from .limits import Limiter
from .security import KeyPolicy

P = ParamSpec("P")
R = TypeVar("R")

INSTRUCTIONS = (
    "Long-term memory. Call search_memories before answering questions about the user, earlier "
    "sessions or past work; call add_memory for facts, preferences, decisions and outcomes "
    "worth keeping. memory_context returns the best memories that fit a token budget."
)


def _tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except MemstreamError as exc:
            raise ToolError(f"{type(exc).__name__} ({status_for(exc)}): {exc}") from exc
    return run


class _Server(MCPServer):
    """MCPServer whose every tool error reads ``<Type> (<HTTP status>): <message>``: the tools'
    own errors (see ``_tool_errors``), arguments that fail the input schema as ``InvalidInput
    (422)`` (naming the fields, never echoing the values), an unknown tool as ``NotFound
    (404)`` and a crash as ``MemstreamError (500)`` (its details stay in the server log)."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            raise UnexpectedToolError(f"MemstreamError (500): tool {name} failed; the server "
                                      "log has the details") from exc
        except ToolError as exc:
            if isinstance(exc.__cause__, ToolError):  # one of ours, already typed
                raise ToolError(str(exc.__cause__)) from None
            if isinstance(exc.__cause__, ValidationError):
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                    for e in exc.__cause__.errors()[:5])
                raise ToolError(f"InvalidInput (422): invalid arguments for {name}: "
                                f"{problems}") from None
            if self._tool_manager.get_tool(name) is None:
                raise ToolError(f"NotFound (404): no tool named {name!r}; list_tools shows "
                                "them") from None
            raise


def build_mcp(memory: Memory, *, stdio_key: str | None = None,
              redis_url: str | None = None, limiter: Limiter | None = None,
              policy: KeyPolicy | None = None) -> MCPServer:
    """An MCP server over ``memory`` (agent tiers in Redis when ``redis_url`` is given). Over
    HTTP, each tool call and resource read counts against its key's rate in ``limiter``, the
    same buckets the REST API uses. ``policy`` decides whether keys are required (by default:
    when one exists as the server starts; see ``security.KeyPolicy``)."""
    policy = policy or KeyPolicy(memory.store)
    server = _Server(name="memstream", instructions=INSTRUCTIONS, version=__version__)
    env_key = stdio_key if stdio_key is not None else os.environ.get("MEMSTREAM_API_KEY")

    def principal(ctx: Context) -> Principal:
        try:
            headers = ctx.headers
        except ValueError:
            headers = None
        if headers is None:  # stdio
            return authenticate(memory.store, env_key, required=policy.required)
        auth = headers.get("authorization") or headers.get("x-api-key")
        who = authenticate(memory.store, auth, required=policy.required)
        if limiter is not None:  # without keys the server listens on loopback only
            limiter.check(who.key_id or "local")
        return who

    def access(ctx: Context, namespace: str | None, need: str) -> tuple[str, Principal]:
        who = principal(ctx)
        ns = who.namespace_for(namespace, memory.config.namespace)
        who.authorize(ns, need)
        return ns, who

    def scope(ctx: Context, namespace: str | None, need: str) -> str:
        return access(ctx, namespace, need)[0]

    async def call(fn: Callable[[], R]) -> R:
        return await anyio.to_thread.run_sync(fn)

    @server.tool(description="Store a memory (a fact, preference, observation, decision or "
                 "outcome). Returns the stored record with its id.")
    @_tool_errors
    async def add_memory(content: str, ctx: Context, namespace: str | None = None,
                         user_id: str | None = None, agent_id: str | None = None,
                         kind: str = "observation", importance: float | None = None,
                         data: dict[str, Any] | None = None) -> dict[str, Any]:
        ns = scope(ctx, namespace, "write")
        rec = await call(lambda: memory.add(content, namespace=ns, user_id=user_id,
                                            agent_id=agent_id, kind=kind,
                                            importance=importance, data=data))
        return rec.to_dict()

    @server.tool(description="Find the memories most relevant to a query. Each hit has a score "
                 "and its recency, importance and relevance components.")
    @_tool_errors
    async def search_memories(query: str, ctx: Context, k: int = 10,
                              namespace: str | None = None, user_id: str | None = None,
                              agent_id: str | None = None, kinds: list[str] | None = None,
                              filters: dict[str, Any] | None = None,
                              weights: str | None = None) -> list[dict[str, Any]]:
        ns, who = access(ctx, namespace, "read")
        touch = who.role != "read"  # a read key leaves recency as it was
        hits = await call(lambda: memory.search(query, k=k, namespace=ns, user_id=user_id,
                                                agent_id=agent_id, kinds=kinds, filters=filters,
                                                weights=weights, touch=touch))
        return [h.to_dict() for h in hits]

    @server.tool(description="Read one memory by id.")
    @_tool_errors
    async def get_memory(memory_id: str, ctx: Context,
                         namespace: str | None = None) -> dict[str, Any]:
        ns = scope(ctx, namespace, "read")
        return (await call(lambda: memory.get(memory_id, namespace=ns))).to_dict()

    @server.tool(description="Change a memory's text, importance, data or metadata; the old "
                 "values are kept in its history.")
    @_tool_errors
    async def update_memory(memory_id: str, ctx: Context, text: str | None = None,
                            importance: float | None = None,
                            data: dict[str, Any] | None = None,
                            namespace: str | None = None) -> dict[str, Any]:
        ns = scope(ctx, namespace, "write")
        rec = await call(lambda: memory.update(memory_id, text=text, importance=importance,
                                               data=data, namespace=ns))
        return rec.to_dict()

    @server.tool(description="Delete a memory from every index. Its history stays unless "
                 "erase is true: then its text, payload and history are removed everywhere.")
    @_tool_errors
    async def delete_memory(memory_id: str, ctx: Context, namespace: str | None = None,
                            erase: bool = False) -> dict[str, Any]:
        ns = scope(ctx, namespace, "write")
        await call(lambda: memory.delete(memory_id, namespace=ns, erase=erase))
        return {"deleted": memory_id}

    @server.tool(description="Erase everything of one user (admin): every memory's text, "
                 "payload, vectors and history, also of memories deleted earlier.")
    @_tool_errors
    async def forget_user(user_id: str, ctx: Context,
                          namespace: str | None = None) -> dict[str, Any]:
        ns = scope(ctx, namespace, "admin")
        count = await call(lambda: memory.delete_all(namespace=ns, user_id=user_id, erase=True))
        return {"erased": count}

    @server.tool(description="The best memories for a query that fit in a token budget, as "
                 "text ready for a prompt.")
    @_tool_errors
    async def memory_context(query: str, ctx: Context, budget: int = 512,
                             namespace: str | None = None, user_id: str | None = None,
                             agent_id: str | None = None) -> dict[str, Any]:
        ns, who = access(ctx, namespace, "read")
        result = await call(lambda: memory.context(query, budget=budget, namespace=ns,
                                                   user_id=user_id, agent_id=agent_id,
                                                   touch=who.role != "read"))
        return {"text": result.text, "tokens": result.tokens,
                "ids": [h.record.id for h in result.hits]}

    @server.tool(description="Record a finished training episode: task_id, score (0-1), steps, "
                 "trajectory_summary, mistakes, successes, mistake_cards.")
    @_tool_errors
    async def record_episode(episode: dict[str, Any], ctx: Context, agent_id: str = "default",
                             namespace: str | None = None) -> dict[str, Any]:
        ns = scope(ctx, namespace, "write")
        em = EpisodeMemory.of(memory, agent_id=agent_id, namespace=ns)
        return (await call(lambda: em.record(episode))).to_dict()

    @server.tool(description="Lessons from past episodes, for the top of a system prompt.")
    @_tool_errors
    async def episode_context(ctx: Context, agent_id: str = "default",
                              task_id: str | None = None, max_tokens: int | None = None,
                              namespace: str | None = None) -> str:
        ns = scope(ctx, namespace, "read")
        em = EpisodeMemory.of(memory, agent_id=agent_id, namespace=ns)
        return await call(lambda: em.context(task_id, max_tokens=max_tokens))

    @server.tool(description="Record how an attempt at a task went (outcome true or false) and "
                 "the strategy used; repeated outcomes become heuristics and anti-patterns.")
    @_tool_errors
    async def learn_outcome(agent: str, project_id: str, task: str, outcome: bool,
                            strategy_used: str, ctx: Context, error_message: str | None = None,
                            namespace: str | None = None) -> dict[str, Any]:
        ns = scope(ctx, namespace, "write")
        learner = Learner.of(memory, namespace=ns)
        out = await call(lambda: learner.learn(agent, project_id, task, outcome, strategy_used,
                                               error_message=error_message))
        return {"id": out.id, **out.payload()}

    @server.tool(description="Advice for a task from learned heuristics, anti-patterns, "
                 "knowledge and preferences, as a compact prompt section.")
    @_tool_errors
    async def task_advice(task: str, agent: str, ctx: Context, user_id: str | None = None,
                          namespace: str | None = None) -> str:
        ns = scope(ctx, namespace, "read")
        learner = Learner.of(memory, namespace=ns)
        return (await call(lambda: learner.retrieve(task, agent, user_id=user_id))).to_prompt()

    def tiers_for(ns: str) -> TieredMemory:  # shared with REST and library code
        return TieredMemory.of(memory, ns, redis_url=redis_url)

    @server.tool(description="Store an agent's state, action or interaction (a dict) at a "
                 "simulation step, with a priority in [0, 1].")
    @_tool_errors
    async def store_agent_memory(agent_id: str, contents: dict[str, Any], step: int,
                                 ctx: Context, memory_type: str = "state",
                                 priority: float = 1.0,
                                 namespace: str | None = None) -> dict[str, Any]:
        ns = scope(ctx, namespace, "write")
        return await call(lambda: tiers_for(ns).store(agent_id, memory_type, contents, step,
                                                      priority))

    @server.tool(description="An agent's memories nearest to a state (a dict), field by field "
                 "in the state's own units, with their similarity (1.0: identical), across its "
                 "short, intermediate and long-term tiers.")
    @_tool_errors
    async def similar_agent_states(agent_id: str, state: dict[str, Any], ctx: Context,
                                   k: int = 5, namespace: str | None = None
                                   ) -> list[dict[str, Any]]:
        ns = scope(ctx, namespace, "read")
        hits = await call(lambda: tiers_for(ns).similar(agent_id, state, k=k))
        return [dict(entry, similarity=score) for entry, score in hits]

    @server.resource("memstream://{namespace}/stats", mime_type="application/json",
                     description="Counts of a namespace's records by kind.")
    async def namespace_stats(namespace: str, ctx: Context) -> str:
        try:
            ns = scope(ctx, namespace, "read")
            return json.dumps(await call(lambda: memory.stats(namespace=ns)))
        except MemstreamError as exc:
            raise ResourceError(f"{type(exc).__name__} ({status_for(exc)}): {exc}") from exc

    return server
