"""One search: candidates from the indexes, the three signals, normalisation, the score.

The store's indexes pick the candidates (the best ``candidates`` of the vector index and of the
keyword index); only those are scored here, so the cost does not grow with the namespace.
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import numpy as np

from .._types import Explanation, Hit
from ..config import DEFAULTS, ResolvedConfig
from ..errors import InvalidInput
from ..filters import Selection
from ..store.protocol import Signals, Store
from ..tracing import span
from .context import smooth
from .dates import spans
from .follow_ups import FOLLOW_TOP, follow_ups, newest_first
from .keywords import keyword_search, query_terms
from .notes import FEATURES as NOTES_FEATURES
from .notes import Pool as NotesPool
from .notes import adjustments, total
from .null import Null, null_rows
from .relevance import (
    CALIBRATION,
    Evidence,
    evidence,
    is_question,
    null_of,
    settle,
    sigmoid,
)
from .rerank import MIN_POOL, POOL, Pool, features, load_model, speaker_of
from .scoring import (
    PAST_RECENCY,
    Weights,
    asks_about_now,
    convex_fusion,
    minmax,
    recency,
    rrf_fusion,
)
from .standing import STANDING_KINDS, is_standing, lift

__all__ = ["FUSIONS", "Scorable", "Scored", "SearchParams", "rank", "run_search"]

FUSIONS = ("rrf", "convex")
#: Context smoothing applies to selections of at most this many records (see context.py).
LARGE_STREAM = 5000
#: Records longer than this (characters, the median of the best candidates) carry their own
#: context: long messages and whole exchanges skip context smoothing, the learned stage (which
#: model short conversational turns) and the sharing of relevance between near-duplicates
#: (which is about short statements of fact: long records on one subject all look alike).
LONG_TEXT = 600


#: a namespace found to hold more than ``LARGE_STREAM`` records is taken to stay that large for
#: this long (seconds) before it is counted again
LARGE_TTL = 30.0
_large: weakref.WeakKeyDictionary[Store, dict[str, float]] = weakref.WeakKeyDictionary()


def _small(store: Store, sel: Selection) -> bool:
    """Whether the search selects at most ``LARGE_STREAM`` records: the namespace is counted
    first (on a covering index; a large one is remembered for ``LARGE_TTL``), the selection
    only when it is narrower."""
    everything = Selection(sel.namespace, include_invalid=True)
    seen = _large.setdefault(store, {})
    if seen.get(sel.namespace, 0.0) < time.monotonic():
        if store.count(everything, limit=LARGE_STREAM) <= LARGE_STREAM:
            return True
        seen[sel.namespace] = time.monotonic() + LARGE_TTL
    narrower = dataclasses.replace(sel, include_invalid=True, as_of=None) != everything
    return narrower and store.count(sel, limit=LARGE_STREAM) <= LARGE_STREAM


def _long(store: Store, sel: Selection, ids: Sequence[str], texts: dict[str, str]) -> bool:
    """Whether the records of ``ids`` are long at the median (their texts join ``texts``)."""
    texts.update(store.texts(sel.namespace, list(ids)))
    lengths = sorted(len(texts[i]) for i in ids if i in texts)
    return bool(lengths) and lengths[len(lengths) // 2] > LONG_TEXT


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

    @classmethod
    def of(cls, config: ResolvedConfig, *, k: int, weights: Weights, **changes: Any
           ) -> SearchParams:
        """The search settings of ``config``, with ``k`` and ``weights``; ``changes`` replace
        any other (``rerank=False``)."""
        settings: dict[str, Any] = {
            "decay": config.decay, "fusion": config.fusion, "rrf_k": config.rrf_k,
            "alpha": config.alpha, "candidates": config.candidates,
            "min_spread": config.min_spread, "context": config.context, "rerank": config.rerank}
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


def run_search(store: Store, sel: Selection, text: str,
               query_vector: np.ndarray | Callable[[], np.ndarray | None] | None, now: float,
               p: SearchParams, *,
               observe: Callable[[list[str], np.ndarray], object] | None = None,
               observe_notes: Callable[[list[str], np.ndarray, np.ndarray], object] | None
               = None, background: np.ndarray | None = None) -> list[Hit]:
    """The top ``p.k`` hits for a query, best first, each with its explanation. Candidates are
    scored on their signals alone; only the winners are read in full. ``query_vector`` may be
    a callable that waits for a vector being computed elsewhere: it is called after the
    keyword search. ``observe`` is given the learned stage's candidates and their features
    (to fit its weights: bench.fit_rerank); ``observe_notes`` the notes stage's candidates,
    features and calibrated logits (bench.fit_notes)."""
    pool = max(p.candidates, p.k)
    with span("memstream.keyword_search"):
        keyword = keyword_search(store, sel, query_terms(text), pool)
    vector = query_vector() if callable(query_vector) else query_vector
    dense = store.vector_search(sel, vector, pool) if vector is not None else []
    if not dense and not keyword:
        return []
    kw_score = dict(keyword)
    cosine = dict(dense)
    dense_ids, kw_ids = [i for i, _ in dense], [i for i, _ in keyword]
    # context needs vectors (a keyword search keeps plain keyword semantics) and a stream small
    # enough to read in order at once (counted on the covering index: well under 1 ms)
    nb: dict[str, tuple[list[str], list[str]]] | None = None
    texts: dict[str, str] = {}
    long_records = _long(store, sel, [i for i, _ in (dense or keyword)[:10]], texts)
    null = null_rows(store, sel, background) if vector is not None else None
    # (fitting the learned stage, ``observe``, treats the stream as the conversation it is)
    conversation = null is None or null.conversation or observe is not None
    if p.context > 0 and dense and not long_records and conversation and _small(store, sel):
        dense_ids, kw_ids, nb = _with_context(store, sel, vector, dense, keyword, cosine, p)
    ids = list(dict.fromkeys(dense_ids + kw_ids))
    kw_rank = {rid: n for n, rid in enumerate(kw_ids, start=1)}
    vec_rank = {rid: n for n, rid in enumerate(dense_ids, start=1)}
    if p.fusion == "rrf":
        fused = rrf_fusion([dense_ids, kw_ids], k=p.rrf_k)
    else:
        fused = convex_fusion(cosine, kw_score, alpha=p.alpha if dense else 0.0)
    # the learned stage needs the context's neighbours (small streams, with vectors)
    model = load_model() if p.rerank else None
    learned: dict[str, float] = {}
    if nb is not None and vector is not None and len(fused) >= MIN_POOL and (
            model is not None or observe is not None):
        with span("memstream.rerank", candidates=len(fused)):
            found = gather(store, sel, vector, fused, cosine, kw_score, vec_rank, kw_rank, nb)
            texts.update(found.texts)
            x = features(text, found)
            if observe is not None:
                observe(list(found.ids), x)
            if model is not None:
                learned = dict(zip(found.ids, (float(v) for v in model.score(x)), strict=True))
                fused = reorder(fused, found.ids, np.array(list(learned.values())))
    # calibrated relevance of the best candidates (the rest rank below them, in fused order):
    # of long records, as many as the two indexes proposed (no learned stage ordered them,
    # and one index alone may hold the evidence)
    window = sorted(fused, key=lambda i: (-fused[i], i))[: 2 * pool if long_records
                                                          else max(POOL, p.k)]
    calibrated, own, evid = _calibrate(store, sel, text, vector, window, texts, cosine,
                                        learned, null)
    if p.weights.rule == "relevance-first":
        candidates = store.signals(sel.namespace, list(calibrated))
        if not asks_about_now(text):  # a question over a long history: recency counts less
            p = dataclasses.replace(p, weights=dataclasses.replace(
                p.weights, recency=p.weights.recency * PAST_RECENCY))
        kinds = {r.id: r.kind for r in store.get(sel.namespace, list(calibrated))}
        # a store of separate notes (not a conversation, short records): the notes stage
        if vector is not None and null is not None and not conversation and not long_records:
            stage = _notes_pool(store, sel, text, now, candidates, calibrated, evid, kw_rank,
                                kinds, texts, null)
            ranked = _notes_order(stage, candidates, calibrated, own, now, p, observe_notes)
        else:
            ranked = _lifted_order(text, candidates, calibrated, own, kinds, now, p)
            # follow-ups among short records that the learned stage did not order: in a
            # conversation the stage reads each turn's surroundings, and a later turn on the
            # same subject is not an update (LoCoMo dev recall_any@5 0.801 without them, 0.799
            # with)
            if null is not None and not long_records and not learned:
                ranked = _newest_first(store, sel, ranked, calibrated, null, texts)
        top = _lift_standing(ranked[: p.k], candidates, calibrated, own, kinds, texts, text,
                             now, p)
    else:
        candidates = store.signals(sel.namespace, ids)
        top = rank(candidates, relevance=[fused.get(c.id, 0.0) for c in candidates], now=now,
                   p=p)
    if vector is not None:  # exact cosine of keyword-only winners, for the explanation
        missing = [s.item.id for s in top if s.item.id not in cosine]
        for rid, emb in store.embeddings(sel.namespace, missing).items():
            if emb.shape == vector.shape:
                cosine[rid] = float(emb @ vector)
    records = {r.id: r for r in store.get(sel.namespace, [s.item.id for s in top])}
    return [
        Hit(records[s.item.id], s.score, dataclasses.replace(
            s.explain, cosine=cosine.get(s.item.id), keyword=kw_score.get(s.item.id),
            vector_rank=vec_rank.get(s.item.id), keyword_rank=kw_rank.get(s.item.id)))
        for s in top if s.item.id in records
    ]


def _of_date(dated: Sequence[tuple[float, float, bool]], created_at: float) -> float:
    """1 for a record of the day the query names (``dates.spans``), 0.5 of its month, else 0."""
    return max((1.0 if one_day else 0.5 for start, end, one_day in dated
                if start <= created_at < end), default=0.0)


def _lifted_order(text: str, candidates: Sequence[Signals], calibrated: Mapping[str, float],
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
        day = DATE_LIFT * _of_date(dated, c.created_at)
        if day:
            lifts[c.id] = (lifts.get(c.id, (0.0, ""))[0] + day, "of the date the query names")
    relevance = [calibrated[c.id] + lifts.get(c.id, (0.0, ""))[0] for c in candidates]
    ranked = rank(candidates, relevance=relevance, now=now, p=p, limit=max(p.k, FOLLOW_TOP),
                  own=[own[c.id] for c in candidates])
    return [s._replace(explain=dataclasses.replace(s.explain, lifted=lifts[s.item.id][1]))
            if s.item.id in lifts else s for s in ranked]


def _notes_order(stage: NotesPool, candidates: Sequence[Signals],
                 calibrated: Mapping[str, float], own: Mapping[str, float], now: float,
                 p: SearchParams,
                 observe: Callable[[list[str], np.ndarray, np.ndarray], object] | None
                 ) -> list[Scored[Signals]]:
    """The ranking of a store of notes' candidates (``stage`` holds them in their order):
    each logit plus the notes stage's additions, named in ``explain.adjustments``; a
    follow-up of the best match placed above it names it in ``explain.updates``; the
    relevance shown stays the record's own."""
    adds, x, best = adjustments(stage)
    if observe is not None:
        observe(list(stage.ids), x, stage.logits)
    relevance = [calibrated[c.id] + total(a) for c, a in zip(candidates, adds, strict=True)]
    ranked = rank(candidates, relevance=relevance, now=now, p=p, limit=max(p.k, FOLLOW_TOP),
                  shown=[own[c.id] for c in candidates])
    named = dict(zip(stage.ids, adds, strict=True))
    best_id = stage.ids[best] if stage.ids else ""
    follows = {stage.ids[int(i)] for i in np.flatnonzero(x[:, FOLLOWS_BEST])} if len(x) \
        else set()
    placed = {s.item.id: n for n, s in enumerate(ranked)}
    return [s._replace(explain=dataclasses.replace(
        s.explain, adjustments=named[s.item.id],
        updates=(best_id,) if s.item.id in follows
        and placed[s.item.id] < placed.get(best_id, len(ranked)) else ()))
        for s in ranked]


def _lift_standing(top: list[Scored[Signals]], candidates: Sequence[Signals],
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
#: the notes stage compares with one another the most relevant this many candidates
NOTES_PAIRS = 50


def _notes_pool(store: Store, sel: Selection, text: str, now: float,
                candidates: Sequence[Signals], calibrated: Mapping[str, float],
                found: Mapping[str, Evidence], kw_rank: Mapping[str, int],
                kinds: Mapping[str, str], texts: Mapping[str, str], null: Null) -> NotesPool:
    """What the notes stage reads of the candidates (retrieval.notes.Pool); the likeness of
    two records is measured against the namespace's pairs (``Null``)."""
    ids = [c.id for c in candidates]
    # how alike two records are matters among the most relevant (a follow-up of the best
    # match, the record a newer one supersedes): the vectors of the best NOTES_PAIRS are read
    paired = sorted(ids, key=lambda i: -calibrated[i])[:NOTES_PAIRS]
    vecs = store.embeddings(sel.namespace, paired)
    dim = null.rows.shape[1]
    have = [n for n, i in enumerate(ids) if i in vecs and vecs[i].shape[0] == dim]
    pair_z = np.full((len(ids), len(ids)), -np.inf)
    if have:
        mat = np.vstack([vecs[ids[n]] for n in have])
        pair_z[np.ix_(have, have)] = (mat @ mat.T - null.pair_mean) / null.pair_std
    dated = spans(text, now)
    day = [_of_date(dated, c.created_at) for c in candidates]
    return NotesPool(
        ids=ids, logits=np.array([calibrated[i] for i in ids], dtype=np.float64),
        dense=np.array([found[i].dense or 0.0 for i in ids], dtype=np.float64),
        keyword=np.array([found[i].keyword for i in ids], dtype=np.float64),
        keyword_rank=np.array([kw_rank.get(i, 0) for i in ids], dtype=np.float64),
        question=np.array([is_question(texts.get(i, "")) for i in ids]),
        standing=np.array([kinds.get(i) in STANDING_KINDS for i in ids]),
        dated=np.array(day, dtype=np.float64),
        times=np.array([c.created_at for c in candidates], dtype=np.float64),
        importance=np.array([c.importance for c in candidates], dtype=np.float64),
        pair_z=pair_z, request=not is_question(text))


def _calibrate(store: Store, sel: Selection, text: str, vector: np.ndarray | None,
               window: Sequence[str], texts: dict[str, str], cosine: dict[str, float],
               learned: Mapping[str, float], null: Null | None
               ) -> tuple[dict[str, float], dict[str, float], dict[str, Evidence]]:
    """The calibrated relevance logit of each candidate of ``window`` (retrieval.relevance),
    the logit of its own evidence (the same where the learned stage did not run) and the
    evidence itself: reads the texts and cosines it lacks; the query's null from the
    namespace's (``Null``)."""
    missing = [i for i in window if i not in texts]
    if missing:
        texts.update(store.texts(sel.namespace, missing))
    if vector is not None:
        unknown = [i for i in window if i not in cosine]
        for rid, emb in store.embeddings(sel.namespace, unknown).items():
            if emb.shape == vector.shape:
                cosine[rid] = float(emb @ vector)
    if vector is not None and null is not None and null.rows.shape[1:] == vector.shape:
        spread = null_of(null.rows, vector)
    else:  # no null for these vectors: the candidates' own spread
        known = sorted(cosine[i] for i in window if i in cosine) or [0.0]
        spread = (known[len(known) // 2], max(1e-3, float(np.std(known))))
    found = evidence(text, {i: texts[i] for i in window if i in texts}, cosine, learned,
                     null=spread)
    return ({i: CALIBRATION.logit(e) for i, e in found.items()},
            {i: CALIBRATION.absolute(e) for i, e in found.items()}, found)


#: how much higher a memory recorded as a preference or instruction ranks for a request (a
#: query that is not a question), in logits (on the everyday suite, its 26 requests: 5 of them
#: answered first with none, 11 with 2, 14 with 3; no question changes)
REQUEST_LIFT = 2.0
#: how much higher a record of the day the query names ranks (half that for a month), in logits
DATE_LIFT = 2.0

def _newest_first(store: Store, sel: Selection, ranked: list[Scored[Signals]],
                  logits: Mapping[str, float], null: Null, texts: Mapping[str, str]
                  ) -> list[Scored[Signals]]:
    """``ranked`` with follow-ups first (``follow_ups``); each hit placed above a record it
    follows up names it in ``explain.updates``."""
    order = [s.item.id for s in ranked]
    times = {s.item.id: s.item.created_at for s in ranked}
    follow = follow_ups(store, sel, order, logits, times, null, questions={
        rid for rid in order if is_question(texts.get(rid, ""))},
        weight={s.item.id: s.item.importance for s in ranked})
    if not follow:
        return ranked
    by_id = {s.item.id: s for s in ranked}
    out = []
    for rid in newest_first(order, follow, times):
        updates = tuple(old for old, newer in follow.items() if rid in newer)
        hit = by_id[rid]
        out.append(hit._replace(explain=dataclasses.replace(hit.explain, updates=updates))
                   if updates else hit)
    return out


def gather(store: Store, sel: Selection, vector: np.ndarray, fused: Mapping[str, float],
           cosine: dict[str, float], keyword: Mapping[str, float], vector_rank: Mapping[str, int],
           keyword_rank: Mapping[str, int], nb: dict[str, tuple[list[str], list[str]]]) -> Pool:
    """What the learned stage needs of the best ``POOL`` fused candidates: their texts, their
    neighbours (read when the context stage did not), everyone's times and cosines."""
    top = sorted(fused, key=lambda i: (-fused[i], i))[:POOL]
    missing = [i for i in top if i not in nb]
    if missing:
        nb.update(store.neighbours(sel, missing, before=2, after=1))
    around = {r for i in top if i in nb for r in (*nb[i][0], *nb[i][1])}
    known = sorted(set(top) | around)
    unknown = [i for i in known if i not in cosine]
    for rid, emb in store.embeddings(sel.namespace, unknown).items():
        if emb.shape == vector.shape:
            cosine[rid] = float(emb @ vector)
    records = store.get(sel.namespace, top)
    return Pool(
        ids=[r.id for r in records], texts={r.id: r.text for r in records},
        speakers={r.id: speaker_of(r.text, r.metadata) for r in records},
        times={s.id: s.created_at for s in store.signals(sel.namespace, known)},
        fused=fused, cosine=cosine, keyword=keyword, vector_rank=vector_rank,
        keyword_rank=keyword_rank, neighbours=nb)


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


def _two_rings(wide: Mapping[str, tuple[list[str], list[str]]]
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


def _with_context(store: Store, sel: Selection, vector: np.ndarray | None,
                  dense: list[tuple[str, float]], keyword: list[tuple[str, float]],
                  cosine: dict[str, float], p: SearchParams
                  ) -> tuple[list[str], list[str], dict[str, tuple[list[str], list[str]]]]:
    """Both rankings after context smoothing (see retrieval.context), and the neighbours it
    read; ``cosine`` gains the cosines of the neighbours it had to read."""
    seeds = list(dict.fromkeys([i for i, _ in dense[: p.context]] +
                               [i for i, _ in keyword[: p.context]]))
    nb = _two_rings(store.neighbours(sel, seeds, before=4, after=2))
    everyone = set(nb) | {n for prev, nxt in nb.values() for n in prev + nxt}
    if vector is not None:
        missing = [i for i in everyone if i not in cosine]
        for rid, emb in store.embeddings(sel.namespace, missing).items():
            if emb.shape == vector.shape:
                cosine[rid] = float(emb @ vector)
    centre = float(np.mean([s for _, s in dense])) if dense else 0.0
    d_smooth = smooth({i: c - centre for i, c in cosine.items()}, nb)
    k_smooth = smooth(dict(keyword), nb)
    rest_d = [i for i, _ in dense if i not in d_smooth]  # outside the smoothed window
    rest_k = [i for i, _ in keyword if i not in k_smooth]
    d_ids = sorted(d_smooth, key=lambda i: (-d_smooth[i], i))
    k_ids = [i for i in sorted(k_smooth, key=lambda i: (-k_smooth[i], i)) if k_smooth[i] > 0]
    pool = max(p.candidates, p.k)
    return (d_ids + rest_d)[:pool] if dense else [], (k_ids + rest_k)[:pool], nb


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


