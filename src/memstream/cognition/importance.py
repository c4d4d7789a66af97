"""Importance: a caller's value always wins; with an LLM configured, its 1-10 poignancy rating
divided by 10 (computed in the background: ``add`` stores the heuristic value at once and the
rating replaces it when it arrives); otherwise the offline heuristic below.

The offline importance heuristic, used when no LLM rates a record and the caller gave none.

Deterministic and cheap, on a 0-1 scale that mirrors the LLM's 1-10 poignancy rating:

* start from 0.3 (a routine observation);
* +0.2 for a kind that carries a lesson or decision (reflection, heuristic, anti_pattern,
  outcome, rule, mistake, preference, fact, summary);
* +0.15 when the text names a problem (error, failed, bug, crash, broke, wrong, lost, urgent...);
* +0.1 when it states a commitment or a preference (decided, must, always, never, prefer,
  remember, deadline, promised, important...);
* +0.05 when it holds a number or a date, +0.05 for a proper name inside the sentence;
* -0.15 for a bare acknowledgement (ok, thanks, sure, got it...) of at most three words;
* +0.05 for a longer statement (over 25 words);

clipped to [0.05, 1.0] and rounded to two decimals. Only the first ``READ`` characters are read:
a record longer than that is judged by its beginning (a 990,000-character record took 0.36 s
to read whole).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..llm import ChatClient

__all__ = ["check_rating", "heuristic_importance", "llm_importance"]

_LESSON_KINDS = frozenset({"reflection", "heuristic", "anti_pattern", "outcome", "rule",
                           "mistake", "preference", "fact", "summary"})
_PROBLEM = re.compile(r"\b(error|errors|fail(ed|ure|s)?|bug|crash(ed)?|broke(n)?|wrong|lost|"
                      r"urgent|emergency|critical|danger|died|death|sick|hospital|fired)\b", re.I)
_COMMIT = re.compile(r"\b(decided|decide|must|always|never|prefer(s|red)?|remember|deadline|"
                     r"promise(d)?|important|plan(s|ned)?|goal|allergic|love(s|d)?|hate(s|d)?)\b",
                     re.I)
_NUMBER = re.compile(r"\d")
_NAME = re.compile(r"(?<=[a-z,;] )[A-Z][a-z]+")
#: the characters of a record the heuristic reads
READ = 20_000
_WORDS = re.compile(r"[A-Za-z']+")
_ACK = frozenset({"ok", "okay", "thanks", "thank", "you", "sure", "got", "it", "yes", "no",
                  "fine", "cool", "great", "k", "yep", "nope", "alright", "noted"})


def heuristic_importance(text: str, kind: str = "observation") -> float:
    """A deterministic importance in [0.05, 1.0] from the text and kind (rules above)."""
    text = text[:READ]
    score = 0.3
    if kind in _LESSON_KINDS:
        score += 0.2
    if _PROBLEM.search(text):
        score += 0.15
    if _COMMIT.search(text):
        score += 0.1
    if _NUMBER.search(text):
        score += 0.05
    if _NAME.search(text):
        score += 0.05
    words = _WORDS.findall(text.lower())
    if 0 < len(words) <= 3 and all(w in _ACK for w in words):
        score -= 0.15
    if len(words) > 25:
        score += 0.05
    return round(min(1.0, max(0.05, score)), 2)


RATING_PROMPT = """On a scale of 1 to 10, where 1 is purely mundane (a routine "OK" message,
brushing teeth, making the bed) and 10 is extremely poignant (a core fact about someone, a
breakup, finding the catastrophic bug the agent was asked to fix), rate the likely poignancy
of this memory.

Memory ({kind}): {text}

Answer with JSON only: {{"rating": <integer 1-10>}}"""


def check_rating(answer: object) -> float:
    """The rating of an answer {"rating": n} as n / 10; ValueError for anything else."""
    if not isinstance(answer, dict) or "rating" not in answer:
        raise ValueError('expected {"rating": <integer 1-10>}')
    value = answer["rating"]
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) \
            or not 1 <= value <= 10:
        raise ValueError(f"rating must be an integer from 1 to 10, got {value!r}")
    return int(value) / 10


def llm_importance(client: ChatClient, text: str, kind: str = "observation") -> float:
    """The LLM's 1-10 poignancy rating / 10 (raises LLMError or BackendUnavailable)."""
    prompt = RATING_PROMPT.format(kind=kind, text=text[:4000])
    return float(client.complete_json([{"role": "user", "content": prompt}], check_rating,
                                      max_tokens=20))
