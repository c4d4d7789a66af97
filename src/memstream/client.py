"""``Client``: the ``Memory`` API over HTTP, for programs that talk to a memstream server.

    >>> # client = Client("http://127.0.0.1:8765", api_key="ms_...")
    >>> # client.add("Alice prefers green tea", user_id="alice")

Methods take the same arguments as ``Memory`` and return the same types (``Record``, ``Hit``,
``Context``, ``HistoryEntry``, ``MemoryChange``). Server errors come back as the same exception
classes (``NotFound``, ``InvalidInput``, ``ScopeViolation``...), chosen by the error body's type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

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
            try:
                err = resp.json()["error"]
                cls = getattr(_errors, err["type"], None)
                message = err["message"]
            except (ValueError, KeyError, TypeError):
                cls, message = None, resp.text[:300]
            if not (isinstance(cls, type) and issubclass(cls, MemstreamError)):
                cls = BackendUnavailable if resp.status_code >= 500 else MemstreamError
            raise cls(message)
        if resp.headers.get("content-type", "").startswith("application/json"):
            return resp.json()
        return resp.text

    # --- the Memory API ------------------------------------------------------------------------

    def add(self, content: str | Sequence[Mapping[str, str]], *, infer: bool = False,
            **fields: Any) -> Any:
        if isinstance(content, list | tuple):
            body = _clean({**fields, "messages": list(content), "infer": infer})
            return [MemoryChange(c["event"], _record(c["record"]))
                    for c in self._call("POST", "/v1/memories/messages", json=body)]
        return _record(self._call("POST", "/v1/memories", json=_clean({**fields,
                                                                       "content": content})))

    def add_many(self, items: Iterable[str | Mapping[str, Any]], *,
                 namespace: str | None = None) -> list[Record]:
        rows = [{"content": i} if isinstance(i, str) else _clean(dict(i)) for i in items]
        out = self._call("POST", "/v1/memories/batch",
                         json=_clean({"namespace": namespace, "items": rows}))
        return [_record(r) for r in out]

    def get(self, record_id: str, *, namespace: str | None = None) -> Record:
        return _record(self._call("GET", f"/v1/memories/{record_id}",
                                  params=_clean({"namespace": namespace})))

    def get_all(self, **selection: Any) -> list[Record]:
        if isinstance(selection.get("kinds"), str):
            selection["kinds"] = [selection["kinds"]]
        return [_record(r) for r in self._call("POST", "/v1/memories/list",
                                               json=_clean(selection))]

    def update(self, record_id: str, *, namespace: str | None = None,
               **changes: Any) -> Record:
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

    def search(self, query: str, **options: Any) -> list[Hit]:
        if isinstance(options.get("kinds"), str):
            options["kinds"] = [options["kinds"]]
        if isinstance(options.get("weights"), tuple):
            options["weights"] = list(options["weights"])
        body = _clean({**options, "query": query})
        return [_hit(h) for h in self._call("POST", "/v1/search", json=body)]

    def context(self, query: str, *, budget: int = 512, **options: Any) -> Context:
        out = self._call("POST", "/v1/context",
                         json=_clean({**options, "query": query, "budget": budget}))
        return Context(text=out["text"], hits=[_hit(h) for h in out["hits"]],
                       tokens=out["tokens"])

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

    def flush(self, timeout: float | None = None) -> None:
        """Nothing to wait for on the client side: the server owns background work."""

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
