"""The cross-episode memory function API on the plain dict layout, as a drop-in module.

Replace ``from training.memory import ...`` with ``from memstream.compat.episodes import ...``:
the same functions, dict layout, file format and thresholds, plus what the original lacked:
mistake cards, near-duplicate merging, an exact token budget (``max_tokens``), atomic saves,
and corrupt files moved aside and reported instead of silently replaced.

For compatibility, ``maybe_consolidate_memory`` also reads the original's variables:
``GROQ_API_KEY`` for the key and ``API_BASE_URL`` for the endpoint (``MEMSTREAM_LLM_*`` win).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import warnings
from datetime import UTC, datetime
from typing import Any

from ..config import Config
from ..episodes.consolidate import consolidated_rules
from ..episodes.context import build_memory_context
from ..episodes.state import (
    CONSOLIDATION_EVERY,
    MAX_EPISODES_LOGGED,
    MAX_RULES_PER_TASK,
    add_global_rules,
    consolidation_due,
    memory_summary,
    new_memory,
    normalise,
)
from ..episodes.state import record_episode as _record
from ..errors import InvalidInput, MemstreamError
from ..llm import ChatClient

__all__ = [
    "CONSOLIDATION_EVERY",
    "DEFAULT_PATH",
    "MAX_EPISODES_STORED",
    "MAX_RULES_PER_TASK",
    "CorruptMemoryFileWarning",
    "build_memory_context",
    "load_agent_memory",
    "maybe_consolidate_memory",
    "memory_summary",
    "new_agent_memory",
    "record_episode",
    "save_agent_memory",
]

log = logging.getLogger("memstream.compat.episodes")

DEFAULT_PATH = os.path.join("outputs", "agent_memory.json")
MAX_EPISODES_STORED = MAX_EPISODES_LOGGED
_LEGACY_BASE_URL = "https://api.groq.com/openai/v1"
_LEGACY_MODEL = "llama-3.3-70b-versatile"


class CorruptMemoryFileWarning(UserWarning):
    """A memory file could not be read; it was moved aside and a fresh memory returned."""


def new_agent_memory() -> dict[str, Any]:
    """An empty memory in the JSON layout."""
    return new_memory()


def load_agent_memory(path: str = DEFAULT_PATH) -> dict[str, Any]:
    """The memory saved at ``path``, or a fresh one when there is no file.

    A file that is not valid JSON or not in the layout is renamed to
    ``<path>.corrupt-<UTC time>`` (never deleted or overwritten), a CorruptMemoryFileWarning
    names both paths, and a fresh memory is returned.
    """
    if not os.path.exists(path):
        log.info("no memory file at %s; starting fresh", path)
        return new_memory()
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
        if not isinstance(raw, dict):
            raise InvalidInput("the file does not hold a JSON object")
        return normalise(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, InvalidInput) as exc:
        aside = f"{path}.corrupt-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}"
        os.replace(path, aside)
        warnings.warn(f"episode memory {path} is unreadable ({exc}); moved it to {aside} and "
                      "started a fresh memory", CorruptMemoryFileWarning, stacklevel=2)
        return new_memory()


def save_agent_memory(memory: dict[str, Any], path: str = DEFAULT_PATH) -> None:
    """Write the memory atomically: a temporary file in the same folder, flushed to disk, then
    renamed over ``path``. A crash at any point leaves the previous file whole."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    memory["episode_log"] = memory.get("episode_log", [])[-MAX_EPISODES_STORED:]
    fd, tmp = tempfile.mkstemp(prefix=".agent_memory.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(memory, fh, indent=2)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def record_episode(memory: dict[str, Any], episode_data: dict[str, Any]) -> dict[str, Any]:
    """Record a finished episode (task_id, score, steps, trajectory_summary, mistakes,
    successes, mistake_cards) into the dict and return it."""
    return _record(memory, episode_data)


def _client(api_key: str | None) -> ChatClient | None:
    cfg = Config().resolve()
    key = api_key or cfg.llm_api_key or os.environ.get("GROQ_API_KEY")
    if not key and not cfg.llm_base_url:
        return None
    base = cfg.llm_base_url or os.environ.get("API_BASE_URL") or _LEGACY_BASE_URL
    return ChatClient(base_url=base, model=cfg.llm_model or _LEGACY_MODEL, api_key=key,
                      timeout=cfg.llm_timeout)


def maybe_consolidate_memory(memory: dict[str, Any], api_key: str | None = None,
                             path: str = DEFAULT_PATH) -> dict[str, Any]:
    """Every 20 episodes since the last consolidation, add global rules (from the LLM when a
    key or endpoint is configured, else, or on any failure, from high-scoring episodes) and
    save the memory to ``path``."""
    if not consolidation_due(memory, CONSOLIDATION_EVERY):
        return memory
    try:
        client = _client(api_key)
    except MemstreamError as exc:
        log.warning("LLM configuration unusable (%s); using the heuristic", exc)
        client = None
    rules, method = consolidated_rules(memory, client)
    add_global_rules(memory, rules, at_episode=int(memory.get("total_episodes", 0)))
    log.info("%s consolidation: %d global rules", method, len(memory["global_rules"]))
    save_agent_memory(memory, path)
    return memory
