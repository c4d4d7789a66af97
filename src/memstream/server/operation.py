"""An operation of the server's catalog (``Operation``) and what it runs with (``Call``),
the decorator of a REST route, and the compact forms of records and hits MCP answers with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import APIRouter
from pydantic import BaseModel

from .._types import Hit, Record
from ..core.routes import ROUTES

if TYPE_CHECKING:
    from ..engine.memory import Memory
    from .auth import Principal

__all__ = ["Call", "Operation", "compact_hit", "compact_record", "iso", "route", "same"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Call:
    """What one operation runs with: the engine, the namespace the key may use, whether the
    key may mark hits as accessed, and where the agents' tiers live."""

    memory: Memory
    namespace: str
    touch: bool
    redis_url: str | None = None
    #: the caller (its key's namespaces and role): for the operations that reach beyond one
    #: namespace (an import's records name their own; the namespaces a key may read)
    who: Principal | None = None


@dataclass(frozen=True)
class Operation:
    name: str  #: the MCP tool's name
    summary: str
    request: type[BaseModel]
    role: str  #: read, write or admin
    run: Callable[[Call, Any], Any]
    full: Callable[[Any], Any]  #: the result as REST returns it
    compact: Callable[[Any], Any]  #: the result as MCP returns it
    returns: Any = dict[str, Any]  #: the type of the compact result (MCP's output schema)
    #: whether MCP offers it as a tool: a file's text, an event stream and the inspector's
    #: views are REST's (and ``Client``'s) alone
    tool: bool = True
    #: the request field REST takes as the request's raw body (an import's JSON Lines)
    raw_body: str | None = None

    @property
    def method(self) -> str:
        """The REST route's method (``core.routes.ROUTES``, under the operation's name)."""
        return ROUTES[self.name].method

    @property
    def path(self) -> str:
        """The REST route's path under /v1; ``{name}`` segments are request fields."""
        return ROUTES[self.name].path


def route(router: APIRouter, name: str, **settings: Any) -> Callable[[F], F]:
    """The decorator of the REST route ``name`` (``core.routes.ROUTES``): its method and path."""
    r = ROUTES[name]
    return router.api_route(r.path, methods=[r.method], **settings)


def iso(t: float | None) -> str | None:
    return None if t is None else \
        datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def compact_record(r: Record) -> dict[str, Any]:
    """A record for an LLM: what it says and the few fields that place it."""
    out: dict[str, Any] = {"id": r.id, "text": r.text, "kind": r.kind,
                           "created_at": iso(r.created_at),
                           "importance": round(r.importance, 3)}
    for key in ("user_id", "agent_id", "run_id", "step", "superseded_by", "event"):
        if getattr(r, key) is not None:
            out[key] = getattr(r, key)
    for key in ("updated_at", "invalidated_at"):
        if getattr(r, key) is not None:
            out[key] = iso(getattr(r, key))
    if r.data:
        out["data"] = r.to_dict()["data"]
    if r.metadata:
        out["metadata"] = r.to_dict()["metadata"]
    return out


def compact_hit(h: Hit) -> dict[str, Any]:
    return {**compact_record(h.record), "score": round(h.score, 4)}


def same(x: Any) -> Any:
    """A result that needs no other form."""
    return x
