"""``Client``: the ``Memory`` API over HTTP, for programs that talk to a memstream server.

    >>> # client = Client("http://127.0.0.1:8765", api_key="ms_...")
    >>> # client.add("Alice prefers green tea", user_id="alice")

Methods take the same arguments as ``Memory`` and return the same types (``Record``, ``Hit``,
``Context``, ``HistoryEntry``, ``MemoryChange``). Server errors come back as the same exception
classes (``NotFound``, ``InvalidInput``, ``ScopeViolation``...), chosen by the error body's type.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

from . import errors as _errors
from ._types import Explanation, HistoryEntry, Hit, MemoryChange, Record
from .errors import BackendUnavailable, MemstreamError, MissingDependency
from .memory import Context

__all__ = ["Client"]


def _record(raw: Mapping[str, Any]) -> Record:
    return Record.from_dict(dict(raw))


def _hit(raw: Mapping[str, Any]) -> Hit:
    e = dict(raw["explain"])
    w = e.pop("weights")
    e["weights"] = (w["recency"], w["importance"], w["relevance"])
    return Hit(_record(raw["record"]), raw["score"], Explanation(**e))


def _clean(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


Time = float | int | str  # seconds since the epoch, or ISO 8601 (datetimes: .isoformat())


def _selection(namespace: str | None, user_id: str | None, agent_id: str | None,
               run_id: str | None, kinds: str | Iterable[str] | None,
               filters: Mapping[str, Any] | None, since: Time | None, until: Time | None,
               step_range: tuple[int, int] | None, as_of: Time | None) -> dict[str, Any]:
    return {"namespace": namespace, "user_id": user_id, "agent_id": agent_id, "run_id": run_id,
            "kinds": [kinds] if isinstance(kinds, str) else
            list(kinds) if kinds is not None else None,
            "filters": dict(filters) if filters is not None else None, "since": since,
            "until": until, "step_range": list(step_range) if step_range else None,
            "as_of": as_of}


def _search_body(query: str, k: int, namespace: str | None, user_id: str | None,
                 agent_id: str | None, run_id: str | None, kinds: str | Iterable[str] | None,
                 filters: Mapping[str, Any] | None, since: Time | None, until: Time | None,
                 now: Time | None, weights: str | Mapping[str, float] | Sequence[float] | None,
                 touch: bool, step_range: tuple[int, int] | None, fusion: str | None,
                 as_of: Time | None) -> dict[str, Any]:
    return _clean({**_selection(namespace, user_id, agent_id, run_id, kinds, filters, since,
                                until, step_range, as_of),
                   "query": query, "k": k, "now": now, "touch": touch, "fusion": fusion,
                   "weights": weights if isinstance(weights, str | Mapping) or weights is None
                   else list(weights)})


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
            return resp.json()
        return resp.text

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

    def add(self, content: str | Sequence[Mapping[str, str]], *, namespace: str | None = None,
            user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
            kind: str = "observation", data: Mapping[str, Any] | None = None,
            importance: float | None = None, step: int | None = None, at: Time | None = None,
            metadata: Mapping[str, Any] | None = None, provenance: Sequence[str] | None = None,
            infer: bool = False) -> Any:
        scope = {"namespace": namespace, "user_id": user_id, "agent_id": agent_id,
                 "run_id": run_id}
        if isinstance(content, list | tuple):
            body = _clean({**scope, "messages": list(content), "infer": infer})
            return [MemoryChange(c["event"], _record(c["record"]))
                    for c in self._call("POST", "/v1/memories/messages", json=body)]
        return _record(self._call("POST", "/v1/memories", json=_clean({
            **scope, "content": content, "kind": kind, "data": data, "importance": importance,
            "step": step, "at": at, "metadata": metadata,
            "provenance": list(provenance) if provenance is not None else None})))

    def add_many(self, items: Iterable[str | Mapping[str, Any]], *,
                 namespace: str | None = None) -> list[Record]:
        rows = [{"content": i} if isinstance(i, str) else _clean(dict(i)) for i in items]
        out = self._call("POST", "/v1/memories/batch",
                         json=_clean({"namespace": namespace, "items": rows}))
        return [_record(r) for r in out]

    def get(self, record_id: str, *, namespace: str | None = None) -> Record:
        return _record(self._call("GET", f"/v1/memories/{record_id}",
                                  params=_clean({"namespace": namespace})))

    def get_all(self, *, namespace: str | None = None, user_id: str | None = None,
                agent_id: str | None = None, run_id: str | None = None,
                kinds: str | Iterable[str] | None = None,
                filters: Mapping[str, Any] | None = None, since: Time | None = None,
                until: Time | None = None, step_range: tuple[int, int] | None = None,
                include_invalid: bool = False, limit: int = 100, offset: int = 0,
                order: str = "created", as_of: Time | None = None) -> list[Record]:
        body = _clean({**_selection(namespace, user_id, agent_id, run_id, kinds, filters,
                                    since, until, step_range, as_of),
                       "include_invalid": include_invalid, "limit": limit, "offset": offset,
                       "order": order})
        return [_record(r) for r in self._call("POST", "/v1/memories/list", json=body)]

    def update(self, record_id: str, *, text: str | None = None,
               data: Mapping[str, Any] | None = None, importance: float | None = None,
               metadata: Mapping[str, Any] | None = None,
               namespace: str | None = None) -> Record:
        changes = {"text": text, "data": data, "importance": importance, "metadata": metadata}
        return _record(self._call("PATCH", f"/v1/memories/{record_id}", json=_clean(changes),
                                  params=_clean({"namespace": namespace})))

    def delete(self, record_id: str, *, namespace: str | None = None,
               erase: bool = False) -> None:
        self._call("DELETE", f"/v1/memories/{record_id}",
                   params=_clean({"namespace": namespace, "erase": erase or None}))

    def delete_all(self, **selection: Any) -> int:
        return int(self._call("POST", "/v1/memories/delete", json=_clean(selection))["deleted"])

    def history(self, record_id: str, *, namespace: str | None = None) -> list[HistoryEntry]:
        rows = self._call("GET", f"/v1/memories/{record_id}/history",
                          params=_clean({"namespace": namespace}))
        return [HistoryEntry(**r) for r in rows]

    def search(self, query: str, *, k: int = 10, namespace: str | None = None,
               user_id: str | None = None, agent_id: str | None = None,
               run_id: str | None = None, kinds: str | Iterable[str] | None = None,
               filters: Mapping[str, Any] | None = None, since: Time | None = None,
               until: Time | None = None, now: Time | None = None,
               weights: str | Mapping[str, float] | Sequence[float] | None = None,
               touch: bool = True, step_range: tuple[int, int] | None = None,
               fusion: str | None = None, as_of: Time | None = None) -> list[Hit]:
        body = _search_body(query, k, namespace, user_id, agent_id, run_id, kinds, filters,
                            since, until, now, weights, touch, step_range, fusion, as_of)
        return [_hit(h) for h in self._call("POST", "/v1/search", json=body)]

    def context(self, query: str, *, budget: int = 512, k: int = 50,
                namespace: str | None = None, user_id: str | None = None,
                agent_id: str | None = None, run_id: str | None = None,
                kinds: str | Iterable[str] | None = None,
                filters: Mapping[str, Any] | None = None, since: Time | None = None,
                until: Time | None = None, now: Time | None = None,
                weights: str | Mapping[str, float] | Sequence[float] | None = None,
                touch: bool = True, step_range: tuple[int, int] | None = None,
                fusion: str | None = None, as_of: Time | None = None) -> Context:
        body = _search_body(query, k, namespace, user_id, agent_id, run_id, kinds, filters,
                            since, until, now, weights, touch, step_range, fusion, as_of)
        out = self._call("POST", "/v1/context", json={**body, "budget": budget})
        return Context(text=out["text"], hits=[_hit(h) for h in out["hits"]],
                       tokens=out["tokens"])

    # --- episodes, learning, agents (the server's capabilities) --------------------------------

    def record_episode(self, episode: Mapping[str, Any], *, agent_id: str = "default",
                       namespace: str | None = None) -> Record:
        return _record(self._call("POST", "/v1/episodes", json=_clean({
            "episode": dict(episode), "agent_id": agent_id, "namespace": namespace})))

    def episode_context(self, task_id: str | None = None, *, agent_id: str = "default",
                        max_tokens: int | None = None, namespace: str | None = None) -> str:
        params = _clean({"task_id": task_id, "agent_id": agent_id, "max_tokens": max_tokens,
                         "namespace": namespace})
        return str(self._call("GET", "/v1/episodes/context", params=params)["context"])

    def learn_outcome(self, agent: str, project_id: str, task: str, outcome: bool,
                      strategy_used: str, *, task_type: str | None = None,
                      duration_ms: int | None = None, error_message: str | None = None,
                      feedback: str | None = None, namespace: str | None = None
                      ) -> dict[str, Any]:
        return dict(self._call("POST", "/v1/learning/outcomes", json=_clean({
            "agent": agent, "project_id": project_id, "task": task, "outcome": outcome,
            "strategy_used": strategy_used, "task_type": task_type, "duration_ms": duration_ms,
            "error_message": error_message, "feedback": feedback, "namespace": namespace})))

    def task_advice(self, task: str, agent: str, *, user_id: str | None = None,
                    top_k: int = 5, namespace: str | None = None) -> dict[str, Any]:
        return dict(self._call("POST", "/v1/learning/advice", json=_clean({
            "task": task, "agent": agent, "user_id": user_id, "top_k": top_k,
            "namespace": namespace})))

    def store_agent_memory(self, agent_id: str, contents: Mapping[str, Any], step: int, *,
                           memory_type: str = "state", priority: float = 1.0,
                           namespace: str | None = None) -> dict[str, Any]:
        return dict(self._call("POST", "/v1/agents/entries", json=_clean({
            "agent_id": agent_id, "contents": dict(contents), "step": step,
            "memory_type": memory_type, "priority": priority, "namespace": namespace})))

    def similar_agent_states(self, agent_id: str, state: Mapping[str, Any], *, k: int = 5,
                             memory_type: str | None = None, namespace: str | None = None
                             ) -> list[dict[str, Any]]:
        return list(self._call("POST", f"/v1/agents/{agent_id}/similar", json=_clean({
            "state": dict(state), "k": k, "memory_type": memory_type, "namespace": namespace})))

    def stats(self, *, namespace: str | None = None) -> dict[str, Any]:
        return dict(self._call("GET", "/v1/stats", params=_clean({"namespace": namespace})))

    def reflect(self, *, namespace: str | None = None) -> list[Record]:
        return [_record(r) for r in self._call("POST", "/v1/reflect",
                                               params=_clean({"namespace": namespace}))]

    def consolidate(self, *, namespace: str | None = None) -> list[MemoryChange]:
        rows = self._call("POST", "/v1/consolidate", params=_clean({"namespace": namespace}))
        return [MemoryChange(c["event"], _record(c["record"])) for c in rows]

    def export(self, *, namespace: str | None = None) -> str:
        return str(self._call("GET", "/v1/export", params=_clean({"namespace": namespace})))

    def import_jsonl(self, text: str, *, skip_existing: bool = False) -> int:
        out = self._call("POST", "/v1/import", content=text.encode(),
                         params={"skip_existing": skip_existing},
                         headers={"content-type": "application/x-ndjson"})
        return int(out["imported"])

    # --- change events and webhooks (docs/events.md) -------------------------------------------

    def list_events(self, *, after: int = 0, limit: int = 100, types: Sequence[str] = (),
                    namespace: str | None = None) -> list[dict[str, Any]]:
        """Change events numbered above ``after``, oldest first."""
        return list(self._call("GET", "/v1/events/list", params=_clean({
            "after": after, "limit": limit, "types": list(types) or None,
            "namespace": namespace})))

    def stream_events(self, *, after: int | None = None, types: Sequence[str] = (),
                      namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """Follow the server-sent event stream (``GET /v1/events``): each change event as it
        commits, from now on or after ``after``. Stop by breaking out of the loop."""
        params = _clean({"after": after, "types": list(types) or None, "namespace": namespace})
        with self._http.stream("GET", "/v1/events", params=params, timeout=None) as resp:
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
        return dict(self._call("POST", "/v1/webhooks", json=_clean({
            "url": url, "types": list(types), "secret": secret, "from_start": from_start,
            "namespace": namespace})))

    def list_webhooks(self, *, namespace: str | None = None) -> list[dict[str, Any]]:
        return list(self._call("GET", "/v1/webhooks", params=_clean({"namespace": namespace})))

    def delete_webhook(self, webhook_id: str, *, namespace: str | None = None) -> None:
        self._call("DELETE", f"/v1/webhooks/{webhook_id}",
                   params=_clean({"namespace": namespace}))

    def webhook_dead_letters(self, webhook_id: str, *, namespace: str | None = None
                             ) -> list[dict[str, Any]]:
        return list(self._call("GET", f"/v1/webhooks/{webhook_id}/dead-letters",
                               params=_clean({"namespace": namespace})))

    def redeliver_webhook(self, webhook_id: str, *, namespace: str | None = None) -> int:
        return int(self._call("POST", f"/v1/webhooks/{webhook_id}/redeliver",
                              params=_clean({"namespace": namespace}))["queued"])

    def flush(self, timeout: float | None = None) -> None:
        """Nothing to wait for on the client side: the server owns background work."""

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
