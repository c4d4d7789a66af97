"""LangGraph's long-term memory store (``BaseStore``) on a memstream ``Memory``.

Every item is a memory record of kind ``"langgraph"`` in one memstream namespace: its value is the
record's ``data``, the text LangGraph's index configuration picks out of it is the record's
``text`` (so memstream's embedder and keyword index make it searchable), and its LangGraph
namespace and key live in ``metadata["langgraph"]``. ``search`` with a query is memstream's
scored retrieval, so each ``SearchItem`` carries the record id and the score's explanation.

A put of an existing key updates the record (its earlier values stay in its history); a put of
``None`` deletes it. TTLs (in minutes, as LangGraph defines them) run from the item's last access;
reads refresh them unless told not to, ``sweep_ttl()`` deletes what expired and
``start_ttl_sweeper()`` does so periodically.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from ..._types import Record
from ...engine.memory import Memory
from ...engine.records import records_of
from ...errors import InvalidInput

__all__ = ["MemstreamSearchItem", "MemstreamStore"]

KIND = "langgraph"
_META = "langgraph"


class MemstreamSearchItem(SearchItem):
    """A ``SearchItem`` that is also an explainable memory: the record's id and, for a search
    with a query, the score's components (``Explanation.to_dict()``)."""

    __slots__ = ("explanation", "record_id")

    def __init__(self, *, record_id: str, explanation: dict[str, Any] | None,
                 **item: Any) -> None:
        super().__init__(**item)
        self.record_id = record_id
        self.explanation = explanation


class MemstreamStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memstream records.

    ``memory`` is a ``Memory`` or a store URL (a path, ``postgresql://...``) to open one;
    ``namespace`` is the memstream namespace the items live in (the memory's default if None).
    ``index`` takes LangGraph's ``fields`` (JSON paths whose text is searched; the whole value by
    default); the vectors are made by the memory's own embedder, so ``embed`` and ``dims`` are
    not taken. ``ttl`` is LangGraph's ``TTLConfig``.
    """

    supports_ttl = True

    def __init__(self, memory: Memory | str | Path, *, namespace: str | None = None,
                 index: IndexConfig | None = None, ttl: TTLConfig | None = None) -> None:
        self._owned = not isinstance(memory, Memory)
        self.memory = memory if isinstance(memory, Memory) else Memory(memory)
        self.namespace = namespace
        self.index_config = index
        self.ttl_config = ttl
        self._fields = _index_fields(index, self.memory)
        self._lock = threading.RLock()
        self._sweeper: threading.Thread | None = None
        self._stop = threading.Event()

    # --- BaseStore ------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        with self._lock:
            return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def close(self) -> None:
        """Stop the sweeper and close the memory if this store opened it."""
        self.stop_ttl_sweeper()
        if self._owned:
            self.memory.close()

    def __enter__(self) -> MemstreamStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- TTL ------------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every item whose TTL has run out; returns how many."""
        with self._lock:
            now = self.memory.clock.now()
            expired = [r.id for r in self._records({"metadata.langgraph.ttl": {"ne": None}})
                       if _expired(r, now)]
            return records_of(self.memory).delete(self._ns(), expired) if expired else 0

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Sweep expired items in a background thread every ``sweep_interval_minutes`` (the
        ttl config's ``sweep_interval_minutes``, else 5)."""
        if self._sweeper is not None:
            return
        minutes = sweep_interval_minutes or (self.ttl_config or {}).get(
            "sweep_interval_minutes") or 5
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(float(minutes) * 60):
                self.sweep_ttl()

        self._sweeper = threading.Thread(target=loop, name="memstream-ttl", daemon=True)
        self._sweeper.start()

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the background sweeper; True once it has stopped."""
        if self._sweeper is None:
            return True
        self._stop.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped

    # --- operations -----------------------------------------------------------------------------

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise InvalidInput(f"unknown LangGraph store operation {type(op).__name__}")

    def _ns(self) -> str:
        return self.namespace if self.namespace is not None else self.memory.config.namespace

    def _records(self, filters: Mapping[str, Any], *, limit: int | None = None,
                 offset: int = 0) -> list[Record]:
        return self.memory.get_all(namespace=self._ns(), kinds=KIND, filters=dict(filters),
                                   limit=limit, offset=offset, order="-created")

    def _find(self, namespace: tuple[str, ...], key: str) -> Record | None:
        found = self._records({"metadata.langgraph.ns": ".".join(namespace),
                               "metadata.langgraph.key": key}, limit=1)
        return found[0] if found else None

    def _get(self, op: GetOp) -> Item | None:
        record = self._find(tuple(op.namespace), op.key)
        if record is None or self._omit(record):
            return None
        if self._refresh(op.refresh_ttl) and _meta(record).get("ttl") is not None:
            records_of(self.memory).touch(self._ns(), [record.id], at=self.memory.clock.now())
        return _item(record)

    def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        if not namespace:
            raise InvalidInput("a LangGraph namespace needs at least one label")
        existing = self._find(namespace, op.key)
        if op.value is None:
            if existing is not None:
                records_of(self.memory).delete(self._ns(), [existing.id])
            return
        if not isinstance(op.value, Mapping):
            raise InvalidInput(f"a LangGraph item's value is a dict, not "
                               f"{type(op.value).__name__}")
        value = dict(op.value)
        texts = self._texts(value, op.index)
        ttl = self._ttl(op.ttl)
        meta = {_META: {"ns": ".".join(namespace), "key": op.key, "depth": len(namespace),
                        "path": {str(i): label for i, label in enumerate(namespace)},
                        "indexed": bool(texts), "ttl": ttl}}
        text = "\n".join(texts) if texts else f"{'/'.join(namespace)}/{op.key}"
        if existing is None:
            self.memory.add(text, namespace=self._ns(), kind=KIND, data=value, metadata=meta,
                            duplicates="keep")
        else:
            self.memory.update(existing.id, text=text, data=value, metadata=meta,
                               namespace=self._ns())

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit < 0 or op.offset < 0:
            raise InvalidInput("a LangGraph search's limit and offset are whole numbers >= 0")
        filters, checks = _translate(op.filter or {})
        filters.update({f"metadata.langgraph.path.{i}": label
                        for i, label in enumerate(op.namespace_prefix)})
        refresh = self._refresh(op.refresh_ttl)
        exact = not checks and not (self.ttl_config or {}).get("omit_expired")
        if not op.query:
            records = self._records(filters, limit=op.offset + op.limit if exact else None)
            records = [r for r in records if self._keep(r, checks)][op.offset:]
            found: list[tuple[Record, float | None, dict[str, Any] | None]] = [
                (r, None, None) for r in records[: op.limit]]
        else:
            hits = self.memory.search(
                op.query, namespace=self._ns(), kinds=KIND, touch=refresh,
                k=op.offset + op.limit if exact else max(op.offset + op.limit, 1000),
                filters={**filters, "metadata.langgraph.indexed": True})
            kept = [h for h in hits if self._keep(h.record, checks)][op.offset:]
            found = [(h.record, h.score, h.explain.to_dict()) for h in kept[: op.limit]]
        if refresh and not op.query:
            ids = [r.id for r, _, _ in found if _meta(r).get("ttl") is not None]
            if ids:
                records_of(self.memory).touch(self._ns(), ids, at=self.memory.clock.now())
        return [_search_item(r, score, why) for r, score, why in found]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen = {_namespace(r) for r in self._records({}) if not self._omit(r)}
        matching = [ns for ns in seen
                    if all(_matches(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            matching = list({ns[: op.max_depth] for ns in matching})
        return sorted(matching)[op.offset: op.offset + op.limit]

    # --- helpers --------------------------------------------------------------------------------

    def _texts(self, value: dict[str, Any], index: Any) -> list[str]:
        if index is False:
            return []
        fields = self._fields if index is None else [(f, tokenize_path(f)) for f in index]
        texts: list[str] = []
        for name, path in fields:
            found = _leaves(value) if name == "$" else get_text_at_path(value, path)
            texts += [t for t in found if t and t.strip()]
        return texts

    def _ttl(self, ttl: Any) -> float | None:
        if isinstance(ttl, NotProvided):
            ttl = (self.ttl_config or {}).get("default_ttl")
        if ttl is None:
            return None
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
            raise InvalidInput(f"a TTL is a number of minutes > 0, not {ttl!r}")
        return float(ttl)

    def _refresh(self, asked: bool | None) -> bool:
        if asked is not None:
            return asked
        return bool((self.ttl_config or {}).get("refresh_on_read", True))

    def _omit(self, record: Record) -> bool:
        return bool((self.ttl_config or {}).get("omit_expired")) \
            and _expired(record, self.memory.clock.now())

    def _keep(self, record: Record, checks: list[tuple[tuple[str, ...], Any]]) -> bool:
        return not self._omit(record) and all(
            _lookup(record.data or {}, path) == want for path, want in checks)


def _index_fields(index: IndexConfig | None, memory: Memory) -> list[tuple[str, Any]]:
    if index is None:
        return [("$", tokenize_path("$"))]
    if not isinstance(index, Mapping):
        raise InvalidInput("index is LangGraph's IndexConfig dict, e.g. {'fields': ['text']}")
    if index.get("embed") is not None:
        raise InvalidInput(
            "MemstreamStore embeds with the memory's own embedder (Memory(embedder=...)); "
            "leave out index['embed'] and index['dims'] and give only index['fields']")
    dims = index.get("dims")
    if dims is not None and memory.embedder is not None and dims != memory.embedder.dim:
        raise InvalidInput(f"index['dims'] is {dims}, but the memory's embedder "
                           f"{memory.embedder.name} makes {memory.embedder.dim}-d vectors")
    fields = index.get("fields") or ["$"]
    return [(f, tokenize_path(f)) for f in fields]


def _translate(raw: Mapping[str, Any], prefix: str = ""
               ) -> tuple[dict[str, Any], list[tuple[tuple[str, ...], Any]]]:
    """LangGraph's filter as memstream's (``$gt`` -> ``gt`` on ``data.<key>``), plus the
    conditions memstream's filters cannot say (equality with a list), checked in Python."""
    out: dict[str, Any] = {}
    checks: list[tuple[tuple[str, ...], Any]] = []
    for key, want in raw.items():
        if not isinstance(key, str):
            raise InvalidInput(f"filter keys are strings, not {key!r}")
        path = f"{prefix}{key}"
        if isinstance(want, Mapping) and any(str(k).startswith("$") for k in want):
            ops = {}
            for name, operand in want.items():
                if name not in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"):
                    raise InvalidInput(f"unknown filter operator {name!r} on {key!r}; "
                                       "LangGraph's are $eq, $ne, $gt, $gte, $lt, $lte")
                ops[name[1:]] = operand
            out[f"data.{path}"] = ops
        elif isinstance(want, Mapping):
            sub, more = _translate(want, f"{path}.")
            out.update(sub)
            checks += more
        elif isinstance(want, list | tuple):
            checks.append((tuple(path.split(".")), list(want)))
        else:
            out[f"data.{path}"] = want
    return out, checks


def _leaves(value: Any, prefix: str = "") -> list[str]:
    """The whole value as text: one ``path: value`` line per leaf (reads better to an embedder
    and a keyword index than the JSON would)."""
    if isinstance(value, Mapping):
        return [line for k, v in value.items() for line in _leaves(v, f"{prefix}{k}.")]
    if isinstance(value, list | tuple):
        return [line for v in value for line in _leaves(v, prefix)]
    return [] if value is None else [f"{prefix[:-1]}: {value}" if prefix else str(value)]


def _lookup(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return list(value) if isinstance(value, tuple) else value


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path, strict=False) if condition.match_type == "prefix" \
        else zip(reversed(namespace), reversed(path), strict=False)
    return all(want == "*" or have == want for have, want in pairs)


def _meta(record: Record) -> dict[str, Any]:
    meta = (record.metadata or {}).get(_META)
    return meta if isinstance(meta, dict) else {}


def _namespace(record: Record) -> tuple[str, ...]:
    path = _meta(record).get("path") or {}
    return tuple(path[str(i)] for i in range(len(path)))


def _expired(record: Record, now: float) -> bool:
    ttl = _meta(record).get("ttl")
    if ttl is None:
        return False
    since = max(record.last_accessed_at, record.updated_at or 0.0, record.created_at)
    return now >= since + float(ttl) * 60


def _when(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


def _item(record: Record) -> Item:
    return Item(value=dict(record.data or {}), key=str(_meta(record)["key"]),
                namespace=_namespace(record), created_at=_when(record.created_at),
                updated_at=_when(record.updated_at or record.created_at))


def _search_item(record: Record, score: float | None,
                 explanation: dict[str, Any] | None) -> SearchItem:
    return MemstreamSearchItem(
        record_id=record.id, explanation=explanation, namespace=_namespace(record),
        key=str(_meta(record)["key"]), value=dict(record.data or {}),
        created_at=_when(record.created_at),
        updated_at=_when(record.updated_at or record.created_at), score=score)
