"""A record built from ``add``'s arguments, every one validated: what ``Memory.add`` and
``Memory.add_many`` store."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._types import Record
from ..cognition.importance import heuristic_importance
from ..core import validate as v
from ..core.aliases import unalias
from ..core.clock import SimulationClock, TimeLike, to_timestamp
from ..core.ids import new_id
from ..errors import InvalidInput

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["build_record"]


def build_record(mem: Memory, text: str | bytes, *, namespace: str | None,
             user_id: str | None, agent_id: str | None, run_id: str | None, kind: str,
             data: Mapping[str, Any] | None, importance: float | None, step: int | None,
             at: TimeLike | None, metadata: Mapping[str, Any] | None,
             provenance: Sequence[str] | None, embedding: Any) -> Record:
    text = v.text(text, max_bytes=mem.config.max_text_bytes)
    kind = v.kind(kind)
    step = v.step(step)
    if at is not None:
        created = to_timestamp(at)
    elif step is not None and isinstance(mem.clock, SimulationClock):
        created = mem.clock.time_of(step)
    else:
        created = mem.clock.now()
    imp = v.importance(importance)
    limit = mem.config.max_text_bytes
    record = Record(
        id=new_id(created), namespace=mem.config.namespace_of(namespace), text=text, kind=kind,
        data=v.json_object(data, "data", max_bytes=limit),
        user_id=v.scope_id(user_id, "user_id"), agent_id=v.scope_id(agent_id, "agent_id"),
        run_id=v.scope_id(run_id, "run_id"),
        step=step, importance=imp if imp is not None else heuristic_importance(text, kind),
        created_at=created, last_accessed_at=created,
        provenance=v.ids(provenance),
        metadata=v.json_object(metadata, "metadata", max_bytes=limit) or {})
    if embedding is not None:
        dim = mem.embedder.dim if mem.embedder is not None else None
        record.embedding = v.vector(embedding, dim)
    return record


def build_records(mem: Memory, items: Iterable[str | Mapping[str, Any]],
                  scope: Mapping[str, str | None]) -> tuple[list[Record], list[str]]:
    """``add_many``'s records: each item a text or a dict of ``add``'s arguments, the scope's
    fields filling those an item leaves out; with the ids of those whose importance is to be
    rated (none given). An item's error names the item."""
    records: list[Record] = []
    rate: list[str] = []
    for n, item in enumerate(items):
        args: dict[str, Any] = {"text": item} if isinstance(item, str | bytes) \
            else unalias(dict(item), {"content": "text"})
        if "text" not in args:
            raise InvalidInput(f"item {n} has no 'text'")
        for key, value in scope.items():
            if args.get(key) is None:
                args[key] = value
        args.setdefault("kind", "observation")
        for key in ("data", "importance", "step", "at", "metadata", "provenance", "embedding"):
            args.setdefault(key, None)
        try:
            records.append(build_record(mem, args.pop("text"), **args))
        except TypeError as exc:
            raise InvalidInput(f"item {n}: {exc}") from exc
        except InvalidInput as exc:
            raise InvalidInput(f"item {n}: {exc}") from exc
        if args.get("importance") is None:
            rate.append(records[-1].id)
    return records, rate
