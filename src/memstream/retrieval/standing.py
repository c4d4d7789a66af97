"""Standing instructions and stated preferences: memories that say how to act from then on.

"Always include exact version numbers when I ask about integrations", "Never suggest
supplements", "I prefer OAuth 2.0 PKCE for public clients": such a memory matters every time its
subject comes up, but a question on that subject is worded like the many conversations about
the subject, not like the instruction, so by relevance alone the instruction ranks below them
(on BEAM's instruction-following questions the default found the instruction in the first five
for about a third of them).

So a search keeps one place for the most relevant standing memory: when none is among the first
``SLOT`` hits and the best one among the candidates is at least plausibly relevant (its
calibrated relevance logit at or above ``PLAUSIBLE``), it takes place ``SLOT``
(or the last place of a shorter list, never the first) and the hits below move down one. Its
explanation says so (``Explanation.lifted``). An unrelated instruction is never lifted.

Nor is one lifted for a question about what the user said or did before ("When did I book
the dentist?", "How many problems have I completed?", "Summarize our conversations about
the move": ``recalls_the_past``). Such a question asks for the memory of that event, and an
instruction on how to answer is not it; there the place goes to the next most relevant
memory (on BEAM's development split this gives 0.7211 recall_any@5 instead of 0.7174 and
changes no answer to a request, docs/benchmarks.md). A standing memory that is itself among
the most relevant keeps its place by relevance, as any memory does.

A memory is standing when its text, after an optional label of the user's turn ("user: ",
"human: "), opens with an instruction (always, never, don't ever, please always, remember
to, make sure to always) or a first-person preference (I prefer, I'd prefer, I'd rather, I
would rather). Another speaker's label ("Ana: Always...") is a remark in a conversation
between people, not an instruction to the assistant.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["PLAUSIBLE", "SLOT", "STANDING_KINDS", "is_standing", "lift", "recalls_the_past"]

#: the place (1-based) kept for the most relevant standing memory
SLOT = 5
#: a standing memory at or above this relevance logit (relevance 0.01) is plausibly relevant:
#: on the calibrated scale an instruction that governs a question is worded unlike it, so it
#: stands low (BEAM dev instruction following: 0.36 of the questions find it in the first
#: five with the bar at relevance 0.076, 0.61 at 0.01)
PLAUSIBLE = -4.6

_SPEAKER = r"(?:(?:user|human|me)\s*:\s*)?"
_STANDING = re.compile(
    rf"^\s*{_SPEAKER}(?:"
    r"(?:please\s+)?(?:always|never)\b|don'?t ever\b|do not ever\b|remember to\b|"
    r"make sure (?:to|you) always\b|"
    r"i(?: really| generally| usually| always)?(?: prefer|'d prefer| would prefer|'d rather|"
    r" would rather)\b)", re.IGNORECASE)


#: a question about what the user (alone or with the assistant) said or did before
_RECALL = re.compile(
    r"\b(?:did|have|had)\s+(?:i|we)\b"
    r"|\b(?:i|we)(?:'ve|\s+have|'d|\s+had)?\s+(?:said|mentioned|told|brought\s+up|discussed|"
    r"talked|asked|shared|decided|completed|done|went|made|spent|attended)\b"
    r"|\bour\s+(?:earlier\s+|previous\s+|past\s+)?(?:conversations?|chats?|discussions?|"
    r"sessions?)\b", re.IGNORECASE)


def recalls_the_past(query: str) -> bool:
    """Whether ``query`` asks what the user said or did before: "did I", "have we", "I
    mentioned", "we've discussed", "our conversations" (module docstring)."""
    return _RECALL.search(query) is not None


#: record kinds that say how to act from then on, whatever their wording or language
STANDING_KINDS = frozenset({"preference", "instruction"})


def is_standing(text: str, kind: str | None = None) -> bool:
    """Whether a memory states a standing instruction or preference: its ``kind`` says so
    (``STANDING_KINDS``), or its text opens like one (module docstring)."""
    return kind in STANDING_KINDS or _STANDING.match(text) is not None


T = TypeVar("T")


def lift(top: Sequence[T], best: T, *, query: str, key: Callable[[T], object],
         standing: Callable[[T], bool], logit: Callable[[T], float], mark: Callable[[T], T]
         ) -> list[T]:
    """``top`` (the first hits, best first) with ``best``, the best-ranked standing memory of
    the candidates, in place ``SLOT`` when no standing memory is above it, ``best`` is
    plausibly relevant and ``query`` does not ask about the past (module docstring). ``mark``
    returns a hit's copy that says it was lifted."""
    k = len(top)
    if k < 2 or recalls_the_past(query):
        return list(top)
    at = min(SLOT, k) - 1
    if any(standing(h) for h in top[: at + 1]) or logit(best) < PLAUSIBLE:
        return list(top)
    rest = [h for h in top[at:] if key(h) != key(best)]
    return [*top[:at], mark(best), *rest][:k]
