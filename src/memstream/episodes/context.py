"""The context block injected at the top of an agent's system prompt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.tokens import Tokenizer, cl100k
from ..errors import InvalidInput

__all__ = ["HEADER", "build_memory_context"]

HEADER = "## MEMORY FROM PAST EPISODES"
RECENT_SUMMARY_CHARS = 100
SHOWN_MISTAKES = 3
SHOWN_CARDS = 3


def _sections(memory: Mapping[str, Any], task_id: str | None, max_rules: int,
              max_recent: int) -> list[tuple[str, list[str]]]:
    """(heading, lines) in the order of the block; empty sections are left out."""
    out: list[tuple[str, list[str]]] = []
    if task_id:
        rules = memory.get("task_rules", {}).get(task_id, [])[-max_rules:] if max_rules else []
        out.append((f"\nRules for {task_id}:", [f"  - {r}" for r in rules]))
    general = memory.get("global_rules", [])[-max_rules:] if max_rules else []
    out.append(("\nGeneral rules (all tasks):", [f"  - {r}" for r in general]))
    mistakes = memory.get("mistakes", [])[-SHOWN_MISTAKES:]
    out.append(("\nMistakes to avoid:", [f"  - AVOID: {m}" for m in mistakes]))
    cards = memory.get("mistake_cards", [])[:SHOWN_CARDS]
    card_lines = []
    for c in cards:
        line = f"  - [{c.get('mistake_type')}, seen {c.get('seen_count', 1)}x] {c.get('lesson')}"
        if c.get("evidence"):
            line += f" Evidence: {c['evidence']}"
        card_lines.append(line)
    out.append(("\nMistake cards:", card_lines))
    if task_id:
        recent = [ep for ep in memory.get("episode_log", [])
                  if ep.get("task_id") == task_id][-max_recent:] if max_recent else []
        out.append((f"\nRecent {task_id} episodes:", [
            f"  - Score {float(ep.get('score', 0)):.2f} in {ep.get('steps', 0)} steps: "
            f"{str(ep.get('summary', ''))[:RECENT_SUMMARY_CHARS]}" for ep in recent]))
        scores = memory.get("score_history", {}).get(task_id, [])
        if scores:
            mean = sum(scores) / len(scores)
            out.append((f"\nYour mean score on {task_id}: {mean:.2f} (over {len(scores)} "
                        "episodes)", []))
    return [(h, lines) for h, lines in out if lines or h.startswith("\nYour mean")]


def build_memory_context(memory: Mapping[str, Any], task_id: str | None = None,
                         max_rules: int = 5, max_recent: int = 3, *,
                         max_tokens: int | None = None,
                         tokenizer: Tokenizer | None = None) -> str:
    """The block: the task's newest rules, the newest global rules, the newest 3 mistakes, the
    3 top mistake cards, the task's most recent episodes and its mean score. "" when there is
    nothing to say.

    ``max_tokens`` makes the length limit exact (cl100k_base tokens of the returned text):
    lines are added section by section in that order while they fit; a section whose heading
    does not fit with at least one of its lines is left out.
    """
    if max_tokens is not None and max_tokens < 0:
        raise InvalidInput("max_tokens must be >= 0")
    sections = _sections(memory, task_id, max_rules, max_recent)
    if not sections:
        return ""
    if max_tokens is None:
        lines = [HEADER]
        for heading, body in sections:
            lines.append(heading)
            lines.extend(body)
        return "\n".join(lines)
    tok = tokenizer or cl100k()
    kept = [HEADER]
    for heading, body in sections:
        if not body:  # a one-line section (the mean score)
            if tok.count("\n".join([*kept, heading])) <= max_tokens:
                kept.append(heading)
            continue
        trial = [*kept, heading]
        added = False
        for line in body:
            if tok.count("\n".join([*trial, line])) <= max_tokens:
                trial.append(line)
                added = True
        if added:
            kept = trial
    return "\n".join(kept) if len(kept) > 1 and tok.count("\n".join(kept)) <= max_tokens else ""
