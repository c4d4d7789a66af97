"""Extraction: turn chat messages into atomic facts and reconcile them with what is stored.

With an LLM:
1. the conversation goes to the model, which lists the atomic facts worth remembering about
   the user and the world (one short sentence each, in the third person);
2. for each fact, the most similar stored memories of the same scope are found. An exact or
   near duplicate (same words, or calibrated similarity >= 0.95) is a no-op without asking.
   Otherwise the model sees the fact and the numbered memories and decides:
   ``add`` (new information), ``update`` (the same subject with more detail: the memory's text
   becomes the given merged text), ``supersede`` (the fact contradicts a memory: the fact is
   stored and the old memory's validity closes, pointing at it) or ``noop`` (already known).
   A contradicted memory is never deleted: it stays in history and in ``as_of`` reads.

Without an LLM, ``add(messages, infer=True)`` stores each message as a ``message`` record
and warns once that no facts were inferred.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._types import Record
from ..errors import InvalidInput
from ..llm import ChatClient

__all__ = ["Decision", "check_messages", "decide", "extract_facts", "is_duplicate"]

FACTS_PROMPT = """Extract the facts worth remembering from this conversation: stable facts
about the user (preferences, plans, relationships, circumstances) and about the world that the
user stated. One short sentence per fact, in the third person, naming the user as "The user".
Skip greetings, questions and small talk. Answer with JSON only: {{"facts": ["...", "..."]}}

Conversation:
{conversation}"""

DECIDE_PROMPT = """A new fact was learned. Compare it with the stored memories below and decide
what to do:
- "add": the fact is new information;
- "update": the fact adds detail to memory number N about the same thing, without
  contradicting it; give the merged sentence as "text";
- "supersede": the fact contradicts memory number N (for example a changed preference); the
  new fact replaces it;
- "noop": the fact is already known.

New fact: {fact}

Stored memories:
{memories}

Answer with JSON only: {{"action": "add" | "update" | "supersede" | "noop", "target": N or
null, "text": "merged sentence or null"}}"""

_WORDS = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Decision:
    action: Literal["add", "update", "supersede", "noop"]
    target: int | None
    text: str | None


def check_messages(messages: Any) -> list[dict[str, str]]:
    """Messages as [{"role": ..., "content": ...}] (a plain string is one user message)."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if not isinstance(messages, Sequence) or not messages:
        raise InvalidInput("messages must be a non-empty list of {'role', 'content'} dicts")
    out = []
    for n, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str):
            raise InvalidInput(f"message {n} needs a 'content' string (and a 'role')")
        out.append({"role": str(m.get("role") or "user"), "content": m["content"]})
    return out


def _check_facts(answer: Any) -> list[str]:
    facts = answer.get("facts") if isinstance(answer, dict) else None
    if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
        raise ValueError('expected {"facts": [strings]}')
    return [" ".join(f.split()) for f in facts if f.strip()]


def extract_facts(client: ChatClient, messages: Sequence[Mapping[str, str]]) -> list[str]:
    conversation = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
    return list(client.complete_json(
        [{"role": "user", "content": FACTS_PROMPT.format(conversation=conversation[:12000])}],
        _check_facts))


def _check_decision(count: int) -> Any:
    def check(answer: Any) -> Decision:
        if not isinstance(answer, dict) or answer.get("action") not in (
                "add", "update", "supersede", "noop"):
            raise ValueError('expected "action" to be add, update, supersede or noop')
        action = answer["action"]
        target = answer.get("target")
        if action != "add":
            if isinstance(target, str) and target.strip().isdigit():
                target = int(target)
            if not isinstance(target, int) or not 1 <= target <= count:
                raise ValueError(f'"target" must be a memory number from 1 to {count}')
        text = answer.get("text")
        if action == "update" and not (isinstance(text, str) and text.strip()):
            raise ValueError('"update" needs the merged sentence in "text"')
        return Decision(action, target if action != "add" else None,
                        text.strip() if isinstance(text, str) else None)
    return check


def decide(client: ChatClient, fact: str, similar: Sequence[Record]) -> Decision:
    if not similar:
        return Decision("add", None, None)
    memories = "\n".join(f"{i}. {r.text[:500]}" for i, r in enumerate(similar, start=1))
    return client.complete_json(  # type: ignore[no-any-return]
        [{"role": "user", "content": DECIDE_PROMPT.format(fact=fact, memories=memories)}],
        _check_decision(len(similar)), max_tokens=200)


def is_duplicate(a: str, b: str, similarity: float | None) -> bool:
    """Same words (case and punctuation aside), or calibrated similarity >= 0.95."""
    if _WORDS.findall(a.lower()) == _WORDS.findall(b.lower()):
        return True
    return similarity is not None and similarity >= 0.95
