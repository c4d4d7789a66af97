"""memstream: long-term memory for LLM agents.

A memory stream with scored retrieval (recency, importance, relevance), in one SQLite file by
default. Start with ``Memory``::

    from memstream import Memory
    with Memory("agent.db") as mem:
        mem.add("The user prefers short answers", user_id="u1", kind="preference")
        for hit in mem.search("how should I answer?", user_id="u1"):
            print(hit.score, hit.record.text)
"""

from __future__ import annotations

from ._types import (
    KINDS,
    Entity,
    EntityProfile,
    Explanation,
    Finding,
    HistoryEntry,
    Hit,
    MemoryChange,
    Record,
)
from .client import Client
from .config import Config
from .core.clock import Clock, FixedClock, SimulationClock, WallClock
from .embed import Embedder, KeywordOnlyWarning
from .engine.memory import Context, Memory
from .engine.memory_async import AsyncMemory
from .errors import (
    BackendUnavailable,
    Conflict,
    CorruptStore,
    EmbeddingError,
    InvalidFilter,
    InvalidInput,
    LLMError,
    MemstreamError,
    MissingDependency,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ScopeViolation,
    Unauthenticated,
    UnsupportedMediaType,
)
from .events import ChangeEvent, Webhook
from .retrieval.scoring import PROFILES, Weights
from .scope import Query, Scope

__version__ = "0.1.0"

__all__ = [
    "KINDS",
    "PROFILES",
    "AsyncMemory",
    "BackendUnavailable",
    "ChangeEvent",
    "Client",
    "Clock",
    "Config",
    "Conflict",
    "Context",
    "CorruptStore",
    "Embedder",
    "EmbeddingError",
    "Entity",
    "EntityProfile",
    "Explanation",
    "Finding",
    "FixedClock",
    "HistoryEntry",
    "Hit",
    "InvalidFilter",
    "InvalidInput",
    "KeywordOnlyWarning",
    "LLMError",
    "Memory",
    "MemoryChange",
    "MemstreamError",
    "MissingDependency",
    "NotFound",
    "PayloadTooLarge",
    "Query",
    "RateLimited",
    "Record",
    "Scope",
    "ScopeViolation",
    "SimulationClock",
    "Unauthenticated",
    "UnsupportedMediaType",
    "WallClock",
    "Webhook",
    "Weights",
    "__version__",
]
