"""The learning API other libraries expose, as a drop-in facade over ``memstream.learning``.

Replace ``from alma... import LearningProtocol, MemoryScope`` with
``from memstream.compat.learning import LearningProtocol, MemoryScope``. ``storage`` is a
``memstream.Memory`` or a storage backend with the original's methods (``MemoryStorage``,
``SQLiteStorage``: ``save_outcome``, ``get_heuristics``, ``delete_outcomes_older_than``, ...);
``protocol.storage`` is always such a backend, so code that calls the storage directly runs
unchanged. The original's exceptions are here under their names (``ScopeViolationError`` is
memstream's ``ScopeViolation``, ``ALMAError`` its ``MemstreamError``, ...). As in the
original, ``embedder`` (anything with ``encode(text)`` or a memstream embedder) enables
embedding similarity of strategies, and without one strategies are compared by word overlap.
Unlike the original, a heuristic is updated instead of duplicated, anti-patterns get their
better alternative, and forgetting removes records from every index.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.memory import Memory
from ..errors import (
    BackendUnavailable,
    EmbeddingError,
    InvalidInput,
    LLMError,
    MemstreamError,
    NotFound,
    ScopeViolation,
)
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
from .learning_storage import MemoryStorage, SQLiteStorage

__all__ = ["ALMAError", "AntiPattern", "ConfigurationError", "DomainKnowledge", "EmbeddingError",
           "ExtractionError", "Heuristic", "LearningProtocol", "MemoryScope", "MemoryStorage",
           "Outcome", "RetrievalError", "SQLiteStorage", "ScopeViolationError", "StorageError",
           "UserPreference"]

# the original's exception names, as memstream's own classes (one error tree)
ALMAError = MemstreamError
ConfigurationError = InvalidInput
ScopeViolationError = ScopeViolation
StorageError = BackendUnavailable
RetrievalError = NotFound
ExtractionError = LLMError


class LearningProtocol:
    """learn / add_preference / add_domain_knowledge / forget, with the original signatures."""

    def __init__(self, storage: Memory | MemoryStorage, scopes: Mapping[str, MemoryScope],
                 embedder: Any = None, similarity_threshold: float = 0.75) -> None:
        if isinstance(storage, Memory):
            storage = MemoryStorage(storage)
        elif not isinstance(storage, MemoryStorage):
            raise InvalidInput(
                f"storage must be a memstream Memory or a memstream.compat.learning storage "
                f"backend (MemoryStorage, SQLiteStorage), not {type(storage).__name__}")
        self.storage = storage
        self.scopes = dict(scopes)
        self.embedder = embedder
        self.similarity_threshold = similarity_threshold
        self.learner = Learner(storage.memory, scopes=self.scopes, namespace=storage.namespace,
                               embedder=embedder, similarity_threshold=similarity_threshold)

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
        return self.learner.retrieve(task, agent, user_id=user_id, k=top_k)
