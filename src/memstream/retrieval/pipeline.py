"""One search: candidates from the indexes, the three signals, normalisation, the score.

The store's indexes pick the candidates (the best ``candidates`` of the vector index and of the
keyword index); only those are scored here, so the cost does not grow with the namespace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._types import Explanation, Hit, Record
from ..errors import InvalidInput
from ..filters import Selection
from ..store.protocol import Store
from .keywords import query_terms
from .scoring import Weights, convex_fusion, minmax, recency, rrf_fusion

__all__ = ["FUSIONS", "SearchParams", "run_search"]

FUSIONS = ("rrf", "convex")


@dataclass(frozen=True, slots=True)
class SearchParams:
    """Everything a search needs besides the query. See ``memstream.config.Config``."""

    k: int = 10
    weights: Weights = field(default_factory=Weights)
    decay: float = 0.99
    fusion: str = "rrf"
    rrf_k: int = 60
    alpha: float = 0.5
    candidates: int = 100
    min_spread: float = 1e-3

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not 1 <= self.k <= 1000:
            raise InvalidInput(f"k must be an integer from 1 to 1000, got {self.k!r}")
        if not 0 < self.decay <= 1:
            raise InvalidInput(f"decay must be in (0, 1], got {self.decay!r}")
        if self.fusion not in FUSIONS:
            raise InvalidInput(f"unknown fusion {self.fusion!r}; use one of {FUSIONS}")
        if not 0 <= self.alpha <= 1:
            raise InvalidInput("alpha (the vector share in convex fusion) must be in [0, 1]")


def run_search(store: Store, sel: Selection, text: str, vector: np.ndarray | None, now: float,
               p: SearchParams) -> list[Hit]:
    """The top ``p.k`` hits for a query, best first, each with its explanation."""
    pool = max(p.candidates, p.k)
    keyword = store.keyword_search(sel, query_terms(text), pool)
    dense = store.vector_search(sel, vector, pool) if vector is not None else []
    ids = list(dict.fromkeys([i for i, _ in dense] + [i for i, _ in keyword]))
    if not ids:
        return []
    records = {r.id: r for r in store.get(sel.namespace, ids)}
    ids = [i for i in ids if i in records]
    kw_score = dict(keyword)
    kw_rank = {rid: n for n, (rid, _) in enumerate(keyword, start=1)}
    vec_rank = {rid: n for n, (rid, _) in enumerate(dense, start=1)}
    cosine = dict(dense)
    if vector is not None:  # exact cosine for keyword-only candidates, for the explanation
        missing = [i for i in ids if i not in cosine]
        for rid, emb in store.embeddings(sel.namespace, missing).items():
            if emb.shape == vector.shape:
                cosine[rid] = float(emb @ vector)
    if p.fusion == "rrf":
        fused = rrf_fusion([[i for i, _ in dense], [i for i, _ in keyword]], k=p.rrf_k)
    else:
        fused = convex_fusion(cosine, kw_score, alpha=p.alpha if dense else 0.0)
    return rank(
        [records[i] for i in ids], relevance=[fused.get(i, 0.0) for i in ids], now=now, p=p,
        details={i: (cosine.get(i), kw_score.get(i), vec_rank.get(i), kw_rank.get(i))
                 for i in ids},
    )


def rank(records: list[Record], *, relevance: list[float], now: float, p: SearchParams,
         details: dict[str, tuple[float | None, float | None, int | None, int | None]]
         | None = None) -> list[Hit]:
    """Score candidates whose raw relevance is known and return the best ``p.k``.

    Ties on the score break on raw relevance, then on the newer record, then on the id.
    """
    hours = [(now - r.last_accessed_at) / 3600.0 for r in records]
    raw_rec = [recency(h, p.decay) for h in hours]
    raw_imp = [r.importance for r in records]
    n_rec = minmax(raw_rec, p.min_spread)
    n_imp = minmax(raw_imp, p.min_spread)
    n_rel = minmax(relevance, p.min_spread)
    w = p.weights.as_tuple()
    details = details or {}
    hits = []
    for i, rec in enumerate(records):
        score = w[0] * n_rec[i] + w[1] * n_imp[i] + w[2] * n_rel[i]
        cos, kw, vr, kr = details.get(rec.id, (None, None, None, None))
        hits.append(Hit(rec, score, Explanation(
            recency=n_rec[i], importance=n_imp[i], relevance=n_rel[i], raw_recency=raw_rec[i],
            raw_importance=raw_imp[i], raw_relevance=relevance[i], weights=w,
            hours_since_access=hours[i], cosine=cos, keyword=kw, vector_rank=vr,
            keyword_rank=kr, fusion=p.fusion)))
    hits.sort(key=lambda h: (-h.score, -h.explain.raw_relevance, -h.record.created_at,
                             h.record.id))
    return hits[: p.k]
