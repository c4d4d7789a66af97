"""The orderings of one search, pure functions of its candidates and their signals.

The engine (``engine.search.run_search``) reads the candidates from the store's indexes and
their evidence; here they are ordered: the score of the three signals (``rank``), the learned
stage's order (``reorder``), the notes stage's (``notes_order``), the lifts of requests and
dates for conversations and long records (``lifted_order``) and the place kept for a standing
instruction (``lift_standing``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import numpy as np

from .._types import Explanation, Signals
from ..config import DEFAULTS, ResolvedConfig
from ..errors import InvalidInput
from .dates import of_date, spans
from .follow_ups import FOLLOW_TOP
from .notes import FEATURES as NOTES_FEATURES
from .notes import Pool as NotesPool
from .notes import adjustments, total
from .relevance import is_question, settle, sigmoid
from .scoring import Weights, minmax, recency
from .standing import STANDING_KINDS, is_standing, lift

__all__ = ["FUSIONS", "Scorable", "Scored", "SearchParams", "lift_standing", "lifted_order",
           "notes_order", "of_date", "rank", "reorder", "two_rings"]

FUSIONS = ("rrf", "convex")


@dataclass(frozen=True, slots=True)
class SearchParams:
    """Everything a search needs besides the query. See ``memstream.config.Config``."""

    k: int = 10
    weights: Weights = field(default_factory=Weights)
    decay: float = DEFAULTS["decay"]
    fusion: str = DEFAULTS["fusion"]
    rrf_k: int = DEFAULTS["rrf_k"]
    alpha: float = DEFAULTS["alpha"]
    candidates: int = DEFAULTS["candidates"]
    min_spread: float = DEFAULTS["min_spread"]
    context: int = DEFAULTS["context"]
    rerank: bool = DEFAULTS["rerank"]
    entities: bool = DEFAULTS["entities"]

    @classmethod
    def of(cls, config: ResolvedConfig, *, k: int, weights: Weights, **changes: Any
           ) -> SearchParams:
        """The search settings of ``config``, with ``k`` and ``weights``; ``changes`` replace
        any other (``rerank=False``)."""
        settings: dict[str, Any] = {
            "decay": config.decay, "fusion": config.fusion, "rrf_k": config.rrf_k,
            "alpha": config.alpha, "candidates": config.candidates,
            "min_spread": config.min_spread, "context": config.context, "rerank": config.rerank,
            "entities": config.entities}
        return cls(k=k, weights=weights, **(settings | changes))

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not 1 <= self.k <= 1000:
            raise InvalidInput(f"k must be an integer from 1 to 1000, got {self.k!r}")
        if not 0 < self.decay <= 1:
            raise InvalidInput(f"decay must be in (0, 1], got {self.decay!r}")
        if self.fusion not in FUSIONS:
            raise InvalidInput(f"unknown fusion {self.fusion!r}; use one of {FUSIONS}")
        if not 0 <= self.alpha <= 1:
            raise InvalidInput("alpha (the vector share in convex fusion) must be in [0, 1]")


def lifted_order(text: str, candidates: Sequence[Signals], calibrated: Mapping[str, float],
                  own: Mapping[str, float], kinds: Mapping[str, str], now: float,
                  p: SearchParams) -> list[Scored[Signals]]:
    """The ranking of a conversation's or long records' candidates: a request (not a
    question: "Email Ms. Delgado that...") is about how to act, and a memory recorded as a
    preference or an instruction says how: it ranks REQUEST_LIFT logits higher for it; a
    record of the day (or month) the query names DATE_LIFT (half); ``explain.lifted`` says so
    and the relevance shown stays its own."""
    request = not is_question(text)
    dated = spans(text, now)
    lifts: dict[str, tuple[float, str]] = {}
    for c in candidates:
        if request and kinds.get(c.id) in STANDING_KINDS:
            lifts[c.id] = (REQUEST_LIFT, "a preference or instruction, for a request")
        day = DATE_LIFT * of_date(dated, c.created_at)
        if day:
            lifts[c.id] = (lifts.get(c.id, (0.0, ""))[0] + day, "of the date the query names")
    relevance = [calibrated[c.id] + lifts.get(c.id, (0.0, ""))[0] for c in candidates]
    ranked = rank(candidates, relevance=relevance, now=now, p=p, limit=max(p.k, FOLLOW_TOP),
                  own=[own[c.id] for c in candidates])
    return [s._replace(explain=dataclasses.replace(s.explain, lifted=lifts[s.item.id][1]))
            if s.item.id in lifts else s for s in ranked]


def notes_order(stage: NotesPool, candidates: Sequence[Signals],
                 calibrated: Mapping[str, float], own: Mapping[str, float], now: float,
                 p: SearchParams,
                 observe: Callable[[list[str], np.ndarray, np.ndarray], object] | None
                 ) -> list[Scored[Signals]]:
    """The ranking of a store of notes' candidates (``stage`` holds them in their order):
    each logit plus the notes stage's additions, named in ``explain.adjustments``; a
    follow-up of the best match placed above it names it in ``explain.updates``, a record
    with a newer one about the same thing names that in ``explain.newer``; the relevance
    shown stays the record's own."""
    adds, x, best, newer = adjustments(stage)
    if observe is not None:
        observe(list(stage.ids), x, stage.logits)
    relevance = [calibrated[c.id] + total(a) for c, a in zip(candidates, adds, strict=True)]
    ranked = rank(candidates, relevance=relevance, now=now, p=p, limit=max(p.k, FOLLOW_TOP),
                  shown=[own[c.id] for c in candidates])
    named = dict(zip(stage.ids, adds, strict=True))
    newer_of = dict(zip(stage.ids, newer, strict=True))
    best_id = stage.ids[best] if stage.ids else ""
    follows = {stage.ids[int(i)] for i in np.flatnonzero(x[:, FOLLOWS_BEST])} if len(x) \
        else set()
    placed = {s.item.id: n for n, s in enumerate(ranked)}
    return [s._replace(explain=dataclasses.replace(
        s.explain, adjustments=named[s.item.id],
        updates=(best_id,) if s.item.id in follows
        and placed[s.item.id] < placed.get(best_id, len(ranked)) else (),
        newer=(newer_of[s.item.id],) if newer_of[s.item.id] else ()))
        for s in ranked]


def lift_standing(top: list[Scored[Signals]], candidates: Sequence[Signals],
                   calibrated: Mapping[str, float], own: Mapping[str, float],
                   kinds: Mapping[str, str], texts: Mapping[str, str], text: str, now: float,
                   p: SearchParams) -> list[Scored[Signals]]:
    """``top`` with a place kept for the most relevant standing memory (retrieval.standing)."""
    standing = [c for c in candidates if is_standing(texts.get(c.id, ""), kinds.get(c.id))]
    best = rank(standing, relevance=[calibrated[c.id] for c in standing], now=now, p=p,
                limit=1, own=[own[c.id] for c in standing])
    if not best:
        return top
    return lift(top, best[0], query=text, key=lambda s: s.item.id,
                standing=lambda s: is_standing(texts.get(s.item.id, ""), kinds.get(s.item.id)),
                logit=lambda s: s.explain.raw_relevance,
                mark=lambda s: s._replace(explain=dataclasses.replace(
                    s.explain, lifted="standing instruction or preference")))


FOLLOWS_BEST = NOTES_FEATURES.index("follows_best")


#: how much higher a memory recorded as a preference or instruction ranks for a request (a
#: query that is not a question), in logits (on the everyday suite, its 26 requests: 5 of them
#: answered first with none, 11 with 2, 14 with 3; no question changes)
REQUEST_LIFT = 2.0
#: how much higher a record of the day the query names ranks (half that for a month), in logits
DATE_LIFT = 2.0


def reorder(fused: Mapping[str, float], ids: Sequence[str], scores: np.ndarray
            ) -> dict[str, float]:
    """Relevance after the learned stage: its scores for ``ids``; every other candidate
    below them all, in its fused order."""
    out = {rid: float(s) for rid, s in zip(ids, scores, strict=True)}
    floor = min(out.values(), default=0.0) - 1.0
    rest = sorted((i for i in fused if i not in out), key=lambda i: (-fused[i], i))
    for n, rid in enumerate(rest, start=1):
        out[rid] = floor - n / (len(rest) + 1)
    return out


def two_rings(wide: Mapping[str, tuple[list[str], list[str]]]
               ) -> dict[str, tuple[list[str], list[str]]]:
    """The (two before, one after) neighbours of each seed and of each of those neighbours,
    from one read of the seeds' wider windows (four before, two after): every window is a run
    of the stream, so a neighbour's own neighbours are in it. A window shorter than asked
    ends at the stream's start or end."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for seed, (prev, nxt) in wide.items():
        run = [*prev[::-1], seed, *nxt]
        starts, ends = len(prev) < 4, len(nxt) < 2  # the run reaches the stream's start / end
        at = len(prev)  # the seed, then its two before and one after
        for i in (at, at - 1, at - 2, at + 1):
            if not 0 <= i < len(run) or run[i] in out or (i < 2 and not starts) \
                    or (i == len(run) - 1 and not ends):
                continue
            out[run[i]] = (run[max(0, i - 2):i][::-1], run[i + 1:i + 2])
    return out


class Scorable(Protocol):
    """What scoring needs of a candidate (a ``Record`` or a store's ``Signals``)."""

    @property
    def id(self) -> str: ...
    @property
    def importance(self) -> float: ...
    @property
    def created_at(self) -> float: ...
    @property
    def last_accessed_at(self) -> float: ...


S = TypeVar("S", bound=Scorable)


class Scored(NamedTuple, Generic[S]):
    item: S
    score: float
    explain: Explanation


def rank(items: Sequence[S], *, relevance: Sequence[float], now: float, p: SearchParams,
         limit: int | None = None, own: Sequence[float] | None = None,
         shown: Sequence[float] | None = None) -> list[Scored[S]]:
    """Score candidates whose raw relevance is known and return the best ``limit`` (default
    ``p.k``), best first.

    Under the "weighted" rule (the paper's), ``relevance`` is any score that orders the
    candidates and every signal is min-max normalised over them; under "relevance-first" it is
    the calibrated relevance logit (retrieval.relevance) and recency and importance are used
    as they are (see ``scoring.Weights``); ``own``, the logits of the records' own evidence,
    caps the relevance shown (the learned stage orders, it does not add evidence); ``shown``,
    where given, is the logit shown instead (the notes stage's additions order, the relevance
    shown stays the record's own evidence). Ties on the
    score break on raw relevance, then on the newer record, then on the id.
    """
    hours = [(now - c.last_accessed_at) / 3600.0 for c in items]
    raw_rec = [recency(h, p.decay) for h in hours]
    raw_imp = [c.importance for c in items]
    w = p.weights.as_tuple()
    if p.weights.rule == "relevance-first":
        n_rec, n_imp = raw_rec, raw_imp
        # the relevance shown is never above the record's own evidence (``own``): the learned
        # stage may order a record higher, not make it look more relevant than it is
        n_rel = [sigmoid(shown[i] if shown is not None else x if own is None
                         else min(x, own[i])) for i, x in enumerate(relevance)]
        scores = [sigmoid(w[2] * settle(relevance[i]) + w[0] * (raw_rec[i] - 0.5)
                          + w[1] * (raw_imp[i] - 0.5)) for i in range(len(items))]
    else:
        n_rec = minmax(raw_rec, p.min_spread)
        n_imp = minmax(raw_imp, p.min_spread)
        n_rel = minmax(list(relevance), p.min_spread)
        scores = [w[0] * n_rec[i] + w[1] * n_imp[i] + w[2] * n_rel[i]
                  for i in range(len(items))]
    order = sorted(range(len(items)), key=lambda i: (-scores[i], -relevance[i],
                                                      -items[i].created_at, items[i].id))
    return [Scored(items[i], scores[i], Explanation(
        recency=n_rec[i], importance=n_imp[i], relevance=n_rel[i], raw_recency=raw_rec[i],
        raw_importance=raw_imp[i], raw_relevance=relevance[i], weights=w,
        hours_since_access=hours[i], fusion=p.fusion, rule=p.weights.rule,
        recency_from="access" if items[i].last_accessed_at > items[i].created_at else "write"))
        for i in order[: p.k if limit is None else limit]]


