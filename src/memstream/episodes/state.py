"""Cross-episode memory as pure functions on one plain dict (the original JSON layout).

The dict has the keys ``version``, ``total_episodes``, ``last_consolidated_at``,
``global_rules``, ``task_rules``, ``episode_log``, ``score_history``, ``mistakes``,
``mistake_cards`` and ``successes``. Both APIs use these functions: the compatible function
API (``memstream.compat.episodes``) on a dict it loads from JSON, and ``EpisodeMemory``, which
folds its stored episode records through ``record_episode`` in order.

Thresholds and limits (all from the spec, all module constants):

* a score >= 0.85 turns each success into a "[WORKS] ..." task rule; a score < 0.50 turns
  each mistake into an "[AVOID] ..." rule; the newest 10 rules per task are kept;
* the episode log keeps the last 100 episodes (the engine keeps every episode record);
* mistake cards: fields cut to 300 characters; the same card is (type, task, worker, correct
  decision); the 30 cards with the highest (seen count, last seen) are kept;
* consolidation every 20 episodes; the newest 20 global rules are kept.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..errors import InvalidInput

__all__ = [
    "CARD_FIELD_CHARS",
    "CONSOLIDATION_EVERY",
    "HIGH_SCORE",
    "LOW_SCORE",
    "MAX_CARDS",
    "MAX_EPISODES_LOGGED",
    "MAX_GLOBAL_RULES",
    "MAX_RULES_PER_TASK",
    "NEAR_DUPLICATE_JACCARD",
    "add_global_rules",
    "heuristic_rules",
    "memory_summary",
    "new_memory",
    "normalise",
    "record_episode",
]

VERSION = 1
HIGH_SCORE = 0.85
LOW_SCORE = 0.50
MAX_RULES_PER_TASK = 10
MAX_EPISODES_LOGGED = 100
MAX_CARDS = 30
CARD_FIELD_CHARS = 300
CONSOLIDATION_EVERY = 20
MAX_GLOBAL_RULES = 20
HEURISTIC_SUMMARY_CHARS = 120
NEAR_DUPLICATE_JACCARD = 0.8
DEFAULT_LESSON = "Avoid repeating this failure."
CARD_FIELDS = ("mistake_type", "task_id", "worker_id", "bad_decision", "correct_decision",
               "evidence", "lesson")

_WORD = re.compile(r"[a-z0-9]+")


def new_memory() -> dict[str, Any]:
    """An empty episode memory."""
    return {
        "version": VERSION,
        "total_episodes": 0,
        "last_consolidated_at": None,
        "global_rules": [],
        "task_rules": {},
        "episode_log": [],
        "score_history": {},
        "mistakes": [],
        "mistake_cards": [],
        "successes": [],
    }


def normalise(memory: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with every key of the layout present (files written before a key existed load
    fine); unknown keys are kept. Raises InvalidInput when a key has the wrong type."""
    out = new_memory()
    out.update(copy.deepcopy(dict(memory)))
    expected = {"global_rules": list, "task_rules": dict, "episode_log": list,
                "score_history": dict, "mistakes": list, "mistake_cards": list,
                "successes": list}
    for key, kind in expected.items():
        if out[key] is None:
            out[key] = kind()
        if not isinstance(out[key], kind):
            raise InvalidInput(f"episode memory key {key!r} should be a {kind.__name__}, "
                               f"not {type(out[key]).__name__}")
    if not isinstance(out["total_episodes"], int):
        raise InvalidInput("episode memory key 'total_episodes' should be an integer")
    return out


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def is_near_duplicate(a: str, b: str, threshold: float = NEAR_DUPLICATE_JACCARD) -> bool:
    """Same words (case, punctuation and spacing aside), or a word-set Jaccard >= threshold."""
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return a.strip().lower() == b.strip().lower()
    return len(wa & wb) / len(wa | wb) >= threshold


def _add_unique(items: list[str], new: str) -> None:
    if new and not any(is_near_duplicate(new, old) for old in items):
        items.append(new)


def _cut(value: Any) -> str:
    return ("" if value is None else str(value))[:CARD_FIELD_CHARS]


def _merge_card(cards: list[dict[str, Any]], raw: Any, task_id: str, episode: int) -> None:
    if not isinstance(raw, Mapping):
        return  # a card that is not an object is ignored
    card: dict[str, Any] = {
        "mistake_type": _cut(raw.get("mistake_type") or "unknown_mistake"),
        "task_id": _cut(raw.get("task_id") or task_id),
        "worker_id": _cut(raw.get("worker_id")),
        "bad_decision": _cut(raw.get("bad_decision")),
        "correct_decision": _cut(raw.get("correct_decision")),
        "evidence": _cut(raw.get("evidence")),
        "lesson": _cut(raw.get("lesson") or DEFAULT_LESSON),
    }
    key = (card["mistake_type"], card["task_id"], card["worker_id"], card["correct_decision"])
    for old in cards:
        if (old.get("mistake_type"), old.get("task_id"), old.get("worker_id"),
                old.get("correct_decision")) == key:
            old["seen_count"] = int(old.get("seen_count", 1)) + 1
            old["last_seen_episode"] = episode
            for field in ("evidence", "lesson"):
                if raw.get(field):
                    old[field] = card[field]
            return
    card.update(seen_count=1, first_seen_episode=episode, last_seen_episode=episode)
    cards.append(card)


def _card_rank(card: Mapping[str, Any]) -> tuple[int, int]:
    return (int(card.get("seen_count", 1)), int(card.get("last_seen_episode", 0)))


def _score(value: Any) -> float:
    try:
        score = float(value if value is not None else 0.0)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInput("an episode score must be a number in [0, 1], got "
                           f"{str(value)[:40]!r}") from exc
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise InvalidInput("an episode score must be a number in [0, 1], got "
                           f"{str(value)[:40]!r}")
    return score


def _strings(episode: Mapping[str, Any], key: str) -> list[str]:
    value = episode.get(key) or []
    if isinstance(value, str) or not isinstance(value, list):
        raise InvalidInput(f"episode {key!r} must be a list of strings")
    return [str(v) for v in value if v]


def record_episode(memory: dict[str, Any], episode: Mapping[str, Any], *,
                   timestamp: str | None = None) -> dict[str, Any]:
    """Add one episode report to ``memory`` (in place) and return it.

    Report keys: task_id (default "unknown"), score in [0, 1], steps, trajectory_summary,
    mistakes and successes (lists of strings), mistake_cards (list of objects).
    """
    if not isinstance(episode, Mapping):
        raise InvalidInput("an episode report must be a dict")
    task_id = str(episode.get("task_id") or "unknown")
    score = _score(episode.get("score", 0.0))
    mistakes, successes = _strings(episode, "mistakes"), _strings(episode, "successes")
    cards = episode.get("mistake_cards") or []
    if not isinstance(cards, list):
        raise InvalidInput("episode 'mistake_cards' must be a list of objects")
    memory.setdefault("score_history", {}).setdefault(task_id, []).append(score)
    memory.setdefault("episode_log", []).append({
        "timestamp": timestamp or datetime.now(UTC).isoformat(),
        "task_id": task_id,
        "score": score,
        "steps": episode.get("steps", 0),
        "summary": str(episode.get("trajectory_summary") or ""),
    })
    memory["episode_log"] = memory["episode_log"][-MAX_EPISODES_LOGGED:]
    memory["total_episodes"] = int(memory.get("total_episodes", 0)) + 1
    for text in mistakes:
        _add_unique(memory.setdefault("mistakes", []), text)
    for text in successes:
        _add_unique(memory.setdefault("successes", []), text)
    deck = memory.setdefault("mistake_cards", [])
    for raw in cards:
        _merge_card(deck, raw, task_id, memory["total_episodes"])
    deck.sort(key=_card_rank, reverse=True)
    del deck[MAX_CARDS:]
    rules = memory.setdefault("task_rules", {}).setdefault(task_id, [])
    if score >= HIGH_SCORE:
        for text in successes:
            if f"[WORKS] {text}" not in rules:
                rules.append(f"[WORKS] {text}")
    if score < LOW_SCORE:
        for text in mistakes:
            if f"[AVOID] {text}" not in rules:
                rules.append(f"[AVOID] {text}")
    memory["task_rules"][task_id] = rules[-MAX_RULES_PER_TASK:]
    return memory


def add_global_rules(memory: dict[str, Any], rules: list[str], *, at_episode: int) -> None:
    """Append rules (exact duplicates dropped, the newest 20 kept) and mark the consolidation
    point."""
    combined = list(dict.fromkeys([*memory.get("global_rules", []), *rules]))
    memory["global_rules"] = combined[-MAX_GLOBAL_RULES:]
    memory["last_consolidated_at"] = at_episode


def consolidation_due(memory: Mapping[str, Any], every: int = CONSOLIDATION_EVERY) -> bool:
    last = memory.get("last_consolidated_at") or 0
    if not isinstance(last, int):
        last = 0  # some old files stored an ISO time here
    return int(memory.get("total_episodes", 0)) - last >= every


def heuristic_rules(memory: Mapping[str, Any]) -> list[str]:
    """The offline consolidation: each logged episode that scored >= 0.85 becomes
    "[HIGH SCORE 0.90] <summary cut to 120 characters>"."""
    rules: list[str] = []
    for ep in memory.get("episode_log", []):
        if float(ep.get("score", 0.0)) >= HIGH_SCORE and ep.get("summary"):
            summary = str(ep["summary"])[:HEURISTIC_SUMMARY_CHARS]
            rule = f"[HIGH SCORE {float(ep['score']):.2f}] {summary}"
            if rule not in rules:
                rules.append(rule)
    return rules


def memory_summary(memory: Mapping[str, Any]) -> dict[str, Any]:
    """Totals, rules per task, counts of mistakes and cards, the top 5 cards, mean scores."""
    cards = sorted(memory.get("mistake_cards", []), key=_card_rank, reverse=True)
    return {
        "total_episodes": memory.get("total_episodes", 0),
        "global_rules": len(memory.get("global_rules", [])),
        "task_rules": {k: len(v) for k, v in memory.get("task_rules", {}).items()},
        "mistakes_stored": len(memory.get("mistakes", [])),
        "successes_stored": len(memory.get("successes", [])),
        "mistake_cards": len(cards),
        "top_cards": [{"mistake_type": c.get("mistake_type"), "task_id": c.get("task_id"),
                       "seen_count": c.get("seen_count", 1)} for c in cards[:5]],
        "scores_by_task": {k: round(sum(v) / len(v), 3)
                           for k, v in memory.get("score_history", {}).items() if v},
    }
