"""Typed payloads of the learning records, and an agent's scope.

Each model is stored as one record of the memory stream: ``kind`` names the model, ``data``
holds its fields (times as ISO strings), ``text()`` is what retrieval searches. The fields, their
order and defaults are those of the learning API that ``memstream.compat.learning`` stands in
for (``embedding`` and ``metadata`` included), plus ``task_type`` on heuristics and
anti-patterns.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

__all__ = ["AntiPattern", "DomainKnowledge", "Heuristic", "MemoryScope", "Model", "Outcome",
           "UserPreference"]

M = TypeVar("M", bound="_Model")


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Model:
    kind: ClassVar[str] = ""
    id: str

    def text(self) -> str:
        """What retrieval searches."""
        raise NotImplementedError

    def importance(self) -> float:
        """The record's importance: the model's confidence where it has one."""
        return float(getattr(self, "confidence", 0.5))

    def payload(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):
            if f.name == "id" or (f.name == "embedding" and getattr(self, f.name) is None):
                continue
            value = getattr(self, f.name)
            out[f.name] = value.isoformat() if isinstance(value, datetime) else value
        return out

    @classmethod
    def from_record(cls: type[M], record_id: str, data: dict[str, Any]) -> M:
        values: dict[str, Any] = {"id": record_id}
        for f in dataclasses.fields(cls):
            if f.name == "id" or f.name not in data:
                continue
            value = data[f.name]
            if isinstance(value, str) and f.type == "datetime":
                value = datetime.fromisoformat(value)
            values[f.name] = value
        return cls(**values)


@dataclass
class Outcome(_Model):
    """How one attempt at a task went."""

    kind: ClassVar[str] = "outcome"
    agent: str = ""
    project_id: str = ""
    task_type: str = "general"
    task_description: str = ""
    success: bool = False
    strategy_used: str = ""
    duration_ms: int | None = None
    error_message: str | None = None
    user_feedback: str | None = None
    timestamp: datetime = field(default_factory=_now)
    embedding: list[float] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def importance(self) -> float:
        return 0.4 if self.success else 0.6  # a failure teaches more

    def text(self) -> str:
        verdict = "succeeded" if self.success else f"failed ({self.error_message})" \
            if self.error_message else "failed"
        return f"{self.task_description} - {verdict} with strategy: {self.strategy_used}"


@dataclass
class Heuristic(_Model):
    """A strategy that worked repeatedly under a condition; provenance = its outcomes."""

    kind: ClassVar[str] = "heuristic"
    agent: str = ""
    project_id: str = ""
    condition: str = ""
    strategy: str = ""
    confidence: float = 0.0
    occurrence_count: int = 0
    success_count: int = 0
    last_validated: datetime = field(default_factory=_now)
    created_at: datetime = field(default_factory=_now)
    embedding: list[float] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    task_type: str = "general"

    @property
    def success_rate(self) -> float:
        """Successes per occurrence (0 with none): the evidence behind the advice."""
        return self.success_count / self.occurrence_count if self.occurrence_count else 0.0

    def text(self) -> str:
        return f"When the task type is {self.task_type}: {self.strategy}"


@dataclass
class AntiPattern(_Model):
    """A strategy that failed repeatedly with a similar error; provenance = the failures."""

    kind: ClassVar[str] = "anti_pattern"
    agent: str = ""
    project_id: str = ""
    pattern: str = ""
    why_bad: str = ""
    better_alternative: str | None = None
    occurrence_count: int = 0
    last_seen: datetime = field(default_factory=_now)
    created_at: datetime = field(default_factory=_now)
    embedding: list[float] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    task_type: str = "general"

    def importance(self) -> float:
        return 0.8

    def text(self) -> str:
        return f"When the task type is {self.task_type}, avoid: {self.pattern}. It fails " \
            f"with: {self.why_bad}." + (
            f" Instead: {self.better_alternative}" if self.better_alternative else "")


@dataclass
class UserPreference(_Model):
    """A user's preference (``Learner.add_preference``: confidence 1.0 for an explicit
    instruction, 0.7 otherwise)."""

    kind: ClassVar[str] = "preference"
    user_id: str = ""
    category: str = ""
    preference: str = ""
    source: str = ""
    confidence: float = 1.0
    timestamp: datetime = field(default_factory=_now)
    metadata: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        return f"{self.category}: {self.preference}"


@dataclass
class DomainKnowledge(_Model):
    """A fact about a domain (``Learner.add_domain_knowledge``: confidence 1.0 when the user
    stated it, 0.8 otherwise)."""

    kind: ClassVar[str] = "fact"
    agent: str = ""
    project_id: str = ""
    domain: str = ""
    fact: str = ""
    source: str = ""
    confidence: float = 1.0
    last_verified: datetime = field(default_factory=_now)
    embedding: list[float] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        return f"{self.domain}: {self.fact}"


#: a model stored as one learning record
Model = Outcome | Heuristic | AntiPattern | UserPreference | DomainKnowledge


@dataclass
class MemoryScope:
    """What one agent may learn and read.

    ``can_learn``: the task types or domains it may learn in (empty: all); ``cannot_learn``:
    those it must not; ``min_occurrences_for_heuristic``: similar outcomes needed for a
    heuristic; ``inherit_from``: agents whose memories it may read; ``share_with``: agents that
    may read its memories.
    """

    agent_name: str
    can_learn: list[str] = field(default_factory=list)
    cannot_learn: list[str] = field(default_factory=list)
    share_with: list[str] = field(default_factory=list)
    inherit_from: list[str] = field(default_factory=list)
    min_occurrences_for_heuristic: int = 3

    def allows(self, domain: str) -> bool:
        if domain in self.cannot_learn:
            return False
        return not self.can_learn or domain in self.can_learn

    is_allowed = allows  # the original's name

    def get_readable_agents(self) -> list[str]:
        """This agent and those it inherits from."""
        return [self.agent_name, *self.inherit_from]

    def can_read_from(self, other_agent: str) -> bool:
        return other_agent == self.agent_name or other_agent in self.inherit_from

    def shares_with(self, other_agent: str) -> bool:
        return other_agent in self.share_with
