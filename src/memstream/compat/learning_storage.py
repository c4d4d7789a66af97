"""The learning API's storage backend, backed by memstream.

Code written for the original calls its storage directly (``storage.get_heuristics(project_id,
agent=...)``, ``storage.save_outcome(outcome)``, ...). ``MemoryStorage`` has those methods, with
the same names, arguments and return values, over a ``memstream.Memory``: every item is a
learning record of the memory stream (searchable, explainable, forgotten from every index).
``SQLiteStorage(db_path)`` opens a memstream SQLite file the way the original opens its own.

Ids: an item saved with an id keeps it (the caller's id is kept with the record, and every
method that takes an id accepts it); an item saved with an empty id gets the record's id.
``embedding``: items saved with an embedding are ranked by cosine similarity to a query
``embedding``, best first (items without one follow); without a query embedding, heuristics and
knowledge come by confidence, outcomes and anti-patterns newest first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..errors import NotFound
from ..learning import (
    AntiPattern,
    DomainKnowledge,
    Heuristic,
    Learner,
    Outcome,
    UserPreference,
)
from ..learning.models import Model

if TYPE_CHECKING:
    from .._types import Record
    from ..engine.memory import Memory

__all__ = ["MemoryStorage", "SQLiteStorage"]

M = TypeVar("M", Outcome, Heuristic, AntiPattern, UserPreference, DomainKnowledge)
_REF = "ref"  # the data field holding the caller's own id


class MemoryStorage:
    """The original storage backend's methods over a ``Memory`` (one namespace of it)."""

    def __init__(self, memory: Memory, namespace: str | None = None) -> None:
        self.memory = memory
        self.namespace = namespace
        self._learner = Learner(memory, namespace=namespace, embedder=None)

    # --- writes --------------------------------------------------------------------------------

    def _save(self, item: Model) -> str:
        if item.id:  # the caller's id is kept with the record
            self._learner.save(item, extra={_REF: item.id})
        else:
            item.id = self._learner.save(item).id
        return item.id

    def save_heuristic(self, heuristic: Heuristic) -> str:
        return self._save(heuristic)

    def save_outcome(self, outcome: Outcome) -> str:
        return self._save(outcome)

    def save_user_preference(self, preference: UserPreference) -> str:
        return self._save(preference)

    def save_domain_knowledge(self, knowledge: DomainKnowledge) -> str:
        return self._save(knowledge)

    def save_anti_pattern(self, anti_pattern: AntiPattern) -> str:
        return self._save(anti_pattern)

    def save_heuristics(self, heuristics: Sequence[Heuristic]) -> list[str]:
        return [self._save(h) for h in heuristics]

    def save_outcomes(self, outcomes: Sequence[Outcome]) -> list[str]:
        return [self._save(o) for o in outcomes]

    def save_domain_knowledge_batch(self, knowledge_items: Sequence[DomainKnowledge]
                                    ) -> list[str]:
        return [self._save(k) for k in knowledge_items]

    # --- reads ---------------------------------------------------------------------------------

    def _items(self, model: type[M], agent: str | None, **filters: Any) -> list[tuple[Record, M]]:
        records = self._learner.records(model.kind, agent=agent, limit=None,
                                        **{k: val for k, val in filters.items()
                                           if val is not None})
        return [(r, _model(model, r)) for r in records]

    @staticmethod
    def _top(items: list[tuple[Record, M]], embedding: Sequence[float] | None, top_k: int,
             scope_filter: Mapping[str, Any] | None, order: Callable[[M], Any] | None = None
             ) -> list[M]:
        chosen = [m for _, m in items
                  if all(m.metadata.get(k) == val for k, val in (scope_filter or {}).items())]
        if embedding is not None:
            chosen.sort(key=lambda m: -_cosine(embedding, getattr(m, "embedding", None)))
        elif order is not None:
            chosen.sort(key=order)
        return chosen[:top_k]

    def get_heuristics(self, project_id: str, agent: str | None = None,
                       embedding: Sequence[float] | None = None, top_k: int = 5,
                       min_confidence: float = 0.0,
                       scope_filter: Mapping[str, Any] | None = None) -> list[Heuristic]:
        items = [(r, h) for r, h in self._items(Heuristic, agent, project_id=project_id)
                 if h.confidence >= min_confidence]
        return self._top(items, embedding, top_k, scope_filter, lambda h: -h.confidence)

    def get_outcomes(self, project_id: str, agent: str | None = None,
                     task_type: str | None = None, embedding: Sequence[float] | None = None,
                     top_k: int = 5, success_only: bool = False,
                     scope_filter: Mapping[str, Any] | None = None) -> list[Outcome]:
        items = self._items(Outcome, agent, project_id=project_id, task_type=task_type,
                            success=True if success_only else None)
        return self._top(items, embedding, top_k, scope_filter)  # newest first

    def get_user_preferences(self, user_id: str, category: str | None = None
                             ) -> list[UserPreference]:
        return [p for _, p in self._items(UserPreference, None, **{"data.user_id": user_id},
                                          category=category)]

    def get_domain_knowledge(self, project_id: str, agent: str | None = None,
                             domain: str | None = None,
                             embedding: Sequence[float] | None = None, top_k: int = 5,
                             scope_filter: Mapping[str, Any] | None = None
                             ) -> list[DomainKnowledge]:
        items = self._items(DomainKnowledge, agent, project_id=project_id, domain=domain)
        return self._top(items, embedding, top_k, scope_filter, lambda k: -k.confidence)

    def get_anti_patterns(self, project_id: str, agent: str | None = None,
                          embedding: Sequence[float] | None = None, top_k: int = 5,
                          scope_filter: Mapping[str, Any] | None = None) -> list[AntiPattern]:
        items = self._items(AntiPattern, agent, project_id=project_id)
        return self._top(items, embedding, top_k, scope_filter)  # newest first

    def get_heuristics_for_agents(self, project_id: str, agents: Sequence[str],
                                  embedding: Sequence[float] | None = None, top_k: int = 5,
                                  min_confidence: float = 0.0) -> list[Heuristic]:
        return [h for a in agents for h in self.get_heuristics(
            project_id, a, embedding, top_k, min_confidence)]

    def get_outcomes_for_agents(self, project_id: str, agents: Sequence[str],
                                task_type: str | None = None,
                                embedding: Sequence[float] | None = None, top_k: int = 5,
                                success_only: bool = False) -> list[Outcome]:
        return [o for a in agents for o in self.get_outcomes(
            project_id, a, task_type, embedding, top_k, success_only)]

    def get_domain_knowledge_for_agents(self, project_id: str, agents: Sequence[str],
                                        domain: str | None = None,
                                        embedding: Sequence[float] | None = None,
                                        top_k: int = 5) -> list[DomainKnowledge]:
        return [k for a in agents for k in self.get_domain_knowledge(
            project_id, a, domain, embedding, top_k)]

    def get_anti_patterns_for_agents(self, project_id: str, agents: Sequence[str],
                                     embedding: Sequence[float] | None = None, top_k: int = 5
                                     ) -> list[AntiPattern]:
        return [x for a in agents for x in self.get_anti_patterns(
            project_id, a, embedding, top_k)]

    def get_stats(self, project_id: str, agent: str | None = None) -> dict[str, Any]:
        kinds = {"heuristics": Heuristic.kind, "outcomes": Outcome.kind,
                 "domain_knowledge": DomainKnowledge.kind, "anti_patterns": AntiPattern.kind}
        counts = {f"{name}_count": len(self._learner.records(kind, agent=agent, limit=None,
                                                             project_id=project_id))
                  for name, kind in kinds.items()}
        counts["preferences_count"] = len(self._learner.records(
            UserPreference.kind, agent=None, limit=None))
        return {"project_id": project_id, "agent": agent, **counts,
                "total_count": sum(counts.values())}

    # --- updates and deletes -------------------------------------------------------------------

    def _find(self, model: type[M], item_id: str) -> tuple[Record, M] | None:
        """The record of an item, by the caller's id or the record's."""
        found = self._learner.records(model.kind, agent=None, limit=1, **{_REF: item_id})
        if not found:
            try:
                rec = self.memory.get(item_id, namespace=self.namespace)
            except NotFound:
                return None
            if rec.kind != model.kind or (rec.data or {}).get(_REF) not in (None, item_id):
                return None
            found = [rec]
        return found[0], _model(model, found[0])

    def _update(self, model: type[M], item_id: str, change: Callable[[M], None]) -> bool:
        found = self._find(model, item_id)
        if found is None:
            return False
        rec, item = found
        change(item)
        ref = (rec.data or {}).get(_REF)
        data = {**item.payload(), **({_REF: ref} if ref is not None else {})}
        self.memory.update(rec.id, text=item.text(), data=data, importance=item.importance(),
                           namespace=self.namespace)
        return True

    def update_heuristic(self, heuristic_id: str, updates: Mapping[str, Any]) -> bool:
        def change(h: Heuristic) -> None:
            for key, val in updates.items():
                setattr(h, key, val)
        return self._update(Heuristic, heuristic_id, change)

    def increment_heuristic_occurrence(self, heuristic_id: str, success: bool) -> bool:
        def change(h: Heuristic) -> None:
            h.occurrence_count += 1
            h.success_count += int(bool(success))
        return self._update(Heuristic, heuristic_id, change)

    def update_heuristic_confidence(self, heuristic_id: str, new_confidence: float) -> bool:
        return self._update(Heuristic, heuristic_id,
                            lambda h: setattr(h, "confidence", new_confidence))

    def update_knowledge_confidence(self, knowledge_id: str, new_confidence: float) -> bool:
        return self._update(DomainKnowledge, knowledge_id,
                            lambda k: setattr(k, "confidence", new_confidence))

    def _delete(self, model: type[M], item_id: str) -> bool:
        found = self._find(model, item_id)
        if found is None:
            return False
        self.memory.delete(found[0].id, namespace=self.namespace)
        return True

    def delete_heuristic(self, heuristic_id: str) -> bool:
        return self._delete(Heuristic, heuristic_id)

    def delete_outcome(self, outcome_id: str) -> bool:
        return self._delete(Outcome, outcome_id)

    def delete_domain_knowledge(self, knowledge_id: str) -> bool:
        return self._delete(DomainKnowledge, knowledge_id)

    def delete_anti_pattern(self, anti_pattern_id: str) -> bool:
        return self._delete(AntiPattern, anti_pattern_id)

    def delete_outcomes_older_than(self, project_id: str, older_than: datetime,
                                   agent: str | None = None) -> int:
        old = [r.id for r, o in self._items(Outcome, agent, project_id=project_id)
               if _aware(o.timestamp) < _aware(older_than)]
        for rid in old:
            self.memory.delete(rid, namespace=self.namespace)
        return len(old)

    def delete_low_confidence_heuristics(self, project_id: str, below_confidence: float,
                                         agent: str | None = None) -> int:
        weak = [r.id for r, h in self._items(Heuristic, agent, project_id=project_id)
                if h.confidence < below_confidence]
        for rid in weak:
            self.memory.delete(rid, namespace=self.namespace)
        return len(weak)


class SQLiteStorage(MemoryStorage):
    """``MemoryStorage`` over a memstream SQLite file (created when missing), opened as the
    original opens its own: ``SQLiteStorage(db_path)`` or ``SQLiteStorage.from_config({...})``.
    ``embedding_dim`` is accepted for compatibility; memstream's embedder decides."""

    def __init__(self, db_path: str | Path, embedding_dim: int | None = None,
                 auto_migrate: bool = True, **memory_options: Any) -> None:
        from ..engine.memory import Memory

        path = Path(db_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db_path = path
        self.embedding_dim = embedding_dim
        super().__init__(Memory(path, **memory_options))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SQLiteStorage:
        path = Path(config.get("storage_dir", ".alma")) / config.get("db_name", "alma.db")
        return cls(path, embedding_dim=config.get("embedding_dim"))

    def close(self) -> None:
        self.memory.close()


def _model(model: type[M], rec: Record) -> M:
    data = rec.data or {}
    item = model.from_record(str(data.get(_REF) or rec.id), data)
    return item


def _aware(t: datetime) -> float:
    return t.timestamp()  # naive times are local, as datetime.timestamp reads them


def _cosine(query: Sequence[float], vector: Sequence[float] | None) -> float:
    if vector is None or len(vector) != len(query):
        return -2.0  # after every item that has a comparable embedding
    a, b = np.asarray(query, dtype=float), np.asarray(vector, dtype=float)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm else 0.0
