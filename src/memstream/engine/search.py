"""One search: candidates from the store's indexes, their evidence, then the orderings of
``retrieval``.

The store's indexes pick the candidates (the best ``candidates`` of the vector index and of the
keyword index); only those are read and scored, so the cost does not grow with the namespace.
Everything this module reads of the store it reads here; what it does with it is ``retrieval``'s
(pure functions over candidates and signals).
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .._types import Hit, Signals
from ..core.names import extract
from ..core.tracing import span
from ..filters import Selection, admits
from ..retrieval.anchors import event_share, windows
from ..retrieval.context import smooth
from ..retrieval.dates import spans
from ..retrieval.entities import (
    BRIDGE_PER_NAME,
    BRIDGE_SEEDS,
    bridge_names,
    placed,
    reached_from,
)
from ..retrieval.follow_ups import FOLLOW_TOP, follow_ups, newest_first
from ..retrieval.keywords import keyword_search, query_terms
from ..retrieval.notes import Pool as NotesPool
from ..retrieval.null import Null
from ..retrieval.pipeline import (
    Scored,
    SearchParams,
    lift_standing,
    lifted_order,
    notes_order,
    of_date,
    rank,
    reorder,
    two_rings,
)
from ..retrieval.relevance import CALIBRATION, Evidence, evidence, is_question, null_of
from ..retrieval.rerank import MIN_POOL, POOL, Pool, features, load_model, speaker_of
from ..retrieval.scoring import PAST_RECENCY, asks_about_now, convex_fusion, rrf_fusion
from ..retrieval.shown import shown
from ..retrieval.standing import STANDING_KINDS
from .changes import Verdicts
from .current import current_first
from .nulls import null_rows
from .reads import SearchReads

__all__ = ["run_search"]

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
_large: weakref.WeakKeyDictionary[SearchReads, dict[str, float]] = weakref.WeakKeyDictionary()


def _small(store: SearchReads, sel: Selection) -> bool:
    """Whether the search selects at most ``LARGE_STREAM`` records: the namespace is counted
    first (on a covering index; a large one is remembered for ``LARGE_TTL``), the selection
    only when it is narrower."""
    everything = Selection(sel.namespace, include_invalid=True)
    seen = _large.setdefault(store, {})
    if seen.get(sel.namespace, 0.0) < time.monotonic():
        if store.records.count(everything, limit=LARGE_STREAM) <= LARGE_STREAM:
            return True
        seen[sel.namespace] = time.monotonic() + LARGE_TTL
    narrower = dataclasses.replace(sel, include_invalid=True, as_of=None) != everything
    return narrower and store.records.count(sel, limit=LARGE_STREAM) <= LARGE_STREAM


def _long(store: SearchReads, sel: Selection, ids: Sequence[str], texts: dict[str, str]) -> bool:
    """Whether the records of ``ids`` are long at the median (their texts join ``texts``)."""
    texts.update(store.records.texts(sel.namespace, list(ids)))
    lengths = sorted(len(texts[i]) for i in ids if i in texts)
    return bool(lengths) and lengths[len(lengths) // 2] > LONG_TEXT


def run_search(store: SearchReads, sel: Selection, text: str,
               query_vector: np.ndarray | Callable[[], np.ndarray | None] | None, now: float,
               p: SearchParams, *,
               observe: Callable[[list[str], np.ndarray], object] | None = None,
               observe_notes: Callable[[list[str], np.ndarray, np.ndarray], object] | None
               = None, background: np.ndarray | None = None,
               verdicts: Verdicts | None = None) -> list[Hit]:
    """The top ``p.k`` hits for a query, best first, each with its explanation. Candidates are
    scored on their signals alone; only the winners are read in full. ``query_vector`` may be
    a callable that waits for a vector being computed elsewhere: it is called after the
    keyword search. ``observe`` is given the learned stage's candidates and their features
    (to fit its weights: bench.fit_rerank); ``observe_notes`` the notes stage's candidates,
    features and calibrated logits (bench.fit_notes). ``verdicts``: what the comparison of
    records found (engine.changes): junk and duplicates rank below real memories, probable
    successors before what they probably replace. Superseded records are candidates too: what
    they match leads to their current version (``current.current_first``)."""
    verdicts = verdicts or Verdicts()
    pool = max(p.candidates, p.k)
    # a record superseded since is looked for as well: its successor takes its place
    found_in = sel if sel.include_invalid or sel.as_of is not None else dataclasses.replace(
        sel, include_invalid=True)
    with span("memstream.keyword_search"):
        keyword = keyword_search(store.indexes, found_in, query_terms(text), pool)
    vector = query_vector() if callable(query_vector) else query_vector
    dense = store.indexes.vector_search(found_in, vector, pool) if vector is not None else []
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
    # the kind of store, decided once, says which orderings run (``explain.ordering``); the
    # stages that ran are named in order (``explain.stages``)
    kind = ("keyword" if vector is None else "long records" if long_records
            else "conversation" if conversation else "notes")
    ran = ["candidates"]
    if p.context > 0 and dense and kind == "conversation" and _small(store, sel):
        dense_ids, kw_ids, nb = _with_context(store, sel, vector, dense, keyword, cosine, p)
        ran.append("context")
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
                ran.append("learned")
    # calibrated relevance of the best candidates (the rest rank below them, in fused order):
    # of long records, as many as the two indexes proposed (no learned stage ordered them,
    # and one index alone may hold the evidence)
    window = sorted(fused, key=lambda i: (-fused[i], i))[: 2 * pool if long_records
                                                          else max(POOL, p.k)]
    calibrated, own, evid = _calibrate(store, sel, text, vector, window, texts, cosine,
                                        learned, null)
    if p.weights.rule == "relevance-first":
        ran.append("calibrated")
        candidates = store.records.signals(sel.namespace, list(calibrated))
        if not asks_about_now(text):  # a question over a long history: recency counts less
            p = dataclasses.replace(p, weights=dataclasses.replace(
                p.weights, recency=p.weights.recency * PAST_RECENCY))
        kinds = {r.id: r.kind for r in store.records.get(sel.namespace, list(calibrated))}
        # a store of separate notes (not a conversation, short records): the notes stage
        if kind == "notes" and null is not None:
            stage = _notes_pool(store, sel, text, now, candidates, calibrated, evid, kw_rank,
                                kinds, texts, null)
            ranked = notes_order(stage, candidates, calibrated, own, now, p, observe_notes)
            ran.append("notes")
            if p.entities:  # a store of notes: where following names wins (docs/entities.md)
                ranked = _via_entities(store, sel, text, vector, now, p, ranked, texts, cosine,
                                       null)
                ran.append("names")
        else:
            ranked = lifted_order(text, candidates, calibrated, own, kinds, now, p)
            ran.append("lifted")
            # follow-ups among short records that the learned stage did not order: in a
            # conversation the stage reads each turn's surroundings, and a later turn on the
            # same subject is not an update (LoCoMo dev recall_any@5 0.801 without them, 0.799
            # with)
            if null is not None and not long_records and not learned:
                ranked = _newest_first(store, sel, ranked, calibrated, null, texts)
                ran.append("follow-ups")
        ranked = current_first(store, sel, ranked, verdicts)
        top = lift_standing(ranked[: p.k], candidates, calibrated, own, kinds, texts, text,
                             now, p)
        ran += ["current", "standing"]
    else:
        candidates = store.records.signals(sel.namespace, ids)
        top = current_first(store, sel, rank(
            candidates, relevance=[fused.get(c.id, 0.0) for c in candidates], now=now, p=p,
            limit=3 * p.k), verdicts)[: p.k]
        ran += ["weighted", "current"]
    if vector is not None:  # exact cosine of keyword-only winners, for the explanation
        missing = [s.item.id for s in top if s.item.id not in cosine]
        for rid, emb in store.indexes.embeddings(sel.namespace, missing).items():
            if emb.shape == vector.shape:
                cosine[rid] = float(emb @ vector)
    records = {r.id: r for r in store.records.get(sel.namespace, [s.item.id for s in top])}
    top = [s for s in top if s.item.id in records]
    first = p.weights.rule == "relevance-first"  # a calibrated relevance: read with its place
    return [
        Hit(records[s.item.id], score, dataclasses.replace(
            s.explain, cosine=cosine.get(s.item.id), keyword=kw_score.get(s.item.id),
            vector_rank=vec_rank.get(s.item.id), keyword_rank=kw_rank.get(s.item.id),
            relevance=shown(s.explain.relevance, n) if first else s.explain.relevance,
            evidence=s.explain.relevance if first else None, ordering=kind,
            stages=tuple(ran)))
        for n, (s, score) in enumerate(zip(top, in_order([s.score for s in top]), strict=True))
    ]


def in_order(scores: Sequence[float]) -> list[float]:
    """The scores a list shows: a hit placed above hits that score higher (``explain``
    says why: ``lifted``, ``updates``, ``via``) shows the score of the place it took, so the
    list is always in the order of its scores."""
    out = list(scores)
    for n in range(len(out) - 2, -1, -1):
        out[n] = max(out[n], out[n + 1])
    return out


def _via_entities(store: SearchReads, sel: Selection, text: str, vector: np.ndarray | None,
                  now: float, p: SearchParams, ranked: list[Scored[Signals]],
                  texts: dict[str, str], cosine: dict[str, float], null: Null | None
                  ) -> list[Scored[Signals]]:
    """``ranked`` with the memories the best hits' specific names lead to placed after them
    (``retrieval.entities``), each naming the way in ``explain.via``; those the indexes did not
    propose are scored here on their own evidence."""
    seeds = [s.item.id for s in ranked[:BRIDGE_SEEDS]]
    if not seeds:
        return ranked
    with span("memstream.entities"):
        graph = store.graph
        names = bridge_names(seeds, graph.record_entities(sel.namespace, seeds),
                             {m.key for m in extract(text)})
        if not names:
            return ranked
        # each name's newest memories, one more than it leads to (the seed may be among them)
        reached, via = reached_from(names, graph.mentions(
            [e.id for ents in names.values() for e in ents], limit=BRIDGE_PER_NAME + 1))
        wanted = list(dict.fromkeys(r for rs in reached.values() for r in rs))
        visible = {r.id for r in store.records.get(sel.namespace, wanted) if admits(sel, r)}
        reached = {s: [r for r in rs if r in visible] for s, rs in reached.items()}
        by_id = {s.item.id: s for s in ranked}
        extra = [r for r in wanted if r in visible and r not in by_id]
        if extra:
            logits, own, _ = _calibrate(store, sel, text, vector, extra, texts, cosine, {}, null)
            signals = store.records.signals(sel.namespace, extra)
            for s in rank(signals, relevance=[logits[c.id] for c in signals], now=now, p=p,
                          limit=len(signals), own=[own[c.id] for c in signals]):
                by_id[s.item.id] = s
    shown = {rid: s.explain.raw_relevance for rid, s in by_id.items()}
    before = {s.item.id: n for n, s in enumerate(ranked)}
    out = []
    for n, rid in enumerate(placed([s.item.id for s in ranked], shown, reached)):
        hit = by_id[rid]
        moved = rid in via and n < before.get(rid, len(ranked))
        out.append(hit._replace(explain=dataclasses.replace(hit.explain, via=via[rid]))
                   if moved else hit)
    return out


#: the notes stage compares with one another the most relevant this many candidates
NOTES_PAIRS = 50


def _notes_pool(store: SearchReads, sel: Selection, text: str, now: float,
                candidates: Sequence[Signals], calibrated: Mapping[str, float],
                found: Mapping[str, Evidence], kw_rank: Mapping[str, int],
                kinds: Mapping[str, str], texts: Mapping[str, str], null: Null) -> NotesPool:
    """What the notes stage reads of the candidates (retrieval.notes.Pool); the likeness of
    two records is measured against the namespace's pairs (``Null``)."""
    ids = [c.id for c in candidates]
    # how alike two records are matters among the most relevant (a follow-up of the best
    # match, the record a newer one supersedes): the vectors of the best NOTES_PAIRS are read
    paired = sorted(ids, key=lambda i: -calibrated[i])[:NOTES_PAIRS]
    vecs = store.indexes.embeddings(sel.namespace, paired)
    dim = null.rows.shape[1]
    have = [n for n, i in enumerate(ids) if i in vecs and vecs[i].shape[0] == dim]
    pair_z = np.full((len(ids), len(ids)), -np.inf)
    if have:
        mat = np.vstack([vecs[ids[n]] for n in have])
        pair_z[np.ix_(have, have)] = (mat @ mat.T - null.pair_mean) / null.pair_std
    dated = spans(text, now)
    day = [of_date(dated, c.created_at) for c in candidates]
    counted = windows(text)
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
        pair_z=pair_z, request=not is_question(text), windows=counted,
        event=event_share(counted, [texts.get(i, "") for i in ids]))


def _calibrate(store: SearchReads, sel: Selection, text: str, vector: np.ndarray | None,
               window: Sequence[str], texts: dict[str, str], cosine: dict[str, float],
               learned: Mapping[str, float], null: Null | None
               ) -> tuple[dict[str, float], dict[str, float], dict[str, Evidence]]:
    """The calibrated relevance logit of each candidate of ``window`` (retrieval.relevance),
    the logit of its own evidence (the same where the learned stage did not run) and the
    evidence itself: reads the texts and cosines it lacks; the query's null from the
    namespace's (``Null``)."""
    missing = [i for i in window if i not in texts]
    if missing:
        texts.update(store.records.texts(sel.namespace, missing))
    if vector is not None:
        unknown = [i for i in window if i not in cosine]
        for rid, emb in store.indexes.embeddings(sel.namespace, unknown).items():
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


def _newest_first(store: SearchReads, sel: Selection, ranked: list[Scored[Signals]],
                  logits: Mapping[str, float], null: Null, texts: Mapping[str, str]
                  ) -> list[Scored[Signals]]:
    """``ranked`` with follow-ups first (``follow_ups``); each hit placed above a record it
    follows up names it in ``explain.updates``."""
    order = [s.item.id for s in ranked]
    times = {s.item.id: s.item.created_at for s in ranked}
    vecs = store.indexes.embeddings(sel.namespace, order[:FOLLOW_TOP])
    follow = follow_ups(order, vecs, logits, times, null, questions={
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


def gather(store: SearchReads, sel: Selection, vector: np.ndarray, fused: Mapping[str, float],
           cosine: dict[str, float], keyword: Mapping[str, float], vector_rank: Mapping[str, int],
           keyword_rank: Mapping[str, int], nb: dict[str, tuple[list[str], list[str]]]) -> Pool:
    """What the learned stage needs of the best ``POOL`` fused candidates: their texts, their
    neighbours (read when the context stage did not), everyone's times and cosines."""
    top = sorted(fused, key=lambda i: (-fused[i], i))[:POOL]
    missing = [i for i in top if i not in nb]
    if missing:
        nb.update(store.indexes.neighbours(sel, missing, before=2, after=1))
    around = {r for i in top if i in nb for r in (*nb[i][0], *nb[i][1])}
    known = sorted(set(top) | around)
    unknown = [i for i in known if i not in cosine]
    for rid, emb in store.indexes.embeddings(sel.namespace, unknown).items():
        if emb.shape == vector.shape:
            cosine[rid] = float(emb @ vector)
    records = store.records.get(sel.namespace, top)
    return Pool(
        ids=[r.id for r in records], texts={r.id: r.text for r in records},
        speakers={r.id: speaker_of(r.text, r.metadata) for r in records},
        times={s.id: s.created_at for s in store.records.signals(sel.namespace, known)},
        fused=fused, cosine=cosine, keyword=keyword, vector_rank=vector_rank,
        keyword_rank=keyword_rank, neighbours=nb)


def _with_context(store: SearchReads, sel: Selection, vector: np.ndarray | None,
                  dense: list[tuple[str, float]], keyword: list[tuple[str, float]],
                  cosine: dict[str, float], p: SearchParams
                  ) -> tuple[list[str], list[str], dict[str, tuple[list[str], list[str]]]]:
    """Both rankings after context smoothing (see retrieval.context), and the neighbours it
    read; ``cosine`` gains the cosines of the neighbours it had to read."""
    seeds = list(dict.fromkeys([i for i, _ in dense[: p.context]] +
                               [i for i, _ in keyword[: p.context]]))
    nb = two_rings(store.indexes.neighbours(sel, seeds, before=4, after=2))
    everyone = set(nb) | {n for prev, nxt in nb.values() for n in prev + nxt}
    if vector is not None:
        missing = [i for i in everyone if i not in cosine]
        for rid, emb in store.indexes.embeddings(sel.namespace, missing).items():
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
