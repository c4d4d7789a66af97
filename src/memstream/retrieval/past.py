"""Whether a query asks about the past: what was so before, what was tried and dropped, what
was replaced, rather than what holds now.

A question about what holds now ("Where does my sister live now?", "Which ORM do we use?")
wants the newest version of a fact first. A question about what was ("Which ORM did we try and
then abandon?", "Where did we live before the move?") wants the version that something newer
replaced, and placing the newer one first answers the wrong question. Which one a query asks
is read from its vector, in any language the embedder reads, and not from its words: the
direction from the mean of ``NOW`` and ``EVENTS`` (questions about what holds now, and about
one event: "What did the doctor say?" asks about no earlier version) to the mean of ``PAST``
(questions about what was), all written for this in English on no evaluation set, and the
midpoint of the two means along it. A query whose vector stands beyond the midpoint asks
about the past (``Past.asks``).

What a search does with it (``engine.stages``): nothing is lifted for following up the best
match (``retrieval.notes``), and the versions a matching record replaced are read as if the
past were asked for (``Query(include_invalid=True)``), each after its current version.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

__all__ = ["EVENTS", "NOW", "PAST", "Past", "questions_key"]

#: the direction read with the default embedder, written by tools/past_direction.py (other
#: embedders embed the questions at their first search, once per store: about half a second)
SHIPPED = "past_direction.json"

#: questions about what was: an earlier value, a plan dropped, an option turned down
PAST: tuple[str, ...] = (
    "What did I use before?", "Which option did we reject?", "What was the old address?",
    "Which plan did we drop?", "What did she stop doing?",
    "Where did they live before moving?", "What was the original date?",
    "Which supplier did we stop using?", "What did he use to drink?",
    "Which idea was abandoned?", "What was the previous price?", "What didn't work out?",
    "Which one did we decide against?", "What was the first version?",
    "What did we try that failed?")
#: questions about what holds now
NOW: tuple[str, ...] = (
    "What is the address now?", "Which option did we choose?", "What is the current price?",
    "Where do they live these days?", "When is the meeting?",
    "What does she drink in the morning?", "Which supplier do we use?", "What is the plan?",
    "Who is the contact?", "What's the new date?", "Which tool do we use for deployments?",
    "What is his job title?", "What do we go with?", "What is the latest version?",
    "Which one did we pick in the end?")
#: questions about one event, in the past tense but about no earlier version: read on the
#: side of ``NOW``, so that the past tense alone does not make a question about the past
EVENTS: tuple[str, ...] = (
    "What did the doctor say about my knee?", "When did we fly to Rome?",
    "Who called yesterday?", "What did Sam recommend?", "Where did we have dinner on Friday?",
    "How did the interview go?", "What did I buy for Mia's birthday?",
    "Which book did Tom lend me?", "What happened at the meeting?",
    "Why was the delivery late?", "What did the landlord reply?", "Who fixed the bike?",
    "What did we decide about the budget?", "Which hotel did we book?",
    "What did she order?")


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    out: np.ndarray = rows / np.where(norms == 0, 1.0, norms)
    return out


@dataclass(frozen=True, slots=True)
class Past:
    """The direction from questions about now to questions about the past in one embedder's
    space (a unit vector) and the midpoint of the two sets' means along it."""

    direction: np.ndarray
    midpoint: float

    @classmethod
    def between(cls, now: np.ndarray, past: np.ndarray) -> Past:
        """From the query vectors of ``NOW`` and ``EVENTS`` (``now``) and of ``PAST`` (one row
        each)."""
        a, b = _unit(now), _unit(past)
        vec = b.mean(axis=0) - a.mean(axis=0)
        vec /= float(np.linalg.norm(vec)) or 1.0
        return cls(vec, float(((a @ vec).mean() + (b @ vec).mean()) / 2.0))

    def reading(self, vector: np.ndarray) -> float:
        """How far ``vector`` (a query's) stands beyond the midpoint, towards the past."""
        if vector.shape != self.direction.shape:
            return -1.0  # another embedder's vector: read as about now
        return float(_unit(vector) @ self.direction) - self.midpoint

    def asks(self, vector: np.ndarray) -> bool:
        """Whether the query of ``vector`` asks about the past."""
        return self.reading(vector) > 0.0

    @classmethod
    def shipped(cls, embedder: str) -> Past | None:
        """The direction shipped for ``embedder`` (``Embedder.name``), if it was drawn for
        these very questions; else None."""
        return _shipped().get((embedder, questions_key()))


def questions_key() -> str:
    """What the shipped direction was drawn from: a digest of the three sets of questions."""
    text = "\n".join(["past", *PAST, "now", *NOW, "events", *EVENTS])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@lru_cache(maxsize=1)
def _shipped() -> dict[tuple[str, str], Past]:
    try:
        raw = json.loads(resources.files("memstream.retrieval").joinpath(SHIPPED)
                         .read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {(str(raw["embedder"]), str(raw["questions"])): Past(
        np.array(raw["direction"], dtype=np.float64), float(raw["midpoint"]))}
