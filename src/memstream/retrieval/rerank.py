"""A learned ranking stage: a linear model over signals of each candidate and its surroundings.

Fusion ranks a candidate by two numbers (its place in the vector and in the keyword ranking).
What else tells a relevant record from a near miss is in its surroundings: whether the turn
right after it matches the question (answers follow questions), whether its conversation
session matches the query as a whole (a question's words are often spread over a few turns of
one session), whether the person the question names is the one speaking, whether the record is
itself a question. This stage computes ``FEATURES`` for the best ``POOL`` fused candidates and
orders them by a weighted sum of their standardised values. The weights are fitted once, on the
LoCoMo development split only, with a listwise objective (the probability mass a softmax over
each question's candidates puts on its evidence), and shipped as constants in
``rerank_weights.json``; ``memstream bench locomo --fit-rerank`` refits them and reports each
held-out conversation's figure (see docs/benchmarks.md). Nothing here calls a model or the
network: it costs well under a millisecond per candidate.

Sessions are runs of records with no gap over ``SESSION_GAP`` seconds between consecutive
ones, among the candidates and their neighbours. A record's speaker is ``metadata["speaker"]``
or a leading "Name:" in its text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .keywords import query_terms
from .learned import read_weights, weights_json
from .reads import Searched

__all__ = ["FEATURES", "MIN_POOL", "POOL", "SESSION_GAP", "Model", "Pool", "features", "load_model",
           "pool", "speaker_of"]

WEIGHTS_FILE = "rerank_weights.json"
#: how many of the best fused candidates are reordered
POOL = 100
#: fewer candidates than this keep their fused order: the stage's per-search statistics
#: (cosines standardised over the candidates) mean little on a handful of records
MIN_POOL = 50
#: a gap longer than this (seconds) between consecutive records starts a new session
SESSION_GAP = 3600.0
FEATURES = (
    "cosine_z", "keyword", "prev_cosine_z", "prev2_cosine_z", "next_cosine_z", "prev_keyword",
    "next_keyword", "session_max_cosine_z", "session_top3_cosine_z", "session_max_keyword",
    "session_terms", "session_density", "terms", "speaker_named", "other_named",
    "terms_x_speaker", "is_question", "length", "vector_rr", "keyword_rr", "fused_rank",
    "fused",
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NAME = re.compile(r"\b[A-Z][a-z]+\b")
_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]{0,40}?)\s*:")


@dataclass(frozen=True)
class Pool:
    """What the stage knows of a search: the candidates in fused order with their texts and
    times, every known record's cosine and keyword score, dense and keyword ranks, and the
    stream neighbours (previous two, next one) of each candidate."""

    ids: Sequence[str]
    texts: Mapping[str, str]
    speakers: Mapping[str, str | None]
    times: Mapping[str, float]
    fused: Mapping[str, float]
    cosine: Mapping[str, float]
    keyword: Mapping[str, float]
    vector_rank: Mapping[str, int]
    keyword_rank: Mapping[str, int]
    neighbours: Mapping[str, tuple[Sequence[str], Sequence[str]]]


def pool(s: Searched) -> Pool:
    """What the stage reads of a search: the best ``POOL`` fused candidates, their texts,
    their neighbours (read when the context stage did not), everyone's times and cosines."""
    assert s.nb is not None  # the context stage read the stream
    top = sorted(s.fused, key=lambda i: (-s.fused[i], i))[:POOL]
    missing = [i for i in top if i not in s.nb]
    if missing:
        s.nb.update(s.reads.neighbours(missing, before=2, after=1))
    around = {r for i in top if i in s.nb for r in (*s.nb[i][0], *s.nb[i][1])}
    known = sorted(set(top) | around)
    cosine = s.reads.cosines(known)
    records = s.reads.records(top)
    s.reads.known_texts.update({r.id: r.text for r in records})
    return Pool(
        ids=[r.id for r in records], texts={r.id: r.text for r in records},
        speakers={r.id: speaker_of(r.text, r.metadata) for r in records},
        times={c.id: c.created_at for c in s.reads.signals(known)},
        fused=s.fused, cosine=cosine, keyword=s.kw_score, vector_rank=s.vec_rank,
        keyword_rank=s.kw_rank, neighbours=s.nb)


def speaker_of(text: str, metadata: Mapping[str, object] | None) -> str | None:
    value = (metadata or {}).get("speaker")
    if isinstance(value, str) and value.strip():
        return value.strip().lower()
    m = _SPEAKER.match(text)
    return m.group(1).lower() if m else None


def _stems(text: str) -> tuple[set[str], set[str]]:
    words = {w for w in _WORD.findall(text.lower())}
    return words, {w[:5] for w in words if len(w) >= 5}


def _has(term: str, words: set[str], prefixes: set[str]) -> bool:
    """A crude stemmer: a term of 5+ letters matches a word sharing its first 5."""
    return term[:5] in prefixes if len(term) >= 5 else term in words


def features(query: str, pool: Pool) -> np.ndarray:
    """The ``FEATURES`` of each candidate of ``pool.ids``, one row each."""
    ids = list(pool.ids)
    n = len(ids)
    if n == 0:
        return np.zeros((0, len(FEATURES)))
    cos = np.array([pool.cosine.get(i, 0.0) for i in ids])
    mean, std = float(cos.mean()), float(cos.std()) or 1.0

    def z(rid: str | None) -> float:
        return (pool.cosine[rid] - mean) / std if rid is not None and rid in pool.cosine \
            else 0.0

    top_kw = max((pool.keyword.get(i, 0.0) for i in ids), default=0.0) or 1.0

    def kw(rid: str | None) -> float:
        return pool.keyword.get(rid, 0.0) / top_kw if rid is not None else 0.0

    # sessions over the candidates and their neighbours, by time gaps
    known = set(ids)
    for i in ids:
        prev, nxt = pool.neighbours.get(i, ((), ()))
        known.update(r for r in (*prev, *nxt) if r in pool.times)
    order = sorted(known, key=lambda r: (pool.times[r], r))
    session: dict[str, int] = {}
    current = 0
    for a, b in zip([None, *order], order, strict=False):
        if a is not None and pool.times[b] - pool.times[a] > SESSION_GAP:
            current += 1
        session[b] = current
    terms = query_terms(query)
    q_words = {w.lower() for w in _WORD.findall(query)}
    q_names = {w.lower() for w in _NAME.findall(query)} - _QUESTION_WORDS
    stems = {i: _stems(pool.texts.get(i, "")) for i in ids}
    covered = {i: [t for t in terms if _has(t, *stems[i])] for i in ids}
    by_session: dict[int, list[str]] = {}
    for i in order:
        by_session.setdefault(session[i], []).append(i)
    rank = {i: r for r, i in enumerate(ids, start=1)}
    s_max, s_top3, s_kw, s_terms, s_dense = {}, {}, {}, {}, {}
    for s, members in by_session.items():
        zs = sorted((z(m) for m in members), reverse=True)
        s_max[s], s_top3[s] = zs[0], sum(zs[:3]) / min(3, len(zs))
        s_kw[s] = max(kw(m) for m in members)
        found = {t for m in members if m in covered for t in covered[m]}
        s_terms[s] = len(found) / len(terms) if terms else 0.0
        s_dense[s] = sum(1 for m in members if rank.get(m, POOL + 1) <= 20) / 5
    rows = []
    for i in ids:
        prev, nxt = pool.neighbours.get(i, ((), ()))
        p1 = prev[0] if len(prev) > 0 else None
        p2 = prev[1] if len(prev) > 1 else None
        n1 = nxt[0] if nxt else None
        s = session[i]
        text = pool.texts.get(i, "")
        speaker = pool.speakers.get(i)
        spk = 1.0 if speaker and speaker in q_words else 0.0
        others = {w.lower() for w in _NAME.findall(text)} - {speaker or ""}
        cover = len(covered[i]) / len(terms) if terms else 0.0
        vr, kr = pool.vector_rank.get(i), pool.keyword_rank.get(i)
        rows.append((
            z(i), kw(i), z(p1), z(p2), z(n1), kw(p1), kw(n1), s_max[s], s_top3[s], s_kw[s],
            s_terms[s], s_dense[s], cover, spk, 1.0 if others & q_names else 0.0, cover * spk,
            1.0 if text.rstrip().endswith("?") else 0.0, math.log1p(len(text)) / 6,
            10 / (10 + vr) if vr else 0.0, 10 / (10 + kr) if kr else 0.0,
            1 / math.sqrt(rank[i]), 10 * pool.fused.get(i, 0.0)))
    return np.array(rows, dtype=np.float64)


_QUESTION_WORDS = frozenset(
    "what when where who whom whose which why how did does do is are was were has have had can "
    "could would will should".split())


@dataclass(frozen=True)
class Model:
    """Standardisation and weights of the linear ranker."""

    mean: np.ndarray
    std: np.ndarray
    weights: np.ndarray

    def score(self, x: np.ndarray) -> np.ndarray:
        scores: np.ndarray = ((x - self.mean) / self.std) @ self.weights
        return scores

    def to_json(self, **about: object) -> str:
        return weights_json(FEATURES, mean=self.mean.tolist(), std=self.std.tolist(),
                            weights=self.weights.tolist(), **about)


@lru_cache(maxsize=1)
def load_model() -> Model | None:
    """The shipped weights, or None when they do not describe ``FEATURES`` (then the stage is
    skipped)."""
    raw = read_weights(WEIGHTS_FILE, FEATURES)
    if raw is None:
        return None
    return Model(np.array(raw["mean"]), np.array(raw["std"]), np.array(raw["weights"]))
