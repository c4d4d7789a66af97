"""Context smoothing (``retrieval.context``): in a conversation small enough to read in order,
each candidate's dense and keyword scores blend with its neighbours' turns."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ...retrieval.context import smooth
from ...retrieval.pipeline import two_rings
from . import Search, fuse

__all__ = ["Context"]


class Context:
    name: ClassVar[str] = "context"

    def run(self, search: Search) -> bool:
        s, p = search, search.p
        if p.context <= 0 or not s.dense or not s.reads.small():
            return False
        seeds = list(dict.fromkeys([i for i, _ in s.dense[: p.context]] +
                                   [i for i, _ in s.keyword[: p.context]]))
        nb = two_rings(s.reads.neighbours(seeds, before=4, after=2))
        everyone = set(nb) | {n for prev, nxt in nb.values() for n in prev + nxt}
        cosine = s.reads.cosines(list(everyone))
        centre = float(np.mean([c for _, c in s.dense]))
        d_smooth = smooth({i: c - centre for i, c in cosine.items()}, nb)
        k_smooth = smooth(dict(s.keyword), nb)
        rest_d = [i for i, _ in s.dense if i not in d_smooth]  # outside the smoothed window
        rest_k = [i for i, _ in s.keyword if i not in k_smooth]
        d_ids = sorted(d_smooth, key=lambda i: (-d_smooth[i], i))
        k_ids = [i for i in sorted(k_smooth, key=lambda i: (-k_smooth[i], i)) if k_smooth[i] > 0]
        pool = max(p.candidates, p.k)
        s.nb = nb
        fuse(s, (d_ids + rest_d)[:pool], (k_ids + rest_k)[:pool])
        return True
