"""``EpisodeMemory``: cross-episode memory kept in the engine.

Every episode report is stored as one record (kind "episode") in the memory stream, durable when
``record`` returns. Rules, mistakes, mistake cards, the log and the score history are not
separate mutable rows: they are derived by folding the agent's episode records, oldest first,
through the same functions the JSON API uses (``episodes.state``). Appending is therefore safe
with any number of processes (parallel rollout workers lose nothing, no read-modify-write
race), and the state is the same whoever computes it. Two more record kinds join the fold: a
consolidation (kind "rule": the global rules it produced and the episode count it ran at) and
an imported JSON memory (kind "summary": a snapshot that replaces everything before it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .._types import Hit, Record
from ..core.aliases import renamed
from ..errors import InvalidInput
from ..events import caused
from ..llm import ChatClient, chat_client_from_config
from .consolidate import consolidated_rules
from .context import build_memory_context
from .state import (
    CONSOLIDATION_EVERY,
    add_global_rules,
    consolidation_due,
    memory_summary,
    new_memory,
    normalise,
    record_episode,
)

if TYPE_CHECKING:  # the facade sits above this layer: used, never imported at run time
    from ..engine.memory import Memory

__all__ = ["EpisodeMemory"]

_SOURCE = {"metadata.source": "episodes"}
_KINDS = ("episode", "rule", "summary")
_AUTO = object()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


class EpisodeMemory:
    """Cross-episode memory of one agent, stored in a ``Memory``.

    >>> from memstream import Memory
    >>> em = EpisodeMemory(Memory(":memory:", embedder="none"), agent_id="solver")
    >>> _ = em.record({"task_id": "t1", "score": 0.9, "steps": 4,
    ...                "trajectory_summary": "Read the logs first, found the bug.",
    ...                "successes": ["Read the logs first"]})
    >>> print(em.context("t1").splitlines()[3])
      - [WORKS] Read the logs first
    """

    def __init__(self, memory: Memory, *, agent_id: str = "default",
                 namespace: str | None = None, llm: ChatClient | object | None = _AUTO,
                 consolidate_every: int = CONSOLIDATION_EVERY) -> None:
        if consolidate_every < 1:
            raise InvalidInput("consolidate_every must be at least 1")
        self.memory = memory
        self.agent_id = agent_id
        self.namespace = namespace
        self.consolidate_every = consolidate_every
        self._llm: ChatClient | None = (
            chat_client_from_config(memory.config) if llm is _AUTO else llm  # type: ignore[assignment]
        )
        self._cache: tuple[tuple[int, str | None], dict[str, Any]] | None = None

    @classmethod
    def of(cls, memory: Memory, agent_id: str = "default",
           namespace: str | None = None) -> EpisodeMemory:
        """The agent's episode memory in this process, shared by every caller: one LLM client
        and one folded summary, not one per request."""
        return memory.capabilities.get(
            ("episodes", agent_id, namespace),
            lambda: cls(memory, agent_id=agent_id, namespace=namespace), cls)

    # --- writes ------------------------------------------------------------------------------

    def _add(self, text: str, kind: str, data: dict[str, Any], **extra: Any) -> Record:
        return self.memory.add(text, kind=kind, data=data, agent_id=self.agent_id,
                               namespace=self.namespace, metadata={"source": "episodes"},
                               duplicates="keep", **extra)

    def record(self, episode: Mapping[str, Any]) -> Record:
        """Store one episode report (see ``state.record_episode`` for its keys); durable when
        this returns. A report that would not fold cleanly is refused before anything is
        stored."""
        record_episode(new_memory(), episode)  # validates with the exact rules of the fold
        report = dict(copy.deepcopy(dict(episode)))
        task = str(report.get("task_id") or "unknown")
        score = float(report.get("score", 0.0) or 0.0)
        summary = str(report.get("trajectory_summary") or "").strip()
        text = f"Episode of {task} scored {score:.2f}" + (f": {summary}" if summary else "")
        return self._add(text, "episode", {"episode": report, "task_id": task, "score": score},
                         importance=round(0.3 + 0.6 * abs(score - 0.5), 2))

    def import_dict(self, data: Mapping[str, Any]) -> Record:
        """Take a memory in the JSON layout as the new base: the state becomes exactly that,
        and episodes recorded later fold on top of it."""
        snapshot = normalise(data)
        return self._add(f"Imported episode memory with {snapshot['total_episodes']} episodes",
                         "summary", {"episode_snapshot": snapshot})

    def consolidate(self, *, force: bool = False) -> str | None:
        """Distil recent episodes into global rules when due (every ``consolidate_every``
        episodes) or when forced. Returns "llm" or "heuristic", or None when not due."""
        state = self.state()
        if not force and not consolidation_due(state, self.consolidate_every):
            return None
        rules, method = consolidated_rules(state, self._llm)
        with caused("consolidated"):
            self._add(f"Consolidated {len(rules)} rules after {state['total_episodes']} "
                      "episodes", "rule", {"consolidation": {
                          "rules": rules, "method": method,
                          "at_episode": state["total_episodes"]}})
        return method

    maybe_consolidate = consolidate

    # --- reads -------------------------------------------------------------------------------

    def _records(self) -> list[Record]:
        return self.memory.get_all(namespace=self.namespace, agent_id=self.agent_id,
                                   kinds=_KINDS, filters=_SOURCE, limit=None, order="created")

    def state(self) -> dict[str, Any]:
        """The memory in the JSON layout, folded from the stored records."""
        newest = self.memory.get_all(namespace=self.namespace, agent_id=self.agent_id,
                                     kinds=_KINDS, filters=_SOURCE, limit=1, order="-created")
        key = (self.memory.count(namespace=self.namespace, agent_id=self.agent_id, kinds=_KINDS,
                                 filters=_SOURCE), newest[0].id if newest else None)
        if self._cache is not None and self._cache[0] == key:
            return copy.deepcopy(self._cache[1])
        state = new_memory()
        for rec in self._records():
            data = rec.data or {}
            if "episode_snapshot" in data:
                state = normalise(data["episode_snapshot"])
            elif "episode" in data:
                record_episode(state, data["episode"], timestamp=_iso(rec.created_at))
            elif "consolidation" in data:
                c = data["consolidation"]
                add_global_rules(state, list(c["rules"]), at_episode=int(c["at_episode"]))
        self._cache = (key, state)
        return copy.deepcopy(state)

    export_dict = state

    @renamed(max_tokens="budget")
    def context(self, task_id: str | None = None, max_rules: int = 5, max_recent: int = 3, *,
                budget: int | None = None) -> str:
        """The block for the top of the system prompt ("" when there is nothing to say);
        ``budget``: an exact limit in tokens."""
        return build_memory_context(self.state(), task_id, max_rules, max_recent,
                                    max_tokens=budget)

    def summary(self) -> dict[str, Any]:
        return memory_summary(self.state())

    def search(self, query: str, *, k: int = 5, task_id: str | None = None) -> list[Hit]:
        """Past episodes whose summary fits a query (by meaning and keywords)."""
        filters: dict[str, Any] = dict(_SOURCE)
        if task_id is not None:
            filters["task_id"] = task_id
        return self.memory.search(query, k=k, namespace=self.namespace, agent_id=self.agent_id,
                                  kinds="episode", filters=filters, weights="recall",
                                  touch=False)
