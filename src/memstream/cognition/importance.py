"""The offline importance heuristic, used when no LLM rates a record and the caller gave none.

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

clipped to [0.05, 1.0] and rounded to two decimals.
"""

from __future__ import annotations

import re

__all__ = ["heuristic_importance"]

_LESSON_KINDS = frozenset({"reflection", "heuristic", "anti_pattern", "outcome", "rule",
                           "mistake", "preference", "fact", "summary"})
_PROBLEM = re.compile(r"\b(error|errors|fail(ed|ure|s)?|bug|crash(ed)?|broke(n)?|wrong|lost|"
                      r"urgent|emergency|critical|danger|died|death|sick|hospital|fired)\b", re.I)
_COMMIT = re.compile(r"\b(decided|decide|must|always|never|prefer(s|red)?|remember|deadline|"
                     r"promise(d)?|important|plan(s|ned)?|goal|allergic|love(s|d)?|hate(s|d)?)\b",
                     re.I)
_NUMBER = re.compile(r"\d")
_NAME = re.compile(r"(?<=[a-z,;] )[A-Z][a-z]+")
_ACK = frozenset({"ok", "okay", "thanks", "thank", "you", "sure", "got", "it", "yes", "no",
                  "fine", "cool", "great", "k", "yep", "nope", "alright", "noted"})


def heuristic_importance(text: str, kind: str = "observation") -> float:
    """A deterministic importance in [0.05, 1.0] from the text and kind (rules above)."""
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
    words = re.findall(r"[A-Za-z']+", text.lower())
    if 0 < len(words) <= 3 and all(w in _ACK for w in words):
        score -= 0.15
    if len(words) > 25:
        score += 0.05
    return round(min(1.0, max(0.05, score)), 2)
