"""Typed payloads of the learning records, and an agent's scope.

Each model is stored as one record of the memory stream: ``kind`` names the model, ``data``
holds its fields (times as ISO strings), ``text`` is what retrieval searches.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

__all__ = ["AntiPattern", "DomainKnowledge", "Heuristic", "MemoryScope", "Outcome",
           "UserPreference"]

M = TypeVar("M", bound="_Model")


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Model:
    kind: ClassVar[str] = ""
    id: str

    def payload(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):
            if f.name == "id":
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
            if isinstance(value, str) and f.type in ("datetime", "datetime | None"):
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
    task_type: str = "general"


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
    task_type: str = "general"


@dataclass
class UserPreference(_Model):
    """A user's preference; confidence 1.0 for an explicit instruction, 0.7 otherwise."""

    kind: ClassVar[str] = "preference"
    user_id: str = ""
    category: str = ""
    preference: str = ""
    source: str = ""
    confidence: float = 0.7
    timestamp: datetime = field(default_factory=_now)


@dataclass
class DomainKnowledge(_Model):
    """A fact about a domain; confidence 1.0 when the user stated it, 0.8 otherwise."""

    kind: ClassVar[str] = "fact"
    agent: str = ""
    project_id: str = ""
    domain: str = ""
    fact: str = ""
    source: str = ""
    confidence: float = 0.8
    last_verified: datetime = field(default_factory=_now)


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
    min_occurrences_for_heuristic: int = 3
    inherit_from: list[str] = field(default_factory=list)
    share_with: list[str] = field(default_factory=list)

    def allows(self, domain: str) -> bool:
        if domain in self.cannot_learn:
            return False
        return not self.can_learn or domain in self.can_learn
