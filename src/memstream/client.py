"""``Client``: the ``Memory`` API over HTTP, for programs that talk to a memstream server.

    >>> # client = Client("http://127.0.0.1:8765", api_key="ms_...")
    >>> # client.add("Alice prefers green tea", user_id="alice")

Every call goes through one function (``Client._send``) that places its fields in the route's
path, query string or body as ``memstream.core.routes.ROUTES`` declares the route.
Methods take the same arguments as ``Memory`` and return the same types (``Record``, ``Hit``,
``Context``, ``HistoryEntry``, ``MemoryChange``). Server errors come back as the same exception
classes (``NotFound``, ``InvalidInput``, ``ScopeViolation``...), chosen by the error body's type.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, NoReturn, Unpack

from . import errors as _errors
from ._types import (
    Entity,
    EntityProfile,
    Explanation,
    Finding,
    HistoryEntry,
    Hit,
    MemoryChange,
    Record,
    Relation,
)
from .config import CONTEXT_MIN_RELEVANCE
from .core.aliases import renamed
from .core.clock import TimeLike, epoch_times
from .core.routes import request
from .engine.memory import Context
from .errors import BackendUnavailable, InvalidInput, MemstreamError, MissingDependency
from .scope import AddArgs, Query, Scope, SearchArgs, SelectArgs, resolve, split_add

__all__ = ["Client"]


def _record(raw: Mapping[str, Any]) -> Record:
    return Record.from_dict(dict(raw))


def _hit(raw: Mapping[str, Any]) -> Hit:
    e = dict(raw["explain"])
    w = e.pop("weights")
    e["weights"] = (w["recency"], w["importance"], w["relevance"])
    for key in ("updates", "newer", "via", "stages"):
        e[key] = tuple(e.get(key, ()))
    return Hit(_record(raw["record"]), raw["score"], Explanation(**e))


def _clean(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


#: seconds since the epoch, ISO 8601 or a datetime (sent as ISO 8601), as ``Memory`` takes
Time = TimeLike


def _time(t: TimeLike | None) -> float | int | str | None:
    return t.isoformat() if isinstance(t, datetime) else t


def _wire(scope: Scope, query: Query | None = None) -> dict[str, Any]:
    """The flat JSON fields of a scope and a query, as the REST API takes them (a query's
    text as ``query``; datetimes as ISO 8601)."""
    out: dict[str, Any] = {"namespace": scope.namespace, "user_id": scope.user_id,
                           "agent_id": scope.agent_id, "run_id": scope.run_id}
    if query is not None:
        kinds = query.kinds
        out.update(query=query.text,
                   kinds=[kinds] if isinstance(kinds, str) else
                   list(kinds) if kinds is not None else None,
                   filters=dict(query.filters) if query.filters is not None else None,
                   since=_time(query.since), until=_time(query.until),
                   step_range=list(query.step_range) if query.step_range else None,
                   as_of=_time(query.as_of))
    return out


def _search_body(query: str | Query, scope: Scope | None, flat: Mapping[str, Any],
                 ranking: Mapping[str, Any]) -> dict[str, Any]:
    """A search's or a context's body: its scope, its query and how it ranks."""
    whose = resolve(Scope, scope, **{k: flat[k] for k in SCOPE if k in flat})
    which = resolve(Query, query if isinstance(query, Query) else Query(text=query),
                    **{k: v for k, v in flat.items() if k not in SCOPE})
    if which.text is None:
        raise InvalidInput("a search needs the text to look for: search(\"...\") or "
                           "search(Query(\"...\", ...))")
    weights = ranking.get("weights")
    return _clean({**_wire(whose, which), **ranking, "now": _time(ranking.get("now")),
                   "weights": weights if isinstance(weights, str | Mapping) or weights is None
                   else list(weights)})


SCOPE = ("namespace", "user_id", "agent_id", "run_id")


class Client:
    """A memstream server's ``Memory`` API (synchronous, over one pooled HTTP connection)."""

    def __init__(self, url: str, api_key: str | None = None, *, timeout: float = 30.0) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise MissingDependency("the client needs httpx: pip install 'memstream[server]'"
                                    ) from exc
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout)
        self._httpx = httpx

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        try:
            resp = self._http.request(method, path, **kw)
        except self._httpx.HTTPError as exc:
            raise BackendUnavailable(f"the memstream server did not answer: {exc}") from exc
        if resp.status_code >= 400:
            self._raise(resp)
        if resp.headers.get("content-type", "").startswith("application/json"):
            return epoch_times(resp.json())  # the API's ISO 8601 times, as Python's numbers
        return resp.text

    def _send(self, name: str, /, *, raw: tuple[bytes, str] | None = None,
              **values: Any) -> Any:
        """Call the route ``name`` (``_routes.ROUTES``) with ``values``: in its path, its query
        string and its JSON body as the route places them (``raw``: a body of another media
        type instead, and that type)."""
        method, url, params, body = request(name, values)
        extra: dict[str, Any] = {"json": body} if raw is None else {
            "content": raw[0], "headers": {"content-type": raw[1]}}
        return self._call(method, url, params=params or None, **extra)

    @staticmethod
    def _raise(resp: Any) -> NoReturn:
        """Raise the error an answer of 400 or more carries, as its memstream class."""
        try:
            err = resp.json()["error"]
            cls = getattr(_errors, err["type"], None)
            message = err["message"]
        except (ValueError, KeyError, TypeError):
            cls, message = None, resp.text[:300]
        if not (isinstance(cls, type) and issubclass(cls, MemstreamError)):
            cls = BackendUnavailable if resp.status_code >= 500 else MemstreamError
        raise cls(message)

    # --- the Memory API ------------------------------------------------------------------------

    @renamed(content="text")
    def add(self, text: str | Sequence[Mapping[str, str]], **args: Unpack[AddArgs]) -> Any:
        """``Memory.add`` over REST (the keywords are ``scope.AddArgs``; ``embedding`` and
        ``duplicates`` are the server's own)."""
        scope, infer, given = split_add(args)
        whose = _wire(scope)
        unsent = {"embedding", "duplicates"} & set(given)
        if unsent:
            raise InvalidInput(f"{', '.join(sorted(unsent))}: not sent over REST; the server "
                               "embeds and de-duplicates with its own settings")
        if isinstance(text, list | tuple):
            body = _clean({**whose, "messages": list(text), "infer": infer})
            return [MemoryChange(c["event"], _record(c["record"]))
                    for c in self._send("add_messages", **body)]
        at, provenance = _time(given.pop("at", None)), given.pop("provenance", None)
        return _record(self._send(
            "add_memory", **whose, text=text, **given, at=at,
            provenance=list(provenance) if provenance is not None else None))

    def add_many(self, items: Iterable[str | Mapping[str, Any]], *,
                 namespace: str | None = None, scope: Scope | None = None) -> list[Record]:
        whose = resolve(Scope, scope, namespace=namespace)
        shared = {k: v for k, v in _wire(whose).items() if k != "namespace"}
        rows = [{"text": i} if isinstance(i, str) else _clean(dict(i)) for i in items]
        rows = [{**_clean(shared), **row} for row in rows]
        out = self._send("add_memories", namespace=whose.namespace, items=rows)
        return [_record(r) for r in out]

    @renamed(record_id="memory_id")
    def get(self, memory_id: str, *, namespace: str | None = None) -> Record:
        return _record(self._send("get_memory", memory_id=memory_id, namespace=namespace))

    def get_all(self, *, limit: int = 100, offset: int = 0, order: str = "created",
                scope: Scope | None = None, query: Query | None = None,
                **where: Unpack[SelectArgs]) -> list[Record]:
        flat: dict[str, Any] = dict(where)
        which = resolve(Query, query, **{k: x for k, x in flat.items() if k not in SCOPE})
        if which.text is not None:
            raise InvalidInput("a query's text ranks a search: give it to search() or "
                               "context(); get_all selects by the other fields only")
        body = _clean({**_wire(resolve(Scope, scope, **{k: x for k, x in flat.items()
                                                        if k in SCOPE}), which),
                       "include_invalid": which.include_invalid, "limit": limit,
                       "offset": offset, "order": order})
        return [_record(r) for r in self._send("list_memories", **body)]

    @renamed(record_id="memory_id")
    def update(self, memory_id: str, *, text: str | None = None,
               data: Mapping[str, Any] | None = None, importance: float | None = None,
               metadata: Mapping[str, Any] | None = None,
               provenance: Sequence[str] | None = None, namespace: str | None = None,
               at: Time | None = None) -> Record:
        changes: dict[str, Any] = {
            "text": text, "data": data, "importance": importance, "metadata": metadata,
            "provenance": None if provenance is None else list(provenance), "at": _time(at)}
        return _record(self._send("update_memory", memory_id=memory_id, namespace=namespace,
                                  **changes))

    @renamed(record_id="memory_id")
    def delete(self, memory_id: str, *, namespace: str | None = None,
               erase: bool = False) -> None:
        self._send("delete_memory", memory_id=memory_id, namespace=namespace,
                   erase=erase or None)

    def delete_all(self, *, namespace: str | None = None, user_id: str | None = None,
                   agent_id: str | None = None, run_id: str | None = None,
                   kinds: str | Iterable[str] | None = None,
                   filters: Mapping[str, Any] | None = None, erase: bool = False,
                   scope: Scope | None = None, query: Query | None = None) -> int:
        which = resolve(Query, query, kinds=kinds, filters=filters)
        if {**dataclasses.asdict(which), "kinds": None, "filters": None} != \
                dataclasses.asdict(Query()):
            raise InvalidInput("delete_all over HTTP selects by scope, kinds and filters only")
        wire = _wire(resolve(Scope, scope, namespace=namespace, user_id=user_id,
                             agent_id=agent_id, run_id=run_id), which)
        body = {k: wire[k] for k in (*SCOPE, "kinds", "filters")}
        return int(self._send("delete_memories", **body, erase=erase or None)["deleted"])

    @renamed(record_id="memory_id")
    def history(self, memory_id: str, *, namespace: str | None = None) -> list[HistoryEntry]:
        rows = self._send("memory_history", memory_id=memory_id, namespace=namespace)
        return [HistoryEntry(**r) for r in rows]

    def audit(self, *, namespace: str | None = None, user_id: str | None = None,
              agent_id: str | None = None, kinds: str | Iterable[str] | None = None,
              limit: int = 100) -> list[Finding]:
        wanted = None if kinds is None else ([kinds] if isinstance(kinds, str) else list(kinds))
        rows = self._send("audit_memories", namespace=namespace, user_id=user_id,
                          agent_id=agent_id, kinds=wanted, limit=limit)
        return [Finding.from_dict(r) for r in rows]

    def restore(self, memory_id: str, *, namespace: str | None = None) -> Record:
        return _record(self._send("restore_memory", memory_id=memory_id, namespace=namespace))

    def invalidate(self, memory_id: str, *, superseded_by: str | None = None,
                   namespace: str | None = None) -> Record:
        return _record(self._send("invalidate_memory", memory_id=memory_id,
                                  superseded_by=superseded_by, namespace=namespace))

    def entities(self, query: str | None = None, *, namespace: str | None = None,
                 user_id: str | None = None, agent_id: str | None = None,
                 run_id: str | None = None, limit: int = 50) -> list[Entity]:
        rows = self._send("list_entities", query=query, namespace=namespace, user_id=user_id,
                          agent_id=agent_id, run_id=run_id, limit=limit)
        return [_entity(r) for r in rows]

    def entity(self, name: str, *, namespace: str | None = None, user_id: str | None = None,
               limit: int = 20, as_of: Time | None = None) -> EntityProfile:
        p = self._send("get_entity", name=name, namespace=namespace, user_id=user_id,
                       limit=limit, as_of=_time(as_of))
        return EntityProfile(_entity(p), tuple(p["aliases"]), [_record(r) for r in p["records"]],
                             [(_entity(e), list(e["record_ids"])) for e in p["related"]],
                             [Relation(**r) for r in p["relations"]])

    def search(self, query: str | Query, *, k: int = 10, now: Time | None = None,
               weights: str | Mapping[str, float] | Sequence[float] | None = None,
               touch: bool = True, fusion: str | None = None,
               min_relevance: float | None = None, scope: Scope | None = None,
               **where: Unpack[SearchArgs]) -> list[Hit]:
        body = _search_body(query, scope, where, dict(
            k=k, now=now, weights=weights, touch=touch, fusion=fusion,
            min_relevance=min_relevance))
        return [_hit(h) for h in self._send("search_memories", **body)]

    def context(self, query: str | Query, *, budget: int = 512, k: int = 50,
                now: Time | None = None,
                weights: str | Mapping[str, float] | Sequence[float] | None = None,
                touch: bool = True, fusion: str | None = None,
                min_relevance: float | None = CONTEXT_MIN_RELEVANCE,
                scope: Scope | None = None, **where: Unpack[SearchArgs]) -> Context:
        body = _search_body(query, scope, where, dict(
            k=k, now=now, weights=weights, touch=touch, fusion=fusion,
            min_relevance=min_relevance or 0.0))
        out = self._send("memory_context", **body, budget=budget)
        return Context(text=out["text"], hits=[_hit(h) for h in out["hits"]],
                       tokens=out["tokens"])

    # --- episodes, learning, agents (the server's capabilities) --------------------------------

    def episode_summary(self, *, agent_id: str = "default",
                        namespace: str | None = None) -> dict[str, Any]:
        """``EpisodeMemory.summary`` of an agent: totals, rules per task, top mistake cards,
        mean scores."""
        return dict(self._send("episode_summary", agent_id=agent_id, namespace=namespace))

    def agent_range(self, agent_id: str, start: int, end: int, *, kind: str | None = None,
                    namespace: str | None = None) -> list[dict[str, Any]]:
        """``TieredMemory.step_range``: the agent's entries with start <= step <= end."""
        return list(self._send("agent_range", agent_id=agent_id, start=start, end=end,
                               kind=kind, namespace=namespace))

    def record_episode(self, episode: Mapping[str, Any], *, agent_id: str = "default",
                       namespace: str | None = None) -> Record:
        return _record(self._send("record_episode", episode=dict(episode), agent_id=agent_id,
                                  namespace=namespace))

    @renamed(max_tokens="budget")
    def episode_context(self, task_id: str | None = None, *, agent_id: str = "default",
                        budget: int | None = None, namespace: str | None = None) -> str:
        return str(self._send("episode_context", task_id=task_id, agent_id=agent_id,
                              budget=budget, namespace=namespace)["context"])

    def learn_outcome(self, agent: str, project_id: str, task: str, outcome: bool,
                      strategy_used: str, *, task_type: str | None = None,
                      duration_ms: int | None = None, error_message: str | None = None,
                      feedback: str | None = None, namespace: str | None = None
                      ) -> dict[str, Any]:
        return dict(self._send(
            "learn_outcome", agent=agent, project_id=project_id, task=task, outcome=outcome,
            strategy_used=strategy_used, task_type=task_type, duration_ms=duration_ms,
            error_message=error_message, feedback=feedback, namespace=namespace))

    @renamed(top_k="k")
    def task_advice(self, task: str, agent: str, *, user_id: str | None = None,
                    k: int = 5, namespace: str | None = None) -> dict[str, Any]:
        return dict(self._send("task_advice", task=task, agent=agent, user_id=user_id,
                               k=k, namespace=namespace))

    @renamed(memory_type="kind")
    def store_agent_memory(self, agent_id: str, contents: Mapping[str, Any], step: int, *,
                           kind: str = "state", priority: float = 1.0,
                           namespace: str | None = None) -> dict[str, Any]:
        return dict(self._send("store_agent_memory", agent_id=agent_id,
                               contents=dict(contents), step=step, kind=kind,
                               priority=priority, namespace=namespace))

    @renamed(memory_type="kind")
    def similar_agent_states(self, agent_id: str, state: Mapping[str, Any], *, k: int = 5,
                             kind: str | None = None, namespace: str | None = None
                             ) -> list[dict[str, Any]]:
        return list(self._send("similar_agent_states", agent_id=agent_id, state=dict(state),
                               k=k, kind=kind, namespace=namespace))

    def stats(self, *, namespace: str | None = None) -> dict[str, Any]:
        return dict(self._send("stats", namespace=namespace))

    def reflect(self, *, namespace: str | None = None) -> list[Record]:
        return [_record(r) for r in self._send("reflect", namespace=namespace)]

    def consolidate(self, *, namespace: str | None = None) -> list[MemoryChange]:
        rows = self._send("consolidate", namespace=namespace)
        return [MemoryChange(c["event"], _record(c["record"])) for c in rows]

    def export(self, *, namespace: str | None = None, with_embeddings: bool = False) -> str:
        return str(self._send("export", namespace=namespace, with_embeddings=with_embeddings))

    def import_jsonl(self, text: str, *, skip_existing: bool = False,
                     namespace: str | None = None) -> int:
        """Records exported by memstream, or new memories (a "text" with add's fields)."""
        out = self._send("import", skip_existing=skip_existing, namespace=namespace,
                         raw=(text.encode(), "application/x-ndjson"))
        return int(out["imported"])

    # --- change events and webhooks (docs/events.md) -------------------------------------------

    def list_events(self, *, after: int = 0, limit: int = 100, types: Sequence[str] = (),
                    namespace: str | None = None) -> list[dict[str, Any]]:
        """Change events numbered above ``after``, oldest first."""
        return list(self._send("list_events", after=after, limit=limit,
                               types=list(types) or None, namespace=namespace))

    def stream_events(self, *, after: int | None = None, types: Sequence[str] = (),
                      namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """Follow the server-sent event stream (``GET /v1/events``): each change event as it
        commits, from now on or after ``after``. Stop by breaking out of the loop."""
        method, url, params, _ = request("stream_events", {
            "after": after, "types": list(types) or None, "namespace": namespace})
        with self._http.stream(method, url, params=params, timeout=None) as resp:
            if resp.status_code >= 400:
                resp.read()
                self._raise(resp)
            data: list[str] = []
            for line in resp.iter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    yield json.loads("\n".join(data))
                    data = []

    def register_webhook(self, url: str, *, types: Sequence[str] = (),
                         secret: str | None = None, from_start: bool = False,
                         namespace: str | None = None) -> dict[str, Any]:
        """Send the namespace's events to ``url``; the answer carries the signing secret."""
        return dict(self._send("register_webhook", url=url, types=list(types), secret=secret,
                               from_start=from_start, namespace=namespace))

    def list_webhooks(self, *, namespace: str | None = None) -> list[dict[str, Any]]:
        return list(self._send("list_webhooks", namespace=namespace))

    def delete_webhook(self, webhook_id: str, *, namespace: str | None = None) -> None:
        self._send("delete_webhook", webhook_id=webhook_id, namespace=namespace)

    def webhook_dead_letters(self, webhook_id: str, *, namespace: str | None = None
                             ) -> list[dict[str, Any]]:
        return list(self._send("webhook_dead_letters", webhook_id=webhook_id,
                               namespace=namespace))

    def redeliver_webhook(self, webhook_id: str, *, namespace: str | None = None) -> int:
        return int(self._send("redeliver_webhook", webhook_id=webhook_id,
                              namespace=namespace)["queued"])

    def flush(self, timeout: float | None = None) -> None:
        """Nothing to wait for on the client side: the server owns background work."""

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _entity(row: Mapping[str, Any]) -> Entity:
    return Entity(row["id"], row["namespace"], row["user_id"], row["name"], row["kind"],
                  row["key"], row["mentions"], row["first_seen"], row["last_seen"],
                  confirmed=row["confirmed"])
