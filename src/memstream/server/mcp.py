"""The MCP server: the engine's verbs as tools, with the same keys and namespaces as REST.

Over streamable HTTP each call is authenticated from its ``Authorization: Bearer <key>``
header; over stdio (what desktop agents and IDE assistants launch) the process acts for the
key in ``MEMSTREAM_API_KEY`` when keys exist, and openly otherwise. Errors come back as tool
errors whose text starts with the error type and its HTTP status (see ``errors.HTTP_STATUS``).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, ParamSpec, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from pydantic import AliasChoices, Field, ValidationError

from .. import __version__
from ..core.aliases import unalias
from ..engine.memory import Memory
from ..errors import InvalidInput, MemstreamError
from .auth import Principal, authenticate
from .catalog import OPERATIONS, Call, Operation
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
            arguments = unalias(dict(arguments or {}), _OLD_NAMES.get(name, {}))
        except InvalidInput as exc:
            raise ToolError(f"InvalidInput (422): invalid arguments for {name}: {exc}") from None
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


def _old_names(op: Operation) -> dict[str, str]:
    """{old name: name} of the operation's renamed parameters (their ``AliasChoices``): a tool
    lists only the name, and a call with the old one still works, as over REST."""
    renamed = {}
    for name, field in op.request.model_fields.items():
        if isinstance(field.validation_alias, AliasChoices):
            renamed.update({old: name for old in field.validation_alias.choices
                            if isinstance(old, str) and old != name})
    return renamed


_OLD_NAMES = {op.name: _old_names(op) for op in OPERATIONS if op.tool}


def _annotated(tp: Any, *extra: Any) -> Any:
    """``Annotated[tp, *extra]`` for a type known only at run time."""
    return Annotated.__class_getitem__((tp, *extra))  # type: ignore[attr-defined]


def _tool(op: Operation, access: Callable[[Context, str | None, str], tuple[str, Principal]],
          call: Callable[[Callable[[], Any]], Awaitable[Any]], memory: Memory,
          redis_url: str | None) -> Callable[..., Awaitable[Any]]:
    """The tool of one catalog operation: its parameters are the request's fields (with their
    descriptions, enums and limits), its result the operation's compact form."""
    fields = op.request.model_fields

    async def run(**arguments: Any) -> Any:
        ctx = arguments.pop("ctx")
        ns, who = access(ctx, arguments.get("namespace"), op.role)
        try:
            request = op.request(**arguments)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                                 for e in exc.errors()[:5])
            raise InvalidInput(f"invalid arguments for {op.name}: {problems}") from None
        where = Call(memory, ns, who.role != "read", redis_url, who)
        return op.compact(await call(lambda: op.run(where, request)))

    params = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    annotations: dict[str, Any] = {"ctx": Context, "return": op.returns}
    for name, field in fields.items():
        kind = _annotated(field.annotation, *field.metadata,
                          Field(description=field.description))
        default = inspect.Parameter.empty if field.is_required() else field.get_default(
            call_default_factory=True)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=kind))
        annotations[name] = kind
    run.__name__ = run.__qualname__ = op.name
    run.__doc__ = op.summary
    run.__signature__ = inspect.Signature(params, return_annotation=op.returns)  # type: ignore[attr-defined]
    run.__annotations__ = annotations
    return run


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

    for op in (op for op in OPERATIONS if op.tool):  # the catalog's tools
        server.add_tool(_tool_errors(_tool(op, access, call, memory, redis_url)), name=op.name,
                        description=op.summary)

    @server.tool(description="Erase everything of one user (admin): every memory's text, "
                 "payload, vectors and history, also of memories deleted earlier.")
    @_tool_errors
    async def forget_user(
            user_id: Annotated[str, Field(description="The user whose memories to erase.")],
            ctx: Context,
            namespace: Annotated[str | None, Field(
                description="The namespace to erase them from (default: the key's first "
                            "one, or the server's default namespace).")] = None
    ) -> dict[str, Any]:
        ns = scope(ctx, namespace, "admin")
        count = await call(lambda: memory.delete_all(namespace=ns, user_id=user_id, erase=True))
        pending = await call(memory.deletions.scrub_pending)
        # never "erased" alone while the text is still on disk: what holds it, and that it is
        # finished in the background
        return {"erased": count, "scrub_pending": pending} if pending else {"erased": count}

    @server.resource("memstream://{namespace}/stats", mime_type="application/json",
                     description="Counts of a namespace's records by kind.")
    async def namespace_stats(namespace: str, ctx: Context) -> str:
        try:
            ns = scope(ctx, namespace, "read")
            return json.dumps(await call(lambda: memory.stats(namespace=ns)))
        except MemstreamError as exc:
            raise ResourceError(f"{type(exc).__name__} ({status_for(exc)}): {exc}") from exc

    return server
