"""Mem0's ``Memory`` API on memstream: replace ``from mem0 import Memory`` with
``from memstream.compat.mem0 import Memory`` (``AsyncMemory`` likewise).

Calls take Mem0's arguments and return Mem0's shapes: ``{"results": [...]}`` with ``id``,
``memory``, ``hash``, ``metadata``, ``score``, ``created_at``, ``updated_at`` and the
``user_id``/``agent_id``/``run_id`` a memory belongs to; events ``ADD``, ``UPDATE`` and
``DELETE``. Both of Mem0's ways of naming the scope work: keywords (``user_id="alice"``) and
``filters={"user_id": "alice"}`` (also inside ``AND``). Other filter keys address the memory's
metadata, with Mem0's operators (``eq``, ``ne``, ``gt``, ``gte``, ``lt``, ``lte``, ``in``,
``nin``, ``contains``, ``"*"``) and ``AND``/``OR``/``NOT``.

Where Mem0 asks an LLM to infer facts (``add(..., infer=True)``, the default), memstream's
extraction does so when an LLM is configured (``llm`` in the config or ``MEMSTREAM_LLM_*``).
Without one, the messages are stored as they are, and the result says so: ``"inferred": False``
with a ``"note"``. memstream never reaches a remote service that was not configured for it:
``OPENAI_API_KEY`` alone does not turn the LLM on. docs/coming-from-mem0.md lists every
difference that remains.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypedDict

from .._types import HistoryEntry, MemoryChange, Record
from ..config import Config
from ..engine.memory import Memory as _Memory
from ..errors import InvalidFilter, InvalidInput, NotFound

__all__ = ["AsyncMemory", "Memory"]

log = logging.getLogger("memstream.compat.mem0")

_SCOPE = ("user_id", "agent_id", "run_id")


class _Scope(TypedDict, total=False):
    user_id: str
    agent_id: str
    run_id: str

_OPERATORS = {"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains"}
_NO_LLM = ("no LLM is configured, so no facts were inferred: the messages were stored as they "
           "are; configure one (Memory.from_config({'llm': ...}) or MEMSTREAM_LLM_BASE_URL, "
           "MEMSTREAM_LLM_MODEL) to extract facts")
_EVENTS = {"add": "ADD", "update": "UPDATE", "supersede": "UPDATE", "delete": "DELETE",
           "erase": "DELETE", "invalidate": "DELETE", "import": "ADD"}


class Memory:
    """Mem0's ``Memory`` over a memstream ``Memory``.

    ``Memory()`` keeps memories in memstream's default store (``memstream.db`` in the working
    folder, or ``MEMSTREAM_URL``); ``Memory.from_config(...)`` reads Mem0's config dict (see
    ``_settings``); ``Memory(memory=mem)`` wraps a memstream ``Memory`` you opened.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, *,
                 memory: _Memory | None = None) -> None:
        if memory is not None:
            self._mem, self._owned = memory, False
        else:
            url, settings = _settings(config or {})
            self._mem, self._owned = _Memory(url, config=Config(**settings)), True
        self.namespace = self._mem.config.namespace

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> Memory:
        return cls(config_dict)

    @property
    def memory(self) -> _Memory:
        """The memstream ``Memory`` underneath (scored search, reflection, the inspector...)."""
        return self._mem

    def close(self) -> None:
        if self._owned:
            self._mem.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- Mem0's verbs ---------------------------------------------------------------------------

    def add(self, messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]], *,
            user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None, metadata: Mapping[str, Any] | None = None,
            infer: bool = True, memory_type: str | None = None,
            prompt: str | None = None) -> dict[str, Any]:
        """Store a text or chat messages for a user, agent or run (one is required)."""
        scope = _scope(user_id, agent_id, run_id, required="add")
        msgs = _messages(messages)
        if memory_type is not None:
            raise InvalidInput("memory_type (procedural memory) is not supported by memstream's "
                               "Mem0 API; leave it out")
        if prompt is not None:
            raise InvalidInput("a custom extraction prompt is not supported by memstream's Mem0 "
                               "API; leave prompt out")
        meta = dict(metadata or {})
        inferred = bool(infer) and self._mem.llm is not None
        if inferred:
            changes = self._mem.add(msgs, infer=True, **scope)
            results = [_change(c) for c in changes if c.event != "noop"]
            if meta:
                for c in changes:
                    if c.event != "noop":
                        self._mem.update(c.record.id, metadata={**c.record.metadata, **meta})
                results = [{**r, "metadata": {**r.get("metadata", {}), **meta}} for r in results]
            return {"results": results}
        records = self._mem.add_many(
            [{"content": m["content"], "kind": "message", "data": {"role": m["role"]},
              "metadata": meta, **scope} for m in msgs], duplicates="keep")
        out: dict[str, Any] = {"results": [
            {"id": r.id, "memory": r.text, "event": "ADD", "metadata": dict(r.metadata)}
            for r in records]}
        if infer:
            out.update(inferred=False, note=_NO_LLM)
        return out

    def search(self, query: str, *, user_id: str | None = None, agent_id: str | None = None,
               run_id: str | None = None, limit: int | None = None, top_k: int | None = None,
               filters: Mapping[str, Any] | None = None, threshold: float | None = None,
               rerank: bool = True, **unknown: Any) -> dict[str, Any]:
        """The memories that best fit the query, best first, with memstream's scores."""
        _no_unknown(unknown, "search")
        scope, where = _split_filters(filters, user_id, agent_id, run_id)
        k = _count(top_k if top_k is not None else limit, 100, "top_k")
        if threshold is not None and (isinstance(threshold, bool) or
                                      not isinstance(threshold, int | float)
                                      or not 0 <= threshold <= 1):
            raise InvalidInput(f"threshold is a number between 0 and 1, not {threshold!r}")
        hits = self._mem.search(query, k=k, filters=where, **scope) if k else []
        return {"results": [{**_item(h.record), "score": h.score} for h in hits
                            if threshold is None or h.score >= threshold]}

    def get_all(self, *, user_id: str | None = None, agent_id: str | None = None,
                run_id: str | None = None, filters: Mapping[str, Any] | None = None,
                limit: int | None = None, top_k: int | None = None,
                **unknown: Any) -> dict[str, Any]:
        """A scope's memories, oldest first (at most ``limit``, 100 by default)."""
        _no_unknown(unknown, "get_all")
        scope, where = _split_filters(filters, user_id, agent_id, run_id)
        k = _count(top_k if top_k is not None else limit, 100, "limit")
        records = self._mem.get_all(filters=where, limit=k, **scope)
        return {"results": [_item(r) for r in records]}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """One memory by id, or None."""
        try:
            return _item(self._mem.get(memory_id))
        except NotFound:
            return None

    def update(self, memory_id: str, data: str,
               metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Replace a memory's text (and metadata); the old text stays in its history."""
        self._mem.update(memory_id, text=data,
                         metadata=None if metadata is None else dict(metadata))
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, Any]:
        self._mem.delete(memory_id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, *, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, Any]:
        """Delete every memory of a user, agent or run (one is required; ``reset()`` deletes
        everything)."""
        scope = _scope(user_id, agent_id, run_id, required="delete_all")
        self._mem.delete_all(**scope)
        return {"message": "Memories deleted successfully!"}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Every change to a memory, oldest first: ``event``, ``old_memory``, ``new_memory``."""
        return [_history(n, e) for n, e in enumerate(self._mem.history(memory_id), start=1)
                if e.event in _EVENTS]

    def reset(self) -> None:
        """Erase every memory of this namespace, with its history."""
        self._mem.delete_all(erase=True)


class AsyncMemory:
    """``Memory``'s verbs, awaited: each runs the same code in a worker thread."""

    def __init__(self, config: Mapping[str, Any] | None = None, *,
                 memory: _Memory | None = None) -> None:
        self.sync = Memory(config, memory=memory)

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> AsyncMemory:
        return cls(config_dict)

    async def add(self, messages: Any, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.add, messages, **kwargs)

    async def search(self, query: str, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.search, query, **kwargs)

    async def get_all(self, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.get_all, **kwargs)

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.sync.get, memory_id)

    async def update(self, memory_id: str, data: str, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.update, memory_id, data, **kwargs)

    async def delete(self, memory_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.delete, memory_id)

    async def delete_all(self, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.delete_all, **kwargs)

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.history, memory_id)

    async def reset(self) -> None:
        await asyncio.to_thread(self.sync.reset)

    def close(self) -> None:
        self.sync.close()


# --- Mem0's shapes ------------------------------------------------------------------------------

def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, tz=UTC).isoformat()


def _item(record: Record) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": record.id, "memory": record.text,
        "hash": hashlib.md5(record.text.encode(), usedforsecurity=False).hexdigest(),
        "metadata": dict(record.metadata) or None, "created_at": _iso(record.created_at),
        "updated_at": _iso(record.updated_at)}
    for key in _SCOPE:
        if getattr(record, key) is not None:
            out[key] = getattr(record, key)
    if record.data and record.data.get("role"):
        out["role"] = record.data["role"]
    return out


def _change(change: MemoryChange) -> dict[str, Any]:
    out = {"id": change.record.id, "memory": change.record.text,
           "event": _EVENTS[change.event], "metadata": dict(change.record.metadata)}
    if change.previous is not None:
        out["previous_memory"] = change.previous.text
    return out


def _history(n: int, entry: HistoryEntry) -> dict[str, Any]:
    old = (entry.old or {}).get("text")
    new = None if entry.event in ("delete", "erase") else (entry.new or {}).get("text", old)
    return {"id": n, "memory_id": entry.record_id, "old_memory": old, "new_memory": new,
            "event": _EVENTS[entry.event], "created_at": _iso(entry.at),
            "updated_at": _iso(entry.at) if entry.event != "add" else None,
            "is_deleted": int(entry.event in ("delete", "erase")), "actor_id": None,
            "role": None}


# --- arguments ----------------------------------------------------------------------------------

def _scope(user_id: str | None, agent_id: str | None, run_id: str | None, *,
           required: str | None = None) -> _Scope:
    scope = _Scope()
    for key, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in
                                                                   value.strip()):
            raise InvalidInput(f"{key} must be a non-empty identifier without spaces, not "
                               f"{value!r}")
        scope[key] = value.strip()  # type: ignore[literal-required]
    if required and not scope:
        raise InvalidInput(f"{required}() needs at least one of user_id, agent_id or run_id"
                           + ("; reset() deletes everything" if required == "delete_all"
                              else ""))
    return scope


def _messages(messages: Any) -> list[dict[str, str]]:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, Sequence) or not messages:
        raise InvalidInput("messages is a text, a message dict or a non-empty list of them")
    out = []
    for m in messages:
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str) \
                or not m["content"].strip():
            raise InvalidInput("each message is a dict with a non-empty 'content' text and a "
                               f"'role', not {m!r}")
        out.append({"role": str(m.get("role") or "user"), "content": m["content"]})
    return out


def _count(value: Any, default: int, name: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{name} is a whole number >= 0, not {value!r}")
    return value


def _no_unknown(unknown: Mapping[str, Any], verb: str) -> None:
    if unknown:
        raise InvalidInput(f"{verb}() got arguments memstream's Mem0 API does not take: "
                           f"{', '.join(sorted(unknown))}")


def _split_filters(filters: Mapping[str, Any] | None, user_id: str | None,
                   agent_id: str | None, run_id: str | None
                   ) -> tuple[_Scope, dict[str, Any] | None]:
    """Mem0's filters as memstream's scope (user, agent, run) and metadata filter."""
    given: dict[str, Any] = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    rest: list[Any] = []

    def name(key: str, value: Any) -> None:
        """A scope id named in ``filters`` narrows the call, never widens it: one that
        contradicts the argument of the same name (or another mention) is an error."""
        if given[key] is not None and value != given[key]:
            raise InvalidFilter(f"filters name {key}={value!r} but the call is bounded to "
                                f"{key}={given[key]!r}; name one {key}")
        given[key] = value

    if filters:
        if not isinstance(filters, Mapping):
            raise InvalidFilter("filters is a dict, e.g. {'user_id': 'alice'}")
        for key, value in filters.items():
            if key in _SCOPE:
                name(key, value)
            elif key == "AND" and isinstance(value, list):
                for part in value:
                    if isinstance(part, Mapping):
                        for k, v in part.items():
                            if k in _SCOPE and not isinstance(v, Mapping):
                                name(k, v)
                            else:
                                rest.append({k: v})
                    else:
                        raise InvalidFilter("AND takes a list of filter dicts")
            else:
                rest.append({key: value})
    scope = _scope(**given)
    where = [_metadata_filter(part) for part in rest]
    return scope, (None if not where else where[0] if len(where) == 1 else {"AND": where})


def _metadata_filter(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping) or not raw:
        raise InvalidFilter(f"a filter is a non-empty dict, not {raw!r}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in ("AND", "OR", "NOT"):
            if not isinstance(value, list) or not value:
                raise InvalidFilter(f"{key} takes a non-empty list of filters")
            parts = [_metadata_filter(v) for v in value]
            out[key] = parts if key != "NOT" else (parts[0] if len(parts) == 1
                                                   else {"OR": parts})
        elif key in _SCOPE:
            raise InvalidFilter(f"{key} goes at the top of filters (or in its AND list), not "
                                "inside OR or NOT")
        elif value == "*":
            out[f"metadata.{key}"] = {"ne": None}
        elif isinstance(value, Mapping):
            unknown = set(value) - _OPERATORS
            if unknown:
                raise InvalidFilter(f"unsupported filter operator {sorted(unknown)} on {key!r}; "
                                    f"memstream takes {', '.join(sorted(_OPERATORS))}")
            out[f"metadata.{key}"] = dict(value)
        else:
            out[f"metadata.{key}"] = value
    return out


def _settings(config: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The store URL and memstream settings a Mem0 config dict asks for.

    ``llm`` (any OpenAI-compatible provider: ``model``, ``api_key``, ``openai_base_url`` /
    ``ollama_base_url`` / ``base_url``) configures the LLM; ``vector_store`` with provider
    ``pgvector`` (``connection_string``, or ``user``/``password``/``host``/``port``/``dbname``)
    puts the memories in that PostgreSQL database; ``memstream`` takes memstream's own options
    (``url``, ``namespace``, ``embedder``). Other parts (another vector store, the embedder, the
    graph store, the history database) are not used, and a log line says so.
    """
    if not isinstance(config, Mapping):
        raise InvalidInput("the config is a dict, as Mem0's Memory.from_config takes")
    own = dict(config.get("memstream") or {})
    url: str | None = own.pop("url", None)
    # as in Mem0, a memory is searchable by meaning as soon as add() returns
    settings: dict[str, Any] = {"embed_mode": "sync", **own}
    store = config.get("vector_store") or {}
    if store.get("provider") == "pgvector" and url is None:
        c = store.get("config") or {}
        url = c.get("connection_string") or (
            f"postgresql://{c.get('user', 'postgres')}:{c.get('password', '')}@"
            f"{c.get('host', 'localhost')}:{c.get('port', 5432)}/{c.get('dbname', 'postgres')}")
    llm = config.get("llm") or {}
    if llm:
        c = llm.get("config") or {}
        base = c.get("openai_base_url") or c.get("ollama_base_url") or c.get("base_url") or (
            "https://api.openai.com/v1" if llm.get("provider", "openai") == "openai" else None)
        if base is None:
            raise InvalidInput(f"the {llm.get('provider')} LLM needs a base URL of its "
                               "OpenAI-compatible API: set llm.config.base_url")
        settings.update(llm_base_url=base, llm_model=c.get("model"),
                        llm_api_key=c.get("api_key"))
    unused = sorted(k for k in config if k not in ("memstream", "llm", "vector_store", "version")
                    ) + (["vector_store"] if store and store.get("provider") != "pgvector"
                         else [])
    if unused:
        log.info("memstream's Mem0 API does not use these config parts: %s (memories are kept "
                 "in memstream's store, embedded by its own embedder)", ", ".join(unused))
    return url, settings
