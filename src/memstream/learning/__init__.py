"""Learning from outcomes: heuristics, anti-patterns, preferences, domain knowledge, scopes
and forgetting, all stored as records of the memory stream."""

from __future__ import annotations

from .learner import Learner
from .models import AntiPattern, DomainKnowledge, Heuristic, MemoryScope, Outcome, UserPreference
from .retrieve import LearnedContext, retrieve
from .similarity import infer_task_type

__all__ = ["AntiPattern", "DomainKnowledge", "Heuristic", "LearnedContext", "Learner",
           "MemoryScope", "Outcome", "UserPreference", "infer_task_type", "retrieve"]
