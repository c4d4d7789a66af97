"""The learned stage of a conversation (``retrieval.rerank``): a linear model over each
candidate's surroundings reorders the best fused candidates. Its pool holds the turns around
them, which the context stage read."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ...core.tracing import span
from ...retrieval.pipeline import reorder
from ...retrieval.rerank import MIN_POOL, features, load_model, pool
from . import Search

__all__ = ["Learned"]


class Learned:
    name: ClassVar[str] = "learned"

    def run(self, search: Search) -> bool:
        s = search
        model = load_model() if s.p.rerank else None
        if s.nb is None or s.vector is None or len(s.fused) < MIN_POOL or (
                model is None and s.observe is None):
            return False
        with span("memstream.rerank", candidates=len(s.fused)):
            found = pool(s)
            x = features(s.text, found)
            if s.observe is not None:
                s.observe(list(found.ids), x)
            if model is None:
                return False
            s.learned = dict(zip(found.ids, (float(v) for v in model.score(x)), strict=True))
            s.fused = reorder(s.fused, found.ids, np.array(list(s.learned.values())))
        return True
