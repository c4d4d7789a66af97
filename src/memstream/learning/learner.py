"""``Learner``: turn task outcomes into heuristics and anti-patterns, in the memory stream.

Rules (the spec's thresholds; see docs/learning.md):

* ``learn`` checks the agent's scope first (no scope: allowed, with a logged warning; a task
  type outside the scope: ScopeViolation, nothing stored), infers the task type when none is
  given, and stores the outcome.
* Heuristics: among the agent's most recent ``window`` (50) outcomes of that task type in that
  project, those whose strategy is similar to this one (calibrated embedding similarity >=
  ``similarity_threshold`` 0.75; without an embedder, word overlap) are counted. With at least
  ``min_occurrences`` (3, or the scope's) of them, confidence = successes / count. An existing
  heuristic for the same agent, project, task type and a similar strategy is updated (never
  duplicated); otherwise one is created when confidence > 0.5. Its provenance lists the
  outcomes it rests on and its importance is its confidence.
* Anti-patterns: on a failure with an error message, the agent's ``failure_window`` (10) most
  recent outcomes in the project are searched for failures with a similar error (one contains
  the other, ignoring case, or similar embeddings). At two or more, the anti-pattern for that
  error is created or updated; its better alternative is the strategy of the most confident
  heuristic of the task type, when there is one.
* Confidence of a heuristic decays while it is not re-validated: effective confidence =
  confidence * 0.5 ** (days since last validated / ``half_life_days``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from .._types import Record
from ..core.aliases import renamed
from ..embed.protocol import calibrated_similarity
from ..errors import InvalidInput, ScopeViolation
from .models import (
    AntiPattern,
    DomainKnowledge,
    Heuristic,
    MemoryScope,
    Model,
    Outcome,
    UserPreference,
)
from .retrieve import LearnedContext, retrieve
from .similarity import errors_similar, infer_task_type, same_order, words_overlap

if TYPE_CHECKING:  # the facade sits above this layer: used, never imported at run time
    from ..engine.memory import Memory

__all__ = ["Learner"]

log = logging.getLogger("memstream.learning")
SOURCE = {"metadata.source": "learning"}
_AUTO = object()
_DAY = 86400.0
_UNSCOPED: set[str] = set()  # agents already warned about


class Learner:
    """Learning from outcomes for the agents of one namespace of a ``Memory``."""

    def __init__(self, memory: Memory, *,
                 scopes: Mapping[str, MemoryScope] | Iterable[MemoryScope] | None = None,
                 namespace: str | None = None, embedder: Any = _AUTO,
                 similarity_threshold: float = 0.75, half_life_days: float = 30.0,
                 window: int = 50, failure_window: int = 10) -> None:
        if not 0 < similarity_threshold <= 1:
            raise InvalidInput("similarity_threshold must be in (0, 1]")
        if half_life_days <= 0:
            raise InvalidInput("half_life_days must be > 0")
        self.memory = memory
        self.namespace = namespace
        if scopes is None:
            scopes = {}
        self.scopes: dict[str, MemoryScope] = (
            dict(scopes) if isinstance(scopes, Mapping) else {s.agent_name: s for s in scopes})
        self.embedder: Any = memory.embedder if embedder is _AUTO else embedder
        self.similarity_threshold = similarity_threshold
        self.half_life_days = half_life_days
        self.window = window
        self.failure_window = failure_window
        self._vectors: dict[str, np.ndarray] = {}

    @classmethod
    def of(cls, memory: Memory, namespace: str | None = None) -> Learner:
        """The namespace's learner of this process (no scopes, the memory's embedder), shared
        by every caller: its strategy vectors are computed once."""
        return memory.capabilities.get(("learner", namespace),
                                       lambda: cls(memory, namespace=namespace), cls)

    # --- similarity ---------------------------------------------------------------------------

    def _vector(self, text: str) -> np.ndarray:
        if text not in self._vectors:
            emb = self.embedder
            if hasattr(emb, "embed_documents"):
                vec = np.asarray(emb.embed_documents([text])[0], dtype=np.float32)
            else:  # an object with encode(text), as other learning libraries take
                vec = np.asarray(emb.encode(text), dtype=np.float32)
            norm = float(np.linalg.norm(vec))
            self._vectors[text] = vec / norm if norm else vec
            if len(self._vectors) > 4096:
                self._vectors.clear()
        return self._vectors[text]

    def similar(self, a: str, b: str) -> bool:
        """Whether two strategies count as the same (see the module rules): alike, and their
        shared steps in the same order (``same_order``)."""
        if not same_order(a, b):
            return False
        if self.embedder is None:
            return words_overlap(a, b)
        cosine = float(self._vector(a) @ self._vector(b))
        return calibrated_similarity(cosine, self.embedder) >= self.similarity_threshold

    def _errors_match(self, a: str, b: str) -> bool:
        return errors_similar(a, b) or (self.embedder is not None and self.similar(a, b))

    # --- scope ---------------------------------------------------------------------------------

    def _check_scope(self, agent: str, domain: str) -> MemoryScope | None:
        scope = self.scopes.get(agent)
        if scope is None:
            if agent not in _UNSCOPED:  # said once per agent and process, not at every call
                _UNSCOPED.add(agent)
                log.warning("agent %r has no scope; learning without limits", agent)
        elif not scope.allows(domain):
            raise ScopeViolation(
                f"agent {agent!r} may not learn in {domain!r}: its scope allows "
                f"{scope.can_learn or 'everything'} and forbids {scope.cannot_learn or 'nothing'}"
            )
        return scope

    def readable_agents(self, agent: str) -> list[str]:
        """The agent itself, those it inherits from, and those that share with it."""
        scope = self.scopes.get(agent)
        agents = {agent, *(scope.inherit_from if scope else [])}
        agents |= {name for name, s in self.scopes.items() if agent in s.share_with}
        return sorted(agents)

    # --- storage helpers -----------------------------------------------------------------------

    def save(self, model: Model, *, provenance: list[str] | None = None,
             extra: Mapping[str, Any] | None = None) -> Record:
        """Store a model as it is, with no learning rule (what the storage API's ``save_*``
        do): its agent or user, its importance (``model.importance()``) and its text;
        ``extra`` fields are kept beside the model's own."""
        return self.memory.add(model.text(), kind=model.kind,
                               data={**model.payload(), **(extra or {})},
                               agent_id=getattr(model, "agent", None) or None,
                               user_id=getattr(model, "user_id", None) or None,
                               namespace=self.namespace, metadata={"source": "learning"},
                               importance=model.importance(), provenance=provenance,
                               duplicates="keep")

    def records(self, kind: str, *, agent: str | None, limit: int | None,
                **filters: Any) -> list[Record]:
        """The learning records of one kind (of one agent, or all), newest first; ``filters``
        select on their fields."""
        return self.memory.get_all(namespace=self.namespace, agent_id=agent, kinds=kind,
                                   filters={**SOURCE, **filters}, limit=limit,
                                   order="-created")

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.memory.clock.now(), tz=UTC)

    # --- learning ------------------------------------------------------------------------------

    def learn(self, agent: str, project_id: str, task: str, outcome: bool, strategy_used: str,
              task_type: str | None = None, duration_ms: int | None = None,
              error_message: str | None = None, feedback: str | None = None, *,
              error: str | None = None) -> Outcome:
        """Record how an attempt went and update heuristics and anti-patterns. ``error`` is
        ``error_message`` by the name the CLI (``--error``) and docs/learning.md use."""
        if error is not None:
            if error_message is not None and error_message != error:
                raise InvalidInput("error and error_message are the same field; give one")
            error_message = error
        for value, name in ((agent, "agent"), (project_id, "project_id")):
            if not isinstance(value, str) or not value.strip():
                raise InvalidInput(f"{name} must be a non-empty string, got {value!r}")
        if not isinstance(outcome, bool):
            raise InvalidInput("outcome must be True (success) or False (failure)")
        if not strategy_used or not str(strategy_used).strip():
            raise InvalidInput("strategy_used is empty; say what the agent did")
        task_type = task_type or infer_task_type(task)
        scope = self._check_scope(agent, task_type)
        now = self._now()
        record = Outcome(id="", agent=agent, project_id=project_id, task_type=task_type,
                         task_description=task, success=outcome, strategy_used=strategy_used,
                         duration_ms=duration_ms, error_message=error_message,
                         user_feedback=feedback, timestamp=now)
        stored = self.save(record)
        record.id = stored.id
        min_occ = scope.min_occurrences_for_heuristic if scope else 3
        self._update_heuristic(agent, project_id, task_type, strategy_used, min_occ, now)
        if not outcome and error_message:
            self._update_anti_pattern(agent, project_id, task_type, strategy_used,
                                      error_message, now)
        return record

    def _outcomes(self, agent: str, project_id: str, limit: int,
                  task_type: str | None = None) -> list[Outcome]:
        filters: dict[str, Any] = {"project_id": project_id}
        if task_type is not None:
            filters["task_type"] = task_type
        return [Outcome.from_record(r.id, r.data or {})
                for r in self.records("outcome", agent=agent, limit=limit, **filters)]

    def _update_heuristic(self, agent: str, project_id: str, task_type: str, strategy: str,
                          min_occ: int, now: datetime) -> None:
        recent = self._outcomes(agent, project_id, self.window, task_type)
        same = [o for o in recent if self.similar(o.strategy_used, strategy)]
        if len(same) < min_occ:
            return
        successes = sum(1 for o in same if o.success)
        confidence = successes / len(same)
        existing = next((h for h in self.heuristics(agent, project_id, task_type=task_type)
                         if self.similar(h.strategy, strategy)), None)
        provenance = [o.id for o in same]
        if existing is not None:
            existing.confidence, existing.occurrence_count = confidence, len(same)
            existing.success_count, existing.last_validated = successes, now
            self.memory.update(existing.id, data=existing.payload(), importance=confidence,
                               provenance=provenance, namespace=self.namespace)
        elif confidence > 0.5:
            h = Heuristic(id="", agent=agent, project_id=project_id,
                          condition=f"task type: {task_type}", strategy=strategy,
                          confidence=confidence, occurrence_count=len(same),
                          success_count=successes, last_validated=now, created_at=now,
                          task_type=task_type)
            self.save(h, provenance=provenance)

    def _update_anti_pattern(self, agent: str, project_id: str, task_type: str, strategy: str,
                             error: str, now: datetime) -> None:
        recent = self._outcomes(agent, project_id, self.failure_window)
        failures = [o for o in recent if not o.success and o.error_message
                    and self._errors_match(o.error_message, error)]
        if len(failures) < 2:
            return
        others = [h for h in self.heuristics(agent, project_id, task_type=task_type)
                  if not self.similar(h.strategy, strategy)]  # never "instead, do the same"
        best = max(others, key=lambda h: self.effective_confidence(h), default=None)
        better = best.strategy if best is not None else None
        existing = next((a for a in self.anti_patterns(agent, project_id)
                         if self._errors_match(a.why_bad, error)), None)
        provenance = [o.id for o in failures]
        if existing is not None:
            existing.occurrence_count = max(existing.occurrence_count + 1, len(failures))
            existing.last_seen, existing.pattern = now, strategy
            existing.better_alternative = better or existing.better_alternative
            self.memory.update(existing.id, data=existing.payload(), provenance=provenance,
                               namespace=self.namespace)
            return
        ap = AntiPattern(id="", agent=agent, project_id=project_id, pattern=strategy,
                         why_bad=error, better_alternative=better,
                         occurrence_count=len(failures), last_seen=now, task_type=task_type)
        self.save(ap, provenance=provenance)

    def add_preference(self, user_id: str, category: str, preference: str,
                       source: str) -> UserPreference:
        """A user's preference; confidence 1.0 when ``source`` is "explicit_instruction"."""
        pref = UserPreference(id="", user_id=user_id, category=category, preference=preference,
                              source=source,
                              confidence=1.0 if source == "explicit_instruction" else 0.7,
                              timestamp=self._now())
        pref.id = self.save(pref).id
        return pref

    def add_domain_knowledge(self, agent: str, project_id: str, domain: str, fact: str,
                             source: str) -> DomainKnowledge:
        """A fact; confidence 1.0 when ``source`` is "user_stated". The domain must be in the
        agent's scope."""
        self._check_scope(agent, domain)
        dk = DomainKnowledge(id="", agent=agent, project_id=project_id, domain=domain, fact=fact,
                             source=source, confidence=1.0 if source == "user_stated" else 0.8,
                             last_verified=self._now())
        dk.id = self.save(dk).id
        return dk

    # --- reading and forgetting ------------------------------------------------------------------

    def effective_confidence(self, h: Heuristic, now: datetime | None = None) -> float:
        """Confidence after decay for the days since it was last validated."""
        now = now or self._now()
        days = max(0.0, (now - h.last_validated).total_seconds() / _DAY)
        return float(h.confidence * 0.5 ** (days / self.half_life_days))

    def heuristics(self, agent: str | None, project_id: str | None = None, *,
                   task_type: str | None = None) -> list[Heuristic]:
        """The stored heuristics (newest first), as they are (see ``effective_confidence``)."""
        filters: dict[str, Any] = {}
        if project_id is not None:
            filters["project_id"] = project_id
        if task_type is not None:
            filters["task_type"] = task_type
        return [Heuristic.from_record(r.id, r.data or {})
                for r in self.records("heuristic", agent=agent, limit=None, **filters)]

    def anti_patterns(self, agent: str | None, project_id: str | None = None
                      ) -> list[AntiPattern]:
        filters = {"project_id": project_id} if project_id is not None else {}
        return [AntiPattern.from_record(r.id, r.data or {})
                for r in self.records("anti_pattern", agent=agent, limit=None, **filters)]

    @renamed(top_k="k")
    def retrieve(self, task: str, agent: str, user_id: str | None = None, k: int = 5,
                 project_id: str | None = None) -> LearnedContext:
        """Ranked advice for a task, at most ``k`` of each kind (see ``learning.retrieve``)."""
        return retrieve(self, task, agent, user_id=user_id, top_k=k, project_id=project_id)

    def forget(self, project_id: str, agent: str | None = None, older_than_days: float = 90,
               below_confidence: float = 0.3) -> int:
        """Delete the project's outcomes older than ``older_than_days`` and its heuristics whose
        effective confidence is below ``below_confidence``, from every index. Returns how many
        records were deleted."""
        now = self._now()
        cutoff = now.timestamp() - older_than_days * _DAY
        old = [r.id for r in self.memory.get_all(
            namespace=self.namespace, agent_id=agent, kinds="outcome", until=cutoff,
            filters={**SOURCE, "project_id": project_id}, limit=None, include_invalid=True)]
        weak = [h.id for h in self.heuristics(agent, project_id)
                if self.effective_confidence(h, now) < below_confidence]
        removed = 0
        for rid in old + weak:
            self.memory.delete(rid, namespace=self.namespace)
            removed += 1
        log.info("forgot %d outcomes and %d heuristics in %s", len(old), len(weak), project_id)
        return removed
