"""The score of the three signals under weights that are not relevance-first (the paper's
min-max formula and the profiles like it, ``retrieval.pipeline.rank``): every candidate of
both rankings, by its fused score."""

from __future__ import annotations

from typing import ClassVar

from ...retrieval.pipeline import rank
from . import Search

__all__ = ["Weighted"]


class Weighted:
    name: ClassVar[str] = "weighted"

    def run(self, search: Search) -> bool:
        s = search
        s.candidates = s.reads.signals(list(dict.fromkeys(s.dense_ids + s.kw_ids)))
        s.ranked = rank(s.candidates, relevance=[s.fused.get(c.id, 0.0) for c in s.candidates],
                        now=s.now, p=s.p, limit=3 * s.p.k)
        return True
