"""One search: what it reads of the store (``Gather``, the one place), its candidates, the kind
of store they come from, then the stages of ``engine.stages`` in order over one pool.

The store's indexes pick the candidates (the best ``candidates`` of the vector index and of the
keyword index); only those are read and scored, so the cost does not grow with the namespace.
The stages read the store only through ``Gather``; the orderings themselves are
``retrieval``'s (pure functions over candidates and signals).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from .._types import Entity, Hit, Record, Signals
from ..core.tracing import span
from ..filters import Selection
from ..retrieval.dates import without_days
from ..retrieval.keywords import keyword_search, query_terms
from ..retrieval.past import Past
from ..retrieval.pipeline import SearchParams
from ..retrieval.reads import Neighbours
from ..retrieval.shown import shown
from .changes import Verdicts
from .nulls import null_rows, small
from .reads import SearchReads
from .stages import Search, fuse, plan

__all__ = ["Gather", "in_order", "run_search"]

#: Records longer than this (characters, the median of the best candidates) carry their own
#: context: long messages and whole exchanges skip context smoothing, the learned stage (which
#: model short conversational turns) and the sharing of relevance between near-duplicates
#: (which is about short statements of fact: long records on one subject all look alike).
LONG_TEXT = 600


class Gather:
    """Everything one search reads of the store (``retrieval.reads.Reads``): the records of its
    namespace by id, their texts, vectors, cosines to the query, stream neighbours and names.
    Texts, cosines and records read once are kept for the rest of the search."""

    def __init__(self, store: SearchReads, sel: Selection, vector: np.ndarray | None) -> None:
        self.store, self.sel, self.vector = store, sel, vector
        #: the query's vector without the people it names (``engine.queries.unnamed``), and
        #: the cosines to it read so far
        self.plain: np.ndarray | None = None
        self.plain_cosine: dict[str, float] = {}
        self.cosine: dict[str, float] = {}
        self.known_texts: dict[str, str] = {}
        self._records: dict[str, Record] = {}

    def _found_in(self) -> Selection:
        """Where candidates are looked for: the selection with the records superseded since
        (or by the time ``as_of`` asks about) as well."""
        sel = self.sel
        if sel.include_invalid:
            return sel
        if sel.as_of is not None:  # what was written by then, replaced since or not
            return dataclasses.replace(sel, as_of=None, include_invalid=True, until=min(
                sel.as_of, sel.until if sel.until is not None else sel.as_of))
        return dataclasses.replace(sel, include_invalid=True)

    def candidates(self, words: str, pool: int,
                   vector: np.ndarray | Callable[[], np.ndarray | None] | None,
                   plain: np.ndarray | Callable[[], np.ndarray | None] | None = None
                   ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """The best ``pool`` of each index, (id, score) best first: dense, then keyword (of the
        query's ``words``: ``Search.words``). A
        record superseded since (or by the time ``as_of`` asks about) is looked for as well
        (its successor takes its place: the current stage). ``vector`` may be a callable that
        waits for a vector being computed elsewhere: it is called after the keyword search.
        With ``plain`` (the query without the people it names), the dense candidates are those
        of both readings (``plain_cosines``)."""
        found_in = self._found_in()
        keyword = self.keyword(words, pool, found_in)
        self.vector = vector() if callable(vector) else vector
        dense = self.store.indexes.vector_search(found_in, self.vector, pool) \
            if self.vector is not None else []
        self.cosine.update(dense)
        plain = plain() if callable(plain) else plain
        if self.vector is None or plain is None or plain.shape != self.vector.shape:
            return dense, keyword
        self.plain = plain
        # the records either reading finds, in the order of the better of their two cosines
        # (a cosine to the query, read for a record found by the other only, comes later)
        found = self.store.indexes.vector_search(found_in, self.plain, pool)
        self.plain_cosine.update(found)
        best = dict(dense)
        for rid, cos in found:
            best[rid] = max(cos, best.get(rid, cos))
        return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:pool], keyword

    def keyword(self, words: str, pool: int, found_in: Selection | None = None
                ) -> list[tuple[str, float]]:
        """The best ``pool`` records for ``words`` in the keyword index, (id, score) best
        first, superseded ones included (as ``candidates`` finds them)."""
        if found_in is None:
            found_in = self._found_in()
        with span("memstream.keyword_search"):
            return keyword_search(self.store.indexes, found_in, query_terms(words), pool)

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        missing = [i for i in ids if i not in self.known_texts]
        if missing:
            self.known_texts.update(self.store.records.texts(self.sel.namespace, missing))
        return self.known_texts

    def cosines(self, ids: Sequence[str]) -> dict[str, float]:
        if self.vector is not None:
            self._read_cosines([i for i in ids if i not in self.cosine])
        return self.cosine

    def plain_cosines(self, ids: Sequence[str]) -> dict[str, float]:
        """The cosines of ``ids`` to the query without the people it names (empty when the
        search does not read it)."""
        if self.plain is None:
            return {}
        self._read_cosines([i for i in ids if i not in self.plain_cosine])
        return self.plain_cosine

    def _read_cosines(self, ids: Sequence[str]) -> None:
        """The cosines of ``ids`` to the query and, when the search reads it, to ``plain``,
        from one read of their vectors."""
        for rid, emb in self.embeddings(ids).items():
            for vector, known in ((self.vector, self.cosine), (self.plain, self.plain_cosine)):
                if vector is not None and emb.shape == vector.shape:
                    known[rid] = float(emb @ vector)

    def embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self.store.indexes.embeddings(self.sel.namespace, list(ids))

    def neighbours(self, ids: Sequence[str], *, before: int, after: int) -> Neighbours:
        return self.store.indexes.neighbours(self.sel, list(ids), before=before, after=after)

    def records(self, ids: Sequence[str]) -> list[Record]:
        missing = [i for i in dict.fromkeys(ids) if i not in self._records]
        if missing:
            self._records.update((r.id, r) for r in self.store.records.get(
                self.sel.namespace, missing))
        return [self._records[i] for i in ids if i in self._records]

    def signals(self, ids: Sequence[str]) -> list[Signals]:
        return self.store.records.signals(self.sel.namespace, list(ids))

    def small(self) -> bool:
        return small(self.store, self.sel)

    def record_entities(self, ids: Sequence[str]) -> dict[str, list[Entity]]:
        return self.store.graph.record_entities(self.sel.namespace, list(ids))

    def mentions(self, entity_ids: Sequence[int], *, limit: int) -> dict[int, list[str]]:
        return self.store.graph.mentions(entity_ids, limit=limit)

    def long(self, ids: Sequence[str]) -> bool:
        """Whether the records of ``ids`` are long at the median."""
        texts = self.texts(ids)
        lengths = sorted(len(texts[i]) for i in ids if i in texts)
        return bool(lengths) and lengths[len(lengths) // 2] > LONG_TEXT


def run_search(store: SearchReads, sel: Selection, text: str,
               query_vector: np.ndarray | Callable[[], np.ndarray | None] | None, now: float,
               p: SearchParams, *,
               observe: Callable[[list[str], np.ndarray], object] | None = None,
               observe_notes: Callable[[list[str], np.ndarray, np.ndarray], object] | None
               = None, background: np.ndarray | None = None,
               verdicts: Verdicts | None = None, past: Past | None = None,
               plain_vector: np.ndarray | Callable[[], np.ndarray | None] | None = None
               ) -> list[Hit]:
    """The top ``p.k`` hits for a query, best first, each with its explanation. Candidates are
    scored on their signals alone; only the winners are read in full. ``query_vector`` may be
    a callable that waits for a vector being computed elsewhere. ``observe`` is given the
    learned stage's candidates and their features (to fit its weights: bench.fit_rerank);
    ``observe_notes`` the notes stage's candidates, features and calibrated logits
    (bench.fit_notes). ``verdicts``: what the comparison of records found (engine.changes):
    junk and duplicates rank below real memories, probable successors before what they
    probably replace. Superseded records are candidates too: what they match leads to their
    current version (``stages.current``), or with ``past`` (``retrieval.past``) and a query
    that asks about the past, to both. ``plain_vector``: the query's without the people it
    names (``engine.queries.unnamed``): a record's relevance is read from the better of its
    two readings, each against the namespace's null (``stages.calibrated``)."""
    reads = Gather(store, sel, None)
    pool = max(p.candidates, p.k)
    dense, keyword = reads.candidates(text, pool, query_vector, plain_vector)
    if not dense and not keyword:
        return []
    vector = reads.vector
    long_records = reads.long([i for i, _ in (dense or keyword)[:10]])
    null = null_rows(store, sel, background) if vector is not None else None
    # the kind of store, decided once, says which stages run (``explain.ordering``; fitting
    # the learned stage, ``observe``, treats the stream as the conversation it is)
    conversation = null is None or null.conversation or observe is not None
    kind = ("keyword" if vector is None else "long records" if long_records
            else "conversation" if conversation else "notes")
    words = _words(text, now) if kind == "notes" else text
    if words != text:  # the day's words left out: what they match is looked for again
        keyword = reads.keyword(words, pool)
    s = Search(text=text, words=words, sel=sel, vector=vector, now=now, p=p, reads=reads,
               verdicts=verdicts or Verdicts(), dense=dense, keyword=keyword,
               kw_score=dict(keyword), observe=observe, observe_notes=observe_notes, past=past)
    fuse(s, [i for i, _ in dense], [i for i, _ in keyword])
    s.long_records, s.null, s.kind = long_records, null, kind
    ran = ["candidates"] + [stage.name for stage in plan(s.kind, p) if stage.run(s)]
    top = s.ranked[: p.k]
    cosine = reads.cosines([h.item.id for h in top])  # exact cosines of keyword-only winners
    records = {r.id: r for r in reads.records([h.item.id for h in top])}
    top = [h for h in top if h.item.id in records]
    first = p.weights.rule == "relevance-first"  # a calibrated relevance: read with its place
    return [
        Hit(records[h.item.id], score, dataclasses.replace(
            h.explain, cosine=cosine.get(h.item.id), keyword=s.kw_score.get(h.item.id),
            vector_rank=s.vec_rank.get(h.item.id), keyword_rank=s.kw_rank.get(h.item.id),
            relevance=shown(h.explain.relevance, n) if first else h.explain.relevance,
            evidence=h.explain.relevance if first else None, ordering=s.kind,
            stages=tuple(ran)))
        for n, (h, score) in enumerate(zip(top, in_order([h.score for h in top]), strict=True))
    ]


def _words(text: str, now: float) -> str:
    """What the query's words match in a store of notes (``Search.words``): the query without
    the days it names (``dates.without_days``), as the notes stage finds a record of a day by
    its date, written then or telling of it; the whole query when nothing else would be left
    to match. Other stores keep the words: a conversation's ordering reads only the day a
    turn was said, and a turn that tells of the day ("my interview on September 20") is found
    by them."""
    words = without_days(text, now)
    return words if words == text or query_terms(words) else text


def in_order(scores: Sequence[float]) -> list[float]:
    """The scores a list shows: a hit placed above hits that score higher (``explain``
    says why: ``lifted``, ``updates``, ``via``) shows the score of the place it took, so the
    list is always in the order of its scores."""
    out = list(scores)
    for n in range(len(out) - 2, -1, -1):
        out[n] = max(out[n], out[n + 1])
    return out
