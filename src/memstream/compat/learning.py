"""The learning API other libraries expose, as a drop-in facade over ``memstream.learning``.

Replace ``from alma... import LearningProtocol, MemoryScope`` with
``from memstream.compat.learning import LearningProtocol, MemoryScope``; ``storage`` is a
``memstream.Memory``. As in the original, ``embedder`` (anything with ``encode(text)`` or a
memstream embedder) enables embedding similarity of strategies, and without one strategies are
compared by word overlap. Unlike the original, a heuristic is updated instead of duplicated,
anti-patterns get their better alternative, and forgetting removes records from every index.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..learning import (
    AntiPattern,
    DomainKnowledge,
    Heuristic,
    LearnedContext,
    Learner,
    MemoryScope,
    Outcome,
    UserPreference,
)

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ["AntiPattern", "DomainKnowledge", "Heuristic", "LearningProtocol", "MemoryScope",
           "Outcome", "UserPreference"]


class LearningProtocol:
    """learn / add_preference / add_domain_knowledge / forget, with the original signatures."""

    def __init__(self, storage: Memory, scopes: Mapping[str, MemoryScope],
                 embedder: Any = None, similarity_threshold: float = 0.75) -> None:
        self.storage = storage
        self.scopes = dict(scopes)
        self.embedder = embedder
        self.similarity_threshold = similarity_threshold
        self.learner = Learner(storage, scopes=self.scopes, embedder=embedder,
                               similarity_threshold=similarity_threshold)

    def learn(self, agent: str, project_id: str, task: str, outcome: bool, strategy_used: str,
              task_type: str | None = None, duration_ms: int | None = None,
              error_message: str | None = None, feedback: str | None = None) -> Outcome:
        return self.learner.learn(agent, project_id, task, outcome, strategy_used,
                                  task_type=task_type, duration_ms=duration_ms,
                                  error_message=error_message, feedback=feedback)

    def add_preference(self, user_id: str, category: str, preference: str,
                       source: str) -> UserPreference:
        return self.learner.add_preference(user_id, category, preference, source)

    def add_domain_knowledge(self, agent: str, project_id: str, domain: str, fact: str,
                             source: str) -> DomainKnowledge:
        return self.learner.add_domain_knowledge(agent, project_id, domain, fact, source)

    def forget(self, project_id: str, agent: str | None = None, older_than_days: int = 90,
               below_confidence: float = 0.3) -> int:
        return self.learner.forget(project_id, agent=agent, older_than_days=older_than_days,
                                   below_confidence=below_confidence)

    def retrieve(self, task: str, agent: str, user_id: str | None = None,
                 top_k: int = 5) -> LearnedContext:
        return self.learner.retrieve(task, agent, user_id=user_id, top_k=top_k)
