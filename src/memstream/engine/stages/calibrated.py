"""The calibrated relevance of the best candidates (``retrieval.relevance``): the chance, as a
logit, that each answers the query, from its evidence measured against the namespace's null.
The candidates outside the window rank below them all."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from ...retrieval.relevance import CALIBRATION, Evidence, better_reading, evidence, null_of
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
        plain = s.reads.plain
        if plain is not None:  # a note that names nobody: the better of two readings
            cosine = better_reading({i: cosine[i] for i in window if i in cosine},
                                    _naming_nobody(s, window), spread,
                                    null_of(null.rows, plain))
    else:  # no null for these vectors: the candidates' own spread
        known = sorted(cosine[i] for i in window if i in cosine) or [0.0]
        spread = (known[len(known) // 2], max(1e-3, float(np.std(known))))
    found = evidence(s.words, {i: texts[i] for i in window if i in texts}, cosine, learned,
                     null=spread)
    return ({i: CALIBRATION.logit(e) for i, e in found.items()},
            {i: CALIBRATION.absolute(e) for i, e in found.items()}, found)


def _naming_nobody(s: Search, window: Sequence[str]) -> dict[str, float]:
    """The cosines to the query without the people it names (``reads.plain``) of the records
    of ``window`` that name no person: a note that names someone is about whom it names (a
    note on Theo's bedtime does not answer for Ivy's); one that names nobody may be about the
    person asked about ("Weigh-in: 164.8 lb" in a coach's notes on Renee)."""
    named = s.reads.record_entities(window)
    nobody = [i for i in window if not any(e.kind == "person" and e.confirmed
                                           for e in named.get(i, ()))]
    plain = s.reads.plain_cosines(nobody)
    return {i: plain[i] for i in nobody if i in plain}
