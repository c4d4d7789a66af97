"""A record built from ``add``'s arguments, every one validated: what ``Memory.add`` and
``Memory.add_many`` store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import _validate as v
from ._ids import new_id
from ._types import Record
from .clock import SimulationClock, TimeLike, to_timestamp
from .cognition.importance import heuristic_importance

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["build_record"]


def build_record(mem: Memory, content: str | bytes, *, namespace: str | None,
             user_id: str | None, agent_id: str | None, run_id: str | None, kind: str,
             data: Mapping[str, Any] | None, importance: float | None, step: int | None,
             at: TimeLike | None, metadata: Mapping[str, Any] | None,
             provenance: Sequence[str] | None, embedding: Any) -> Record:
    text = v.text(content, max_bytes=mem.config.max_text_bytes)
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
        id=new_id(created), namespace=mem._ns(namespace), text=text, kind=kind,
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
