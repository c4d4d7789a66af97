"""The calibrated relevance of the best candidates (``retrieval.relevance``): the chance, as a
logit, that each answers the query, from its evidence measured against the namespace's null.
The candidates outside the window rank below them all."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from ...retrieval.relevance import CALIBRATION, Evidence, evidence, null_of
from ...retrieval.rerank import POOL
from ...retrieval.scoring import PAST_RECENCY, asks_about_now
from . import Search

__all__ = ["Calibrated", "calibrate"]


class Calibrated:
    name: ClassVar[str] = "calibrated"

    def run(self, search: Search) -> bool:
        s, p = search, search.p
        # of long records, as many as the two indexes proposed (no learned stage ordered them,
        # and one index alone may hold the evidence)
        size = 2 * max(p.candidates, p.k) if s.long_records else max(POOL, p.k)
        window = sorted(s.fused, key=lambda i: (-s.fused[i], i))[:size]
        s.calibrated, s.own, s.evidence = calibrate(s, window, s.learned)
        s.candidates = s.reads.signals(list(s.calibrated))
        if not asks_about_now(s.text):  # a question over a long history: recency counts less
            s.p = dataclasses.replace(p, weights=dataclasses.replace(
                p.weights, recency=p.weights.recency * PAST_RECENCY))
        s.kinds = {r.id: r.kind for r in s.reads.records(list(s.calibrated))}
        return True


def calibrate(s: Search, window: Sequence[str], learned: Mapping[str, float]
              ) -> tuple[dict[str, float], dict[str, float], dict[str, Evidence]]:
    """The calibrated relevance logit of each candidate of ``window``, the logit of its own
    evidence (the same where the learned stage did not run) and the evidence itself; the
    query's null from the namespace's (``Null``)."""
    texts = s.reads.texts(window)
    vector, null = s.vector, s.null
    cosine = s.reads.cosines(window) if vector is not None else s.reads.cosine
    if vector is not None and null is not None and null.rows.shape[1:] == vector.shape:
        spread = null_of(null.rows, vector)
    else:  # no null for these vectors: the candidates' own spread
        known = sorted(cosine[i] for i in window if i in cosine) or [0.0]
        spread = (known[len(known) // 2], max(1e-3, float(np.std(known))))
    found = evidence(s.text, {i: texts[i] for i in window if i in texts}, cosine, learned,
                     null=spread)
    return ({i: CALIBRATION.logit(e) for i, e in found.items()},
            {i: CALIBRATION.absolute(e) for i, e in found.items()}, found)
