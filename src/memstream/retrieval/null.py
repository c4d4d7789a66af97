"""What unrelated text looks like in one namespace: the null against which relevance and the
likeness of two records are measured (see ``relevance`` and ``Null``). The engine samples the
namespace's vectors (``engine.nulls``); ``measure`` makes the null of them."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["CONVERSATION", "NULL_SAMPLE", "NULL_TTL", "TURNS", "Null", "is_turn", "measure"]

#: the query's null distribution is read from up to this many of the namespace's own records
NULL_SAMPLE = 256
#: a namespace with fewer vectors than this adds the background sentences to its own
NULL_OWN_MIN = 32
#: with at least this many vectors of its own, a namespace's pairs alone set how alike two of
#: its records are by chance
PAIRS_OWN_MIN = 8
#: ... and with fewer, its own pairs count as much against the background's as this many
PRIOR_PAIRS = 6
#: a large namespace's sample is kept this long (seconds) before it is drawn again
NULL_TTL = 60.0
#: a stream whose consecutive records are this much more alike than any two (``Null``) is a
#: conversation ...
CONVERSATION = 0.5
#: ... when at least this share of its records are turns of a dialogue (``is_turn``; the
#: everyday suite's stores of notes 0.12-0.29, LoCoMo's and BEAM's conversations 1.0)
TURNS = 0.5
_SPEAKER = re.compile(r"\s*[^\W\d_][\w'.-]{0,40}(?: [\w'.-]{1,40})?:\s", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Null:
    """What unrelated text looks like in one namespace: the rows of a sample of its own records
    (with the background sentences while it holds few), and the mean and standard deviation of
    the cosines between two different rows. ``coherence``: how far, in those standard
    deviations, consecutive records of the stream are more alike than any two; a
    conversation's turns follow one another on a subject (LoCoMo's conversations 0.6-1.1), a
    store of separate notes does not (the everyday suite's stores 0.1-0.4). ``turns``: the
    share of the sampled records that are turns of a dialogue (``is_turn``)."""

    rows: np.ndarray
    pair_mean: float
    pair_std: float
    size: int
    until: float
    coherence: float = 0.0
    turns: float = 1.0

    @property
    def conversation(self) -> bool:
        """Whether the stream reads as a conversation: its records follow one another on a
        subject (``CONVERSATION``) and most are turns (``TURNS``). Then a record's neighbours
        tell about it, and context smoothing and the learned stage apply. Coherence alone
        would take notes written in bursts on one subject after another for a conversation:
        the everyday suite's stores, their notes grouped in eight topics, stand 0.40-0.82."""
        return self.coherence >= CONVERSATION and self.turns >= TURNS


def is_turn(text: str, kind: str) -> bool:
    """Whether a record is a turn of a dialogue: stored as a chat message, or opening with who
    speaks ("Caroline: ...", "user: ..."; one or two words and a colon)."""
    return kind == "message" or bool(_SPEAKER.match(text))


def measure(runs: Sequence[Sequence[np.ndarray]], background: np.ndarray | None, size: int,
            until: float, turns: float = 1.0) -> Null | None:
    """The null of a namespace from the vectors of its sampled records (``runs``: stretches of
    its stream, in order), with the ``background`` sentences while it holds fewer than
    ``NULL_OWN_MIN``; ``size``: how many records it holds; ``until``: when to draw it again;
    ``turns``: the share of its sampled records that are turns (``is_turn``)."""
    vecs = [e for run in runs for e in run]
    mine = len(vecs)
    if mine < NULL_OWN_MIN and background is not None:
        vecs += list(background)
    if len(vecs) < 2:
        return None
    rows = np.vstack(vecs).astype(np.float32)
    mean, std = _pairs(rows, mine)
    nextdoor = [float(a @ b) for run in runs for a, b in itertools.pairwise(run)]
    coherence = (float(np.mean(nextdoor)) - mean) / std if len(nextdoor) >= NULL_OWN_MIN \
        else 0.0
    return Null(rows, mean, std, size, until, coherence, turns)


def _pairs(rows: np.ndarray, mine: int) -> tuple[float, float]:
    """How alike two of the namespace's records are by chance: the mean and standard deviation
    of the cosines of two different rows. Two records are compared with the namespace's own
    pairs: the background's sentences, in English and on every subject, would make any two
    notes of one store in another language look alike (Portuguese notes stand 0.87 apart on
    average, the background 0.79, by 0.03). A namespace with fewer than ``PAIRS_OWN_MIN``
    records takes the typical middle of its own pairs (their median: an update and the fact it
    changes are one close pair), weighed against the background's as ``PRIOR_PAIRS`` pairs,
    and the background's spread."""
    own = _off(rows[:mine])
    if mine >= PAIRS_OWN_MIN or len(rows) == mine:
        every = own if mine >= PAIRS_OWN_MIN else _off(rows)
        return float(every.mean()), max(float(every.std()), 1e-3)
    background = _off(rows[mine:])
    weight = len(own) / (len(own) + PRIOR_PAIRS)
    middle = float(np.median(own)) if len(own) else 0.0
    mean = weight * middle + (1 - weight) * float(background.mean())
    return mean, max(float(background.std()), 1e-3)


def _off(rows: np.ndarray) -> np.ndarray:
    """The cosines of each two different rows (each pair once)."""
    upper = np.triu_indices(len(rows), k=1)
    out: np.ndarray = (rows @ rows.T)[upper]
    return out
