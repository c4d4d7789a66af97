"""Cross-episode memory for agents in training loops: scores, [WORKS]/[AVOID] rules, mistake
cards, a compact context block for the system prompt, and consolidation."""

from __future__ import annotations

from .context import build_memory_context
from .memory import EpisodeMemory
from .state import memory_summary, new_memory, record_episode

__all__ = ["EpisodeMemory", "build_memory_context", "memory_summary", "new_memory",
           "record_episode"]
