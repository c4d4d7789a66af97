"""Consolidation: distil recent episodes into global rules, with an LLM or offline.

With a chat client, the last 30 logged episodes go to the model, which is asked for 5 concise,
actionable one-sentence rules as a JSON array of strings; they become "[CONSOLIDATED] ..."
global rules. Without one, or when the call fails in any way (network error, refusal, bad JSON,
a timeout), the heuristic of ``state.heuristic_rules`` runs instead.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..errors import BackendUnavailable, LLMError
from ..llm import ChatClient, parse_json_answer
from .state import heuristic_rules

log = logging.getLogger("memstream.episodes")

EPISODES_SENT = 30
RULES_ASKED = 5

_PROMPT = """You review how an AI agent did across its recent training episodes.

Episodes (task, score from 0 to 1, what happened):
{episodes}

Write {n} rules the agent should follow from now on. Each rule is one short, actionable
sentence about what works or what to avoid. Answer with a JSON array of strings and nothing
else, for example ["Check the logs before restarting a service."]."""


def llm_rules(memory: Mapping[str, Any], client: ChatClient) -> list[str]:
    """Ask the model for rules; raises LLMError or BackendUnavailable when that fails."""
    lines = "\n".join(
        f"- task={ep.get('task_id')} score={float(ep.get('score', 0)):.2f}: {ep.get('summary')}"
        for ep in memory.get("episode_log", [])[-EPISODES_SENT:])
    answer = client.complete([{"role": "user",
                               "content": _PROMPT.format(episodes=lines, n=RULES_ASKED)}],
                             temperature=0.0, max_tokens=400)
    rules = parse_json_answer(answer, opening="[")
    if not isinstance(rules, list) or not rules or \
            not all(isinstance(r, str) and r.strip() for r in rules):
        raise LLMError("the LLM's rules are not a non-empty JSON array of strings")
    return [f"[CONSOLIDATED] {' '.join(r.split())}" for r in rules]


def consolidated_rules(memory: Mapping[str, Any], client: ChatClient | None
                       ) -> tuple[list[str], str]:
    """(new global rules, "llm" or "heuristic")."""
    if client is not None:
        try:
            return llm_rules(memory, client), "llm"
        except (LLMError, BackendUnavailable) as exc:
            log.warning("LLM consolidation failed (%s); using the heuristic", exc)
    return heuristic_rules(memory), "heuristic"
