"""A record built from ``add``'s arguments, every one validated: what ``Memory.add`` and
``Memory.add_many`` store."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Unpack

from .._types import Record
from ..cognition.importance import heuristic_importance
from ..core import validate as v
from ..core.aliases import unalias
from ..core.clock import SimulationClock, to_timestamp
from ..core.ids import new_id
from ..errors import InvalidInput
from ..scope import RecordArgs

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["build_record"]


def build_record(mem: Memory, text: str | bytes, **args: Unpack[RecordArgs]) -> Record:
    """The record of ``text`` and ``add``'s keywords (``RecordArgs``); a keyword it does not
    know is a TypeError, as for any call."""
    unknown = set(args) - RecordArgs.__optional_keys__
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(sorted(unknown))}")
    text = v.text(text, max_bytes=mem.config.max_text_bytes)
    kind = v.kind(args.get("kind", "observation"))
    step = v.step(args.get("step"))
    at, importance = args.get("at"), args.get("importance")
    provenance, embedding = args.get("provenance"), args.get("embedding")
    if at is not None:
        created = to_timestamp(at)
    elif step is not None and isinstance(mem.clock, SimulationClock):
        created = mem.clock.time_of(step)
    else:
        created = mem.clock.now()
    imp = v.importance(importance)
    limit = mem.config.max_text_bytes
    record = Record(
        id=new_id(created), namespace=mem.config.namespace_of(args.get("namespace")),
        text=text, kind=kind, data=v.json_object(args.get("data"), "data", max_bytes=limit),
        user_id=v.scope_id(args.get("user_id"), "user_id"),
        agent_id=v.scope_id(args.get("agent_id"), "agent_id"),
        run_id=v.scope_id(args.get("run_id"), "run_id"),
        step=step, importance=imp if imp is not None else heuristic_importance(text, kind),
        created_at=created, last_accessed_at=created,
        provenance=v.ids(provenance),
        metadata=v.json_object(args.get("metadata"), "metadata", max_bytes=limit) or {})
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
        try:
            records.append(build_record(mem, args.pop("text"), **args))
        except TypeError as exc:
            raise InvalidInput(f"item {n}: {exc}") from exc
        except InvalidInput as exc:
            raise InvalidInput(f"item {n}: {exc}") from exc
        if args.get("importance") is None:
            rate.append(records[-1].id)
    return records, rate
