"""An ordering stage for stores of separate notes: what relevance alone does not see.

A store of everyday notes (not a conversation, whose turns the learned stage of ``rerank``
reads in their surroundings) holds facts that change, events that move, questions and their
replies, preferences that govern requests. The calibrated relevance of a record
(``relevance``) is evidence about the record alone; this stage adds, in logits, what the
records say about one another and what the query asks of them. Each addition is named, and a
hit's explanation lists them (``Explanation.adjustments``); the relevance a hit shows stays its
own evidence.

The signals, all of them structural (no word of any language is read here; the date and the
question mark are read by ``dates`` and ``relevance.is_question``):

- ``keyword_rank``: 1 / the record's place in the keyword ranking (0 outside it);
- ``question``: the record is itself a question (a stored question answers nothing);
- ``request``: the query is a request, not a question, and the record was stored as a
  preference or an instruction (``standing.STANDING_KINDS``);
- ``date``: the record was written on the day the query names, or tells of it (1; 0.5 for
  the month; ``dates.of_date``: "yesterday's run" written the day after);
- ``anchored``: the query counts time from an event ("the morning after the storm": the
  windows ``anchors`` reads) and the record was written in that window counted from the
  event's record: one of the ``ANCHORS`` candidates best on their own signals, or the one
  holding the most of the words that name the event (at least ``EVENT_SHARE`` of them);
- ``superseded``: a newer record is about the same thing (its vector stands ``SAME_Z`` pair
  deviations above the namespace's chance likeness, ``Null``) and about as relevant (its dense
  evidence at most ``SUPERSEDED_GAP`` below). A likeness, not a change found: the explanation
  names it "a newer record is about the same thing" and the newer record in
  ``Explanation.newer`` (a change found links the record: ``Record.superseded_by``);
- ``follows_any``: the record *follows up* an older one: it is newer and among the older one's
  ``LINK_RANK`` nearest records of the pool, at least ``LINK_Z`` pair deviations alike;
- ``follows_best`` and its four companions: the record follows up the *best* candidate (the
  highest logit after the additions above; only when that logit is at least ``FOLLOW_FROM``,
  no record stands in a window of time the query counts from an event (such a query asks
  about that time, not about what came last) and the query does not ask about the past
  (``past``: what was tried and dropped, or replaced, is not what followed it),
  with how alike the two are (``_pz``, in pair deviations), how much less relevant it looks
  (``_gap``, dense evidence), how long after it came (``_days``, log of 1 + days) and the
  share of the query's words it holds (``_keyword``). A changed fact, a moved event and the
  reply to a stored question all follow up the record the query matches best, soon after and
  very alike; an unrelated later note is less alike and holds fewer of the query's words.

The weights (``notes_weights.json``) were fitted with a listwise objective on the everyday
development suite's stores, the calibrated relevance logit as a fixed offset, each store held
out in turn to report what the weights do on a store they never saw (``memstream bench
fit-notes``; docs/benchmarks.md). Everything here is a function of arrays: the pipeline
gathers them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from .anchors import Window, event_share, windows
from .dates import of_date, spans, told
from .learned import read_weights, weights_json
from .reads import Searched
from .relevance import is_question
from .standing import STANDING_KINDS

__all__ = ["AFTER_EVENT", "AFTER_EVENT_LABEL", "FEATURES", "LABELS", "NOTES_PAIRS", "Added",
           "Pool", "Weights", "adjustments", "features", "load_weights", "pool"]

WEIGHTS_FILE = "notes_weights.json"
FEATURES = ("keyword_rank", "question", "request", "date", "anchored", "superseded",
            "follows_any", "follows_best", "follows_best_pz", "follows_best_gap",
            "follows_best_days", "follows_best_keyword")
#: how an explanation names each signal's addition
LABELS = {
    "keyword_rank": "keyword rank", "question": "a stored question",
    "request": "a preference or instruction, for a request",
    "date": "of the date the query names",
    "anchored": "in the time the query counts from its event",
    "superseded": "a newer record is about the same thing",
    "follows_any": "follows up an older record", "follows_best": "follows up the best match",
}
_FIRST_FOLLOWS_BEST = FEATURES.index("follows_best")
#: the features of a record on its own, before those of its place among the others
_OWN = FEATURES.index("anchored")
#: the label of the lift of a window's records above the event it is counted from
AFTER_EVENT_LABEL = "written in the time counted from a better match"
#: the label of each addition: one per feature, the ``follows_best`` group as one
_GROUP_LABELS = [LABELS[f] for f in FEATURES[:_FIRST_FOLLOWS_BEST]] + [LABELS["follows_best"]]
#: a newer record this many pair deviations alike is about the same thing (``superseded``)
SAME_Z = 2.0
#: ... when its dense evidence is at most this far below the older one's
SUPERSEDED_GAP = 1.5
#: a newer record among an older one's this many nearest of the pool ...
LINK_RANK = 2
#: ... and at least this many pair deviations alike follows it up
LINK_Z = 2.0
#: the best candidate's follow-ups count when its logit is at least this (relevance 0.18):
#: in a store where nothing matches well, a record alike to the best of poor matches is no
#: update (on the everyday suite, held out by store: 0.53 first at -2.5, the relevance
#: module's UNRELATED, and at -2.0; 0.56 at -1.5; 0.57 at -1.0)
FOLLOW_FROM = -1.5
#: a window the query counts from an event is counted from each of this many best candidates
ANCHORS = 3
#: ... and from the candidate holding the most of the event's words, at least this share
EVENT_SHARE = 0.25
#: the best record written in such a window stands this far above its anchor, in logits
AFTER_EVENT = 0.5
_DAY = 86400.0


@dataclass(frozen=True, slots=True)
class Pool:
    """What the stage reads of a search's candidates (row ``i`` of each array is ``ids[i]``).

    ``logits``: calibrated relevance logits; ``dense``: dense evidence (standard deviations
    above the query's null); ``keyword``: share of the query's words held; ``keyword_rank``:
    1-based place in the keyword ranking, 0 outside it; ``question``: the record is a question;
    ``standing``: stored as a preference or instruction; ``dated``: 1 / 0.5 / 0 (``date``);
    ``times``: written at (epoch seconds); ``importance``; ``pair_z``: how alike each two
    records are, in standard deviations of the namespace's pairs (the diagonal is ignored);
    ``request``: the query is a request; ``windows``: the times the query counts from an
    event (``anchors.windows``); ``event``: the share of the words naming that event each
    record holds; ``past``: the query asks about the past (``past``); ``tells`` (with
    ``windows``): the record tells of another day than the one it was written on.
    """

    ids: Sequence[str]
    logits: np.ndarray
    dense: np.ndarray
    keyword: np.ndarray
    keyword_rank: np.ndarray
    question: np.ndarray
    standing: np.ndarray
    dated: np.ndarray
    times: np.ndarray
    importance: np.ndarray
    pair_z: np.ndarray
    request: bool
    windows: Sequence[Window] = ()
    event: np.ndarray | None = None
    past: bool = False
    tells: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class Weights:
    """One weight per feature (``FEATURES``), in logits per unit."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.values) != len(FEATURES):
            raise ValueError(f"{len(self.values)} weights for {len(FEATURES)} features")

    def of(self, name: str) -> float:
        return self.values[FEATURES.index(name)]

    def to_json(self, **about: object) -> str:
        return weights_json(FEATURES, weights=list(self.values), **about)


@lru_cache(maxsize=1)
def load_weights() -> Weights:
    raw = read_weights(WEIGHTS_FILE, FEATURES)
    if raw is None:
        raise ValueError(f"{WEIGHTS_FILE} is missing or was fitted for other features: refit "
                         "it (memstream bench fit-notes)")
    return Weights(tuple(float(v) for v in raw["weights"]))


#: the stage compares with one another the most relevant this many candidates
NOTES_PAIRS = 50


def pool(s: Searched) -> Pool:
    """What the stage reads of a search's candidates; the likeness of two records is
    measured against the namespace's pairs (``Null``)."""
    assert s.null is not None  # a store of notes is known by its null
    ids = [c.id for c in s.candidates]
    # how alike two records are matters among the most relevant (a follow-up of the best
    # match, the record a newer one supersedes): the vectors of the best NOTES_PAIRS are read
    paired = sorted(ids, key=lambda i: -s.calibrated[i])[:NOTES_PAIRS]
    vecs = s.reads.embeddings(paired)
    dim = s.null.rows.shape[1]
    have = [n for n, i in enumerate(ids) if i in vecs and vecs[i].shape[0] == dim]
    pair_z = np.full((len(ids), len(ids)), -np.inf)
    if have:
        mat = np.vstack([vecs[ids[n]] for n in have])
        pair_z[np.ix_(have, have)] = (mat @ mat.T - s.null.pair_mean) / s.null.pair_std
    dated = spans(s.text, s.now)
    counted = windows(s.text)
    texts, found = s.reads.known_texts, s.evidence
    return Pool(
        ids=ids, logits=np.array([s.calibrated[i] for i in ids], dtype=np.float64),
        dense=np.array([found[i].dense or 0.0 for i in ids], dtype=np.float64),
        keyword=np.array([found[i].keyword for i in ids], dtype=np.float64),
        keyword_rank=np.array([s.kw_rank.get(i, 0) for i in ids], dtype=np.float64),
        question=np.array([is_question(texts.get(i, "")) for i in ids]),
        standing=np.array([s.kinds.get(i) in STANDING_KINDS for i in ids]),
        dated=np.array([of_date(dated, c.created_at, texts.get(c.id, "")) for c in s.candidates],
                       dtype=np.float64),
        times=np.array([c.created_at for c in s.candidates], dtype=np.float64),
        importance=np.array([c.importance for c in s.candidates], dtype=np.float64),
        pair_z=pair_z, request=not is_question(s.text), windows=counted,
        event=event_share(counted, [texts.get(i, "") for i in ids]), past=s.asks_past,
        tells=np.array([_tells_another_day(texts.get(c.id, ""), c.created_at)
                        for c in s.candidates]) if counted else None)


def _tells_another_day(text: str, written: float) -> bool:
    """Whether ``text`` tells of a day other than the one it was written on ("her birthday is
    on 9 October"; not "tonight")."""
    today = math.floor(written / _DAY) * _DAY
    return any(day != today for day in told(text, written))


def features(pool: Pool, weights: Weights) -> tuple[np.ndarray, int]:
    """The candidates' features (n x ``FEATURES``) and the row of the best candidate, whose
    follow-ups the ``follows_best`` features describe (see the module docstring)."""
    x, best, _, _ = _features(pool, weights)
    return x, best


def _features(pool: Pool, weights: Weights) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """``features``, which records each anchor's window holds (``_counted``) and, for each
    record, the row of the most alike newer record that makes it ``superseded`` (-1: none)."""
    n = len(pool.ids)
    pz = np.array(pool.pair_z, dtype=np.float64, copy=True)
    np.fill_diagonal(pz, -np.inf)
    later = _after(pool)
    nearest = np.zeros((n, n), dtype=bool)  # nearest[a, b]: b is among a's LINK_RANK nearest
    if n > 1:
        k = min(LINK_RANK, n - 1)
        top = np.argpartition(-pz, k - 1, axis=1)[:, :k]
        nearest[np.arange(n)[:, None], top] = True
    follows = nearest & (pz >= LINK_Z) & later  # follows[a, b]: b follows up a
    dense = pool.dense
    alike = later & (pz >= SAME_Z) & (dense[None, :] >= dense[:, None] - SUPERSEDED_GAP)
    superseded = alike.any(axis=1)
    newer = np.where(superseded, np.argmax(np.where(alike, pz, -np.inf), axis=1), -1) if n \
        else np.zeros(0, dtype=np.int64)
    request = pool.standing.astype(np.float64) * float(pool.request)
    rank = pool.keyword_rank.astype(np.float64)
    own = np.column_stack([np.where(rank > 0, 1.0 / np.maximum(rank, 1.0), 0.0),
                           pool.question.astype(np.float64), request,
                           pool.dated.astype(np.float64)]) if n else np.zeros((0, 4))
    # the best candidates on their own signals: what a follow-up would update (none when even
    # the best is not likely to answer: following a record the query hardly matches means
    # nothing), and the events a window of time is counted from
    first = pool.logits + own @ np.array(weights.values[:_OWN])
    best = int(np.argmax(first)) if n else 0
    held = _counted(pool, first)
    anchored = held.any(axis=0).astype(np.float64)
    own = np.column_stack([own, anchored]) if n else np.zeros((0, 5))
    # a query that counts time from an event asks about that time, not about what came last:
    # when a record stands in its window, nothing is lifted for following up the best; nor
    # for a query about the past (``past``: what was replaced or dropped, not what came next)
    plausible = (n > 0 and pool.logits[best] >= FOLLOW_FROM and not anchored.any()
                 and not pool.past)
    fb = follows[best].astype(np.float64) * plausible if n else np.zeros(0)
    days = np.clip(pool.times - pool.times[best], 0.0, None) / _DAY if n else np.zeros(0)
    x = np.column_stack([
        own,
        superseded.astype(np.float64),
        follows.any(axis=0).astype(np.float64),
        fb,
        fb * np.where(np.isfinite(pz[best]), pz[best], 0.0) if n else fb,
        fb * (dense[best] - dense) if n else fb,
        fb * np.log1p(days),
        fb * pool.keyword,
    ]) if n else np.zeros((0, len(FEATURES)))
    return x, best, held, newer


def _counted(pool: Pool, first: np.ndarray) -> np.ndarray:
    """held[a, r]: record ``r`` was written in a window of ``pool.windows`` counted from the
    anchor ``a``, one of the ``ANCHORS`` best candidates by ``first`` or the one holding most
    of the event's words (not from itself; rows of records that are no anchor are all false).
    A record some anchor's window holds is ``anchored``."""
    n = len(pool.ids)
    out = np.zeros((n, n), dtype=bool)
    if not pool.windows or not n:
        return out
    weekdays = (np.floor(pool.times / _DAY) + 3) % 7  # 1970-01-01 was a Thursday; Monday 0
    anchors = {int(a) for a in np.argsort(-first, kind="stable")[:ANCHORS]}
    if pool.event is not None and len(pool.event) and pool.event.max() >= EVENT_SHARE:
        anchors.add(int(np.lexsort((-first, -pool.event))[0]))  # most words, then best
    for a in anchors:
        days = (pool.times - pool.times[a]) / _DAY
        out[a] = np.logical_or.reduce([w.holds(days, weekdays) for w in pool.windows])
        out[a, a] = False
    return out


def _after_event(pool: Pool, held: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """What lifts the records of a window above the anchor it is counted from (``held``:
    ``_counted``), in logits (0 for the rest): a query that counts time from an event asks
    what happened then, not about the event, so the records written in the window counted
    from a record go above it, by ``AFTER_EVENT`` for the best of them, in their own order
    (``logits``: each candidate's with the additions of the features)."""
    lift = np.zeros(len(pool.ids))
    for a in np.flatnonzero(held.any(axis=1)):
        if pool.tells is not None and pool.tells[a]:
            continue  # it tells of another day than its own: its time is not the event's
        inside = held[a]
        shift = logits[a] + AFTER_EVENT - logits[inside].max()
        if shift > 0:
            lift[inside] = np.maximum(lift[inside], shift)
    return lift


def _after(pool: Pool) -> np.ndarray:
    """after[a, b]: b came after a: written later, or at the same second and weightier (more
    important), or at the same second a statement where a is a question."""
    t, imp, q = pool.times, pool.importance, pool.question.astype(bool)
    same = np.abs(t[None, :] - t[:, None]) <= 1.0
    after: np.ndarray = (t[None, :] > t[:, None] + 1.0) | (
        same & ((imp[None, :] > imp[:, None]) | (q[:, None] & ~q[None, :])))
    return after


class Added(NamedTuple):
    """What the stage adds to each candidate (``adjustments``): ``named``, its additions in
    logits by label; ``x``, the features (for fitting: ``bench.fit_notes``); ``best``, the row
    of the best candidate; ``newer``, the id of the newer record that makes it "superseded"
    (the most alike; "" for none)."""

    named: list[dict[str, float]]
    x: np.ndarray
    best: int
    newer: list[str]


def adjustments(pool: Pool, weights: Weights | None = None) -> Added:
    """Per candidate, its named additions in logits (the five ``follows_best`` features are
    one addition, "follows up the best match"; zero additions are left out), and what
    ``Added`` holds besides."""
    w = weights or load_weights()
    x, best, held, newer = _features(pool, w)
    parts = x * np.array(w.values)
    grouped = np.column_stack([parts[:, :_FIRST_FOLLOWS_BEST],
                               parts[:, _FIRST_FOLLOWS_BEST:].sum(axis=1)])
    out: list[dict[str, float]] = [{} for _ in range(len(x))]
    for row, col in zip(*np.nonzero(np.abs(grouped) >= 1e-4), strict=True):
        out[row][_GROUP_LABELS[col]] = round(float(grouped[row, col]), 4)
    lift = _after_event(pool, held, pool.logits + parts.sum(axis=1))
    for row in np.flatnonzero(lift >= 1e-4):
        out[row][AFTER_EVENT_LABEL] = round(float(lift[row]), 4)
    return Added(out, x, best, [pool.ids[int(b)] if b >= 0 else "" for b in newer])


def total(named: Mapping[str, float]) -> float:
    return math.fsum(named.values())
